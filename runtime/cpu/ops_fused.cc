// CPU registry entries of the fuse pass's ops (see registry.h, kernels/cpu/fused.h and
// compiler/ir/op_table_fused.cc for their semantics).
#include <string>
#include <vector>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/fused.h"
#include "runtime/core/fused_program_attrs.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

Status RunFusedMatMul(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(const FusedMatMulParams p, FusedMatMulOperands(a));
  const TensorArg &bias = a.in(2), &aux = a.in(3), &out1 = a.out(1);
  return cpu::FusedMatMul(p, a.in(0).data, a.in(1).data, bias.present ? bias.data : nullptr,
                          aux.present ? aux.data : nullptr, a.out(0).data,
                          out1.present ? out1.data : nullptr);
}

Status RunFusedConv(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(const FusedConvArgs f, FusedConvOperands(a));
  const TensorArg& z = a.in(3);
  const cpu::internal::ConvLayouts layouts{a.in(0).channels_last, a.out(0).channels_last,
                                           z.present && z.channels_last};
  if (layouts.any()) {
    return cpu::FusedConvChannelsLast(f.conv, layouts, f.relu, a.in(0).data, a.in(1).data,
                                      a.in_data(2), a.in_data(3), a.out(0).data);
  }
  return cpu::FusedConv(f.conv, f.relu, a.in(0).data, a.in(1).data, a.in_data(2), a.in_data(3),
                        a.out(0).data);
}

Status RunFusedElementwise(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(const FusedProgram program, FusedProgramOf(a));
  const void* inputs[kFusedMaxInputs];
  int64_t counts[kFusedMaxInputs];
  for (int j = 0; j < a.num_inputs(); ++j) {
    inputs[j] = a.in(j).data;
    counts[j] = a.in(j).count();
  }
  const TensorArg& y = a.out(0);
  return cpu::FusedElementwise(program, a.in(0).dtype, inputs, counts, y.dtype, y.count(), y.data);
}

}  // namespace

std::vector<CpuKernelEntry> FusedKernels() {
  return {
      {"a8.FusedMatMul", kFloatTypes, 0, RunFusedMatMul,
       "B, bias, aux and outputs: same type as A"},
      {"a8.FusedConv", kFloatTypes, 0, RunFusedConv,
       "Conv's kernel; f32 direct convolution: epilogue in its store"},
      {"a8.FusedElementwise", kFloatTypes, 0, RunFusedElementwise, "output: any float type"},
  };
}

}  // namespace a8

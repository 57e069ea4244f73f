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
  const TensorArg &x = a.in(0), &w = a.in(1), &y = a.out(0);
  cpu::FusedMatMulParams p;
  p.dtype = x.dtype;
  const std::string epilogue = a.Str("epilogue", "");
  p.epilogue = ParseFusedEpilogue(epilogue.c_str(), &p.bgrad);
  if (p.epilogue < 0) return InvalidInput("a8.FusedMatMul: unknown epilogue '{}'", epilogue);
  const std::string approx = a.Str("approximate", "none");
  if (approx != "none" && approx != "tanh") {
    return InvalidInput("a8.FusedMatMul: approximate: unknown value '{}'", approx);
  }
  p.tanh_form = approx == "tanh";
  p.trans_b = a.Int("trans_b", 0) != 0;
  if (x.dims.size() < 2 || w.dims.size() != 2 || y.dims.empty()) {
    return InvalidInput("a8.FusedMatMul: A must have rank >= 2, B rank 2");
  }
  p.k = x.dims.back();
  p.m = x.count() / (p.k > 0 ? p.k : 1);
  if (p.k == 0) p.m = y.count() / (y.dims.back() > 0 ? y.dims.back() : 1);
  p.n = p.trans_b ? w.dims[0] : w.dims[1];
  const int64_t wk = p.trans_b ? w.dims[1] : w.dims[0];
  if (wk != p.k || y.count() != p.m * p.n || w.dtype != x.dtype || y.dtype != x.dtype) {
    return InvalidInput("a8.FusedMatMul: operand types do not agree");
  }
  const TensorArg &bias = a.in(2), &aux = a.in(3), &out1 = a.out(1);
  if ((bias.present && (bias.count() != p.n || bias.dtype != x.dtype)) ||
      (aux.present && (aux.count() != y.count() || aux.dtype != x.dtype)) ||
      (out1.present && (out1.count() != (p.bgrad ? p.n : y.count()) || out1.dtype != x.dtype))) {
    return InvalidInput("a8.FusedMatMul: bias, aux or output 1 has the wrong type");
  }
  return cpu::FusedMatMul(p, x.data, w.data, bias.present ? bias.data : nullptr,
                          aux.present ? aux.data : nullptr, y.data,
                          out1.present ? out1.data : nullptr);
}

Status RunFusedConv(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(const FusedConvArgs f, FusedConvOperands(a));
  const TensorArg& z = a.in(3);
  return cpu::FusedConv(f.conv, f.relu, a.in(0).data, a.in(1).data,
                        a.has_in(2) ? a.in(2).data : nullptr, z.present ? z.data : nullptr,
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

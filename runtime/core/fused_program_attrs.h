// a8.FusedElementwise's operands as both backends read them: the program decoded from the
// kernel's attributes (`program`, `constants`; kernels/common/fused_elementwise.h) and the
// inputs' check. One copy for the CPU entry (runtime/cpu/ops_fused.cc) and the CUDA one
// (runtime/device/ops_elementwise.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/fused_elementwise.h"
#include "runtime/core/kernel_args.h"

namespace a8 {

// The program, checked for the kernel's inputs; every input present and of input 0's dtype.
inline StatusOr<FusedProgram> FusedProgramOf(const KernelArgs& a) {
  const std::vector<int64_t> code = a.Ints("program");
  std::vector<float> consts;
  if (const plan::Attribute* c = a.attr("constants"); c != nullptr && c->has_floats()) {
    consts.assign(c->floats().values().begin(), c->floats().values().end());
  }
  FusedProgram program;
  if (!DecodeFusedProgram(code.data(), static_cast<int64_t>(code.size()), consts.data(),
                          static_cast<int64_t>(consts.size()), a.num_inputs(), &program)) {
    return InvalidInput("a8.FusedElementwise: invalid program for {} inputs", a.num_inputs());
  }
  for (int j = 0; j < a.num_inputs(); ++j) {
    const TensorArg& x = a.in(j);
    if (!x.present || x.dtype != a.in(0).dtype) {
      return InvalidInput("a8.FusedElementwise: input {} is absent or of another dtype", j);
    }
  }
  return program;
}

}  // namespace a8

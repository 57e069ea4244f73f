// The fast mode's BatchNormalization and its training-mode gradient (kernel_mode.h), for NC...
// activations in f32, f16 or bf16 with f32 scale, bias and statistics.
//
// The reference is the shared device body (kernels/device/nn_norm_impl.h), bit-identical to
// cuda-emu: its sums run one element at a time in a fixed order, which the compiler cannot
// vectorise, and with f16/bf16 data the CPU backend handed it whole f32 copies of the operands
// (runtime/cpu/widened_operands.h). In the ResNet-style CNN's bf16 step those sums were 22% of
// the time and the copies another 15%. Here each channel is one task: its planes are read in
// their own dtype (f16/bf16 blocks converted to float in vector registers, fast_convert.h), the
// sums run in 16 float lanes, each output is rounded once. Statistics as the reference: the mean,
// then the biased variance from the squared deviations (two passes), all in f32; the running
// update momentum * running + (1 - momentum) * batch statistic. Results agree with the reference
// within the dtype's rounding, not bit for bit (another summation order).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

struct BatchNormFastArgs {
  DType dtype = DType::kF32;  // of x and y
  int64_t batch = 1, channels = 1, spatial = 1;
  float epsilon = 1e-5f, momentum = 0.9f;
  bool training = true;  // batch statistics (and the running update); else the running ones
  const void* x = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
  const float* mean = nullptr;  // running statistics in
  const float* var = nullptr;
  void* y = nullptr;
  float* running_mean_out = nullptr;  // training: may be null, may alias `mean`
  float* running_var_out = nullptr;   // training: may be null, may alias `var`
};
Status BatchNormFast(const BatchNormFastArgs& a);

// The training-mode backward (batch statistics recomputed from x, as the reference does):
// dscale = sum(dy * xhat), dbias = sum(dy), dx = scale * inv_std * (dy - mean(dy) - xhat *
// mean(dy * xhat)). Each output may be null.
struct BatchNormGradFastArgs {
  DType dtype = DType::kF32;  // of dy, x and dx
  int64_t batch = 1, channels = 1, spatial = 1;
  float epsilon = 1e-5f;
  const void* dy = nullptr;
  const void* x = nullptr;
  const float* scale = nullptr;
  void* dx = nullptr;
  float* dscale = nullptr;
  float* dbias = nullptr;
};
Status BatchNormGradFast(const BatchNormGradFastArgs& a);

}  // namespace a8::cpu

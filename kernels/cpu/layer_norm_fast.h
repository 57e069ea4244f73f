// The fast mode's LayerNormalization and its gradient (kernel_mode.h), over rows of `inner`
// elements in f32, f16 or bf16 with f32 scale, bias and statistics.
//
// The reference is the shared device body (kernels/device/nn_layer_norm_impl.h), bit-identical
// to cuda-emu: its sums run in 32 interleaved lanes a row in the device's order, and with f16/bf16
// data the CPU backend handed it whole f32 copies of the operands (runtime/cpu/widened_operands.h:
// on the fp16 BERT-base-width encoder the LayerNorms and their gradients took twice their f32
// time). Here each row is read in its own dtype (f16/bf16 converted to float in vector registers
// into one row of scratch, fast_convert.h), its sums run in 16 float lanes, and each output is
// rounded once. The statistics are the reference's: the mean, then the biased variance from the
// squared deviations (two passes), inv_std_dev = 1 / sqrt(var + epsilon), all in f32. The
// gradient: with g = dy * scale and xhat = (x - mean) * inv_std_dev, dx = inv_std_dev * (g -
// mean(g) - xhat * mean(g * xhat)), dscale = sum over rows of dy * xhat, dbias = sum of dy, those
// two summed per fixed block of rows and the blocks added in order (the same bits on any thread
// count). Results agree with the reference within the dtype's rounding, not bit for bit.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

struct LayerNormFastArgs {
  DType dtype = DType::kF32;  // of x and y
  int64_t outer = 1, inner = 1;
  float epsilon = 1e-5f;
  const void* x = nullptr;
  const float* scale = nullptr;  // inner elements
  const float* bias = nullptr;   // inner elements, may be null
  void* y = nullptr;
  float* mean = nullptr;  // outer elements each, may be null
  float* inv_std_dev = nullptr;
};
Status LayerNormFast(const LayerNormFastArgs& a);

struct LayerNormGradFastArgs {
  DType dtype = DType::kF32;  // of dy, x and dx
  int64_t outer = 1, inner = 1;
  float epsilon = 1e-5f;
  const void* dy = nullptr;
  const void* x = nullptr;
  const float* scale = nullptr;        // inner elements
  const float* mean = nullptr;         // the forward's statistics, both or neither (recomputed)
  const float* inv_std_dev = nullptr;
  void* dx = nullptr;  // each output may be null
  float* dscale = nullptr;
  float* dbias = nullptr;
};
Status LayerNormGradFast(const LayerNormGradFastArgs& a);

}  // namespace a8::cpu

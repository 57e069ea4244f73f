// TF32: FP32's sign, 8 exponent bits and the top 10 of its 23 mantissa bits, the operand format
// of the tensor cores' FP32 GEMMs and convolutions (cuBLASLt CUBLAS_COMPUTE_32F_FAST_TF32, cuDNN
// tensor-op math on f32). A plan lists, per kernel, the inputs that its GEMMs or convolutions
// may read as TF32 (plan.proto Kernel.tf32_inputs, set by lower in --precision=tf32); the CPU
// backend and cuda-emu round exactly those operands with RoundToTf32 and then multiply in FP32,
// so the two compute the same bits, and what the GPU computes up to the order of summation.
#pragma once

#include <cstdint>

#include "kernels/common/float16.h"

namespace a8 {

// float -> the nearest TF32 value (kept in a float: its low 13 mantissa bits are zero), ties to
// even, as cuBLAS rounds FP32 operands for TF32 tensor cores. Overflow past TF32's largest finite
// value gives Inf; Inf stays Inf and NaN stays a (quiet) NaN of the same sign.
A8_HD float RoundToTf32(float f) {
  const uint32_t x = FloatToBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return BitsToFloat(x | 0x00400000u);  // NaN
  const uint32_t lsb = (x >> 13) & 1u;                 // the last kept bit, for ties to even
  return BitsToFloat((x + 0x0fffu + lsb) & ~0x1fffu);  // carries into the exponent as it must
}

}  // namespace a8

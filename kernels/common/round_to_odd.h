// Rounding to float "to odd": toward zero, with the last bit set when inexact, so that a
// following rounding to f16/bf16 equals one correct rounding of the wider value. One definition
// for the CPU's Cast (kernels/cpu/cast_elem.h) and the device kernels that store a double or a
// 64-bit integer as f16/bf16 (the device Cast, the normalizations' parameters and statistics),
// so the CPU, cuda-emu and the GPU agree to the bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/float16.h"  // A8_HD, FloatToBits

namespace a8 {

// double -> float rounded to odd.
A8_HD float RoundToOddFloat(double d) {
  if (d != d) return static_cast<float>(d);
  float f = static_cast<float>(d);
  // nextafter(f, 0): one step down in magnitude (Inf becomes the largest finite float); f is
  // not zero here, as |f| > |d| >= 0.
  if (::fabs(static_cast<double>(f)) > ::fabs(d)) f = BitsToFloat(FloatToBits(f) - 1u);
  if (static_cast<double>(f) != d) f = BitsToFloat(FloatToBits(f) | 1u);
  return f;
}

// uint64 -> float with round to odd, exactly (a sticky bit below the 24 kept bits).
A8_HD float RoundToOddFloat(uint64_t u) {
  int shift = 0;
  while ((u >> shift) >= (uint64_t{1} << 24)) ++shift;
  uint64_t m = u >> shift;
  if (shift > 0 && (u & ((uint64_t{1} << shift) - 1)) != 0) m |= 1;
  return ::ldexpf(static_cast<float>(m), shift);
}

// int64 -> float with round to odd: the magnitude's, signed.
A8_HD float RoundToOddFloat(int64_t v) {
  const float f = RoundToOddFloat(v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
  return v < 0 ? -f : f;
}

}  // namespace a8

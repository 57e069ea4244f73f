// IEEE binary16 and bfloat16 conversions with round-to-nearest-even, one body for host and
// device. The CPU reference backend, the constant folder and the CUDA kernels all use these, so
// FP16 rounding is bit-for-bit the same everywhere.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define A8_HD __host__ __device__ __forceinline__
#else
#define A8_HD inline
#endif

namespace a8 {

// The bits of `from` as a `To` of the same size (std::bit_cast, which nvcc's C++17 lacks); on
// the GPU the copy of a register is a move.
template <typename To, typename From>
A8_HD To ReinterpretBits(From from) {
  static_assert(sizeof(To) == sizeof(From), "ReinterpretBits between types of different sizes");
  To to;
  std::memcpy(&to, &from, sizeof(to));
  return to;
}
A8_HD uint32_t FloatToBits(float f) { return ReinterpretBits<uint32_t>(f); }
A8_HD float BitsToFloat(uint32_t u) { return ReinterpretBits<float>(u); }

// float -> binary16 bits, round to nearest, ties to even; overflow gives Inf, NaN stays NaN.
// On a GPU the conversion instruction (cvt.rn.f16.f32: the same rounding, subnormals and
// overflow) does the work; only NaN, which it makes the canonical 0x7FFF, takes the arithmetic
// below, so the bits are the host's for every input (tests/gpu cast tests check them).
A8_HD uint16_t FloatToHalfBits(float f) {
  uint32_t x = FloatToBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
#if defined(__CUDA_ARCH__)
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520
  if (abs < 0x38800000u) {  // result is subnormal or zero in half
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half of min subnormal
    uint32_t mant = (abs & 0x007fffffu) | 0x00800000u;
    int shift = 113 - static_cast<int>(abs >> 23) + 13;  // 14..24
    uint32_t result = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t result = ((abs - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
#endif
}

// binary16 bits -> float, exact; a NaN keeps its sign and payload. On a GPU the conversion
// instruction (cvt.f32.f16, exact) takes every finite input.
A8_HD float HalfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return BitsToFloat(sign | 0x7f800000u | (mant << 13));
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  if (exp == 0) {
    if (mant == 0) return BitsToFloat(sign);
    // Subnormal: value = mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return BitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
#endif
}

// float -> bfloat16 bits, round to nearest, ties to even; NaN stays a quiet NaN.
A8_HD uint16_t FloatToBFloat16Bits(float f) {
  uint32_t x = FloatToBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

A8_HD float BFloat16BitsToFloat(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

}  // namespace a8

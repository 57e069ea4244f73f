// IEEE half references for the tests, independent of kernels/common/float16.h: the compiler's own
// `_Float16` conversions where it has the type (GCC; clang 15+ on x86-64), otherwise the same
// roundings written with <cmath> (`Portable*`: clang 14, the sanitizer and fuzz build's compiler,
// has no `_Float16` on x86-64 without AVX512-FP16): round to nearest even, gradual underflow,
// overflow to infinity, NaN kept as a quiet NaN with its sign. float16_test checks the portable
// pair against `_Float16` where both exist.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace a8::half_ref {

inline uint16_t PortableDoubleToHalfBits(double d) {
  const uint16_t sign = std::signbit(d) ? 0x8000u : 0u;
  const double a = std::fabs(d);
  if (std::isnan(d)) return sign | 0x7e00u;
  if (a < std::ldexp(1.0, -14)) {  // subnormal (or zero): units of 2^-24, exact scaling
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int e;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // 11 significant bits; a carry to 2^11 moves into the exponent field by itself.
  const double mant = std::nearbyint(std::ldexp(m, 11));  // [1024, 2048]
  const double bits = std::ldexp(e + 13, 10) + mant;      // (e - 1 + 15 - 1) << 10, + mant
  return sign | (bits >= 0x7c00 ? 0x7c00u : static_cast<uint16_t>(bits));
}

inline double PortableHalfBitsToDouble(uint16_t bits) {
  const double sign = bits & 0x8000u ? -1.0 : 1.0;
  const int exp = bits >> 10 & 0x1f, frac = bits & 0x3ff;
  if (exp == 0x1f) return frac ? std::copysign(std::nan(""), sign) : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(frac, -24);
  return sign * std::ldexp(1024 + frac, exp - 25);
}

inline uint16_t ReferenceDoubleToHalfBits(double d) {
#ifdef __FLT16_MAX__
  _Float16 h = static_cast<_Float16>(d);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
#else
  return PortableDoubleToHalfBits(d);
#endif
}

inline double ReferenceHalfBitsToDouble(uint16_t bits) {
#ifdef __FLT16_MAX__
  _Float16 h;
  std::memcpy(&h, &bits, sizeof(bits));
  return static_cast<double>(h);
#else
  return PortableHalfBitsToDouble(bits);
#endif
}

}  // namespace a8::half_ref

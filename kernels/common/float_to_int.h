// Float -> integer conversion as a Cast does it, for the CPU's Cast (kernels/cpu/cast_elem.h) and
// every device kernel that stores a float result in an integer (the device Cast, integer
// ReduceL2/ReduceLogSumExp, OneHot's depth): one definition, so the CPU, cuda-emu and the GPU
// agree to the bit, out of range included.
//
// The rules are x86's (cvttsd2si, what the compilers emit on the host): truncation toward zero;
// NaN and values out of range give the type's minimum; u64 takes [2^63, 2^64) exactly and
// everything else through i64 (so -1.5 gives 2^64 - 1, as a cast through int64 would); u32
// through i64; the narrower types through i32 (then wrapped).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/float16.h"  // A8_HD

namespace a8 {

A8_HD int32_t TruncToI32(double x) {
  if (!(x > -2147483649.0 && x < 2147483648.0)) return INT32_MIN;
  return static_cast<int32_t>(x);
}

A8_HD int64_t TruncToI64(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(x);
}

A8_HD uint64_t TruncToU64(double x) {
  if (x >= 9223372036854775808.0 && x < 18446744073709551616.0) return static_cast<uint64_t>(x);
  return static_cast<uint64_t>(TruncToI64(x));
}

// A double stored in integer type T (not bool) as Cast stores it.
template <typename T>
A8_HD T TruncDoubleTo(double x) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "an integer type");
  if constexpr (std::is_same_v<T, int64_t>) {
    return TruncToI64(x);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return TruncToU64(x);
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return static_cast<T>(TruncToI64(x));
  } else {
    return static_cast<T>(TruncToI32(x));
  }
}

}  // namespace a8

// Vector conversions between f16/bf16 storage and float for the fast kernels.
//
// The reference kernels convert one element at a time through kernels/common/float16.h (the body
// the CUDA kernels share). The fast kernels instead convert short blocks in vector registers:
// F16C / AVX-512F's vcvtph2ps and vcvtps2ph for f16, integer shifts and a round-to-nearest-even
// add for bf16, chosen once at run time (__builtin_cpu_supports), with the scalar body as the
// fallback and for the tails. Every finite value, infinity and subnormal converts to the same bits
// as the scalar body (both round to nearest, ties to even; bf16 is the scalar body's arithmetic in
// lanes). Only NaN payloads may differ for f16 (vcvtps2ph keeps the top payload bits; the scalar
// body writes the canonical quiet NaN): both stay NaN.
//
// `ForEachF32Block` is the shape every fast f16/bf16 kernel takes: the caller's range is walked
// in blocks of kF32Block elements, each converted into a float buffer on the stack (L1, not a
// widened copy of the tensor), computed on in float, and rounded once into the output.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/dtype.h"

namespace a8::cpu {

// The instruction set the conversions run on here: "avx512f", "f16c+avx2" or "scalar".
const char* FastConvertIsa();

void HalfToFloat(const Half* x, float* y, int64_t n);
void FloatToHalf(const float* x, Half* y, int64_t n);
void BFloat16ToFloat(const BFloat16* x, float* y, int64_t n);
void FloatToBFloat16(const float* x, BFloat16* y, int64_t n);

// Elements of float storage type T (float, Half or BFloat16) to float and back.
template <typename T>
inline void ToF32(const T* x, float* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (x != y) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
  } else if constexpr (std::is_same_v<T, Half>) {
    HalfToFloat(x, y, n);
  } else {
    static_assert(std::is_same_v<T, BFloat16>);
    BFloat16ToFloat(x, y, n);
  }
}
template <typename T>
inline void FromF32(const float* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (x != y) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
  } else if constexpr (std::is_same_v<T, Half>) {
    FloatToHalf(x, y, n);
  } else {
    static_assert(std::is_same_v<T, BFloat16>);
    FloatToBFloat16(x, y, n);
  }
}

// `n` elements of f16/bf16 `dtype` at `x` into floats at `y`, on the calling thread.
void HalfTypeToF32(DType dtype, const void* x, float* y, int64_t n);

// `n` elements of f16/bf16 `dtype` at `x` as floats, converted over the pool (parallel.h): for
// kernels whose f32 fast path (oneDNN, the direct convolution) has no low-precision twin on this
// CPU, which then run it on exact float copies and round the output once (NarrowFromF32).
std::vector<float> WidenToF32(DType dtype, const void* x, int64_t n);
void NarrowFromF32(DType dtype, const float* x, int64_t n, void* y);

// Whether T is a 16-bit float storage type (the types the block kernels exist for).
template <typename T>
inline constexpr bool kIsHalfElem = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Calls f(T{}) for the storage type T of an f32, f16 or bf16 `dtype` (float, Half or BFloat16:
// the types the fast kernels take) and returns true; returns false for any other dtype.
template <typename F>
bool VisitF32OrHalfType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32:
      f(float{});
      return true;
    case DType::kF16:
      f(Half{});
      return true;
    case DType::kBF16:
      f(BFloat16{});
      return true;
    default:
      return false;
  }
}

// Elements a block of the fast f16/bf16 kernels converts at once: a few KiB of floats per operand
// stay in L1, and the float loop over them is long enough to vectorise well.
inline constexpr int64_t kF32Block = 512;

// Calls body(begin, len) for consecutive blocks of at most kF32Block elements of [b, e).
template <typename F>
inline void ForEachF32Block(int64_t b, int64_t e, F&& body) {
  for (int64_t i = b; i < e; i += kF32Block) body(i, std::min(kF32Block, e - i));
}

}  // namespace a8::cpu

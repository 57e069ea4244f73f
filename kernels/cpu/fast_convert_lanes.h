// Eight lanes of f16/bf16 <-> float in AVX2 registers: the conversions fast_convert.h's F16C+AVX2
// level runs on, for kernels that convert inside their own loops (gemm_packed.cc's packing and
// output tiles) instead of through a buffer; and the 8x8 float transpose the converters into
// blocked layouts (blocked_convert.cc) and the GEMM's packing share. The same bits as
// fast_convert.h's functions: f16 by F16C's vcvtph2ps / vcvtps2ph (round to nearest, ties to even),
// bf16 by the scalar body's arithmetic (kernels/common/float16.h) in lanes. Callers must run on a
// CPU with AVX2 and F16C.
#pragma once

#include <immintrin.h>

namespace a8::cpu::lanes {

// Whether this CPU has AVX2 and F16C, which the functions below need (checked once; defined in
// fast_convert.cc).
bool CpuHasAvx2F16c();

[[gnu::always_inline]] inline __attribute__((target("avx2,f16c"))) __m256 HalfToFloat8(__m128i h) {
  return _mm256_cvtph_ps(h);
}

[[gnu::always_inline]] inline __attribute__((target("avx2,f16c"))) __m128i FloatToHalf8(__m256 v) {
  return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
}

[[gnu::always_inline]] inline __attribute__((target("avx2"))) __m256 BFloat16ToFloat8(__m128i h) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Round to nearest, ties to even; a NaN keeps its sign and top payload bits, made quiet.
[[gnu::always_inline]] inline __attribute__((target("avx2"))) __m128i FloatToBFloat168(__m256 f) {
  const __m256i v = _mm256_castps_si256(f);
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(v, 16), one);
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(v, _mm256_add_epi32(bias, lsb)), 16);
  // Signed compare is right here: |v| and inf are both below 2^31.
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(v, abs_mask), inf);
  const __m256i nan_bits = _mm256_or_si256(_mm256_srli_epi32(v, 16), quiet);
  const __m256i r = _mm256_blendv_epi8(rounded, nan_bits, nan);
  // Every lane is below 2^16, so the unsigned saturating pack is exact; packus works within
  // 128-bit halves, so the 64-bit quarters are put back in order.
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}

// An 8x8 transpose of floats in AVX registers: r[i] lane j <-> r[j] lane i.
[[gnu::always_inline]] inline __attribute__((target("avx2"))) void Transpose8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
  for (int i = 0; i < 8; ++i) r[i] = t[i];
}

}  // namespace a8::cpu::lanes

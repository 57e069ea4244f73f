#include "kernels/cpu/blocked_convert.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/fast_convert.h"

// GCC 12's intrinsics build their "undefined" vectors as `__m512 __Y = __Y`, which
// -Wmaybe-uninitialized reports wherever they are inlined (as in fast_convert.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace a8::cpu::internal {
namespace {

// One block of channels [c0, c0 + block) of sample n, kBlockedTile pixels at a time: each
// channel's run of pixels converted into tile[channel] (contiguous), then written interleaved.
template <typename T, int64_t B>
void ToBlockedBlock(const T* x, const BlockedLayout& l, int64_t n, int64_t cb, float* y) {
  alignas(64) float tile[B][kBlockedTile];
  const int64_t c0 = cb * B, cn = std::min<int64_t>(B, l.c - c0);
  const T* src = x + (n * l.c + c0) * l.p;
  float* dst = y + n * l.sn + cb * l.sc;
  for (int64_t p0 = 0; p0 < l.p; p0 += kBlockedTile) {
    const int64_t len = std::min(kBlockedTile, l.p - p0);
    for (int64_t c = 0; c < cn; ++c) ToF32(src + c * l.p + p0, tile[c], len);
    for (int64_t c = cn; c < B; ++c) std::fill(tile[c], tile[c] + len, 0.0f);
    float* out = dst + p0 * B;
    for (int64_t q = 0; q < len; ++q) {
      for (int64_t c = 0; c < B; ++c) out[q * B + c] = tile[c][q];
    }
  }
}

template <typename T, int64_t B>
void FromBlockedBlock(const float* x, const BlockedLayout& l, int64_t n, int64_t cb, T* y) {
  alignas(64) float tile[B][kBlockedTile];
  const int64_t c0 = cb * B, cn = std::min<int64_t>(B, l.c - c0);
  const float* src = x + n * l.sn + cb * l.sc;
  T* dst = y + (n * l.c + c0) * l.p;
  for (int64_t p0 = 0; p0 < l.p; p0 += kBlockedTile) {
    const int64_t len = std::min(kBlockedTile, l.p - p0);
    const float* in = src + p0 * B;
    for (int64_t q = 0; q < len; ++q) {
      for (int64_t c = 0; c < B; ++c) tile[c][q] = in[q * B + c];
    }
    for (int64_t c = 0; c < cn; ++c) FromF32(tile[c], dst + c * l.p + p0, len);
  }
}

// f16 with 16-channel blocks on AVX-512F (the level fast_convert.h runs on), 16 pixels at a
// time: 16 channels' values widened into 16 registers, transposed in registers (Transpose16),
// stored as 16 whole pixels of the blocked buffer; back, the reverse, rounded in a register.
// Tails (fewer than 16 pixels) through a 16-element stack buffer.
__attribute__((target("avx512f"))) inline void Transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int h = 0; h < 16; h += 8) {
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

__attribute__((target("avx512f,f16c"))) void ToBlocked16Avx512(const Half* x,
                                                               const BlockedLayout& l, float* y) {
  const int64_t blocks = (l.c + 15) / 16;
  for (int64_t n = 0; n < l.n; ++n) {
    for (int64_t cb = 0; cb < blocks; ++cb) {
      const int64_t cn = std::min<int64_t>(16, l.c - cb * 16);
      const Half* src = x + (n * l.c + cb * 16) * l.p;
      float* dst = y + n * l.sn + cb * l.sc;
      for (int64_t q0 = 0; q0 < l.p; q0 += 16) {
        const int64_t len = std::min<int64_t>(16, l.p - q0);
        __m512 r[16];
        for (int64_t c = 0; c < 16; ++c) {
          r[c] = _mm512_setzero_ps();
          if (c < cn && len == 16) {
            r[c] = _mm512_cvtph_ps(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + c * l.p + q0)));
          } else if (c < cn) {
            alignas(32) Half tail[16] = {};
            std::memcpy(tail, src + c * l.p + q0, static_cast<size_t>(len) * sizeof(Half));
            r[c] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(tail)));
          }
        }
        Transpose16(r);
        for (int64_t q = 0; q < len; ++q) _mm512_storeu_ps(dst + (q0 + q) * 16, r[q]);
      }
    }
  }
}

__attribute__((target("avx512f,f16c"))) void FromBlocked16Avx512(const float* x,
                                                                 const BlockedLayout& l, Half* y) {
  const int64_t blocks = (l.c + 15) / 16;
  for (int64_t n = 0; n < l.n; ++n) {
    for (int64_t cb = 0; cb < blocks; ++cb) {
      const int64_t cn = std::min<int64_t>(16, l.c - cb * 16);
      const float* src = x + n * l.sn + cb * l.sc;
      Half* dst = y + (n * l.c + cb * 16) * l.p;
      for (int64_t q0 = 0; q0 < l.p; q0 += 16) {
        const int64_t len = std::min<int64_t>(16, l.p - q0);
        __m512 r[16];
        for (int64_t q = 0; q < 16; ++q) {
          r[q] = q < len ? _mm512_loadu_ps(src + (q0 + q) * 16) : _mm512_setzero_ps();
        }
        Transpose16(r);
        for (int64_t c = 0; c < cn; ++c) {
          const __m256i h = _mm512_cvtps_ph(r[c], _MM_FROUND_TO_NEAREST_INT);
          if (len == 16) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c * l.p + q0), h);
          } else {
            alignas(32) Half tail[16];
            _mm256_store_si256(reinterpret_cast<__m256i*>(tail), h);
            std::memcpy(dst + c * l.p + q0, tail, static_cast<size_t>(len) * sizeof(Half));
          }
        }
      }
    }
  }
}

bool UseAvx512(const BlockedLayout& l) {
  return l.block == 16 && std::strcmp(FastConvertIsa(), "avx512f") == 0;
}

template <typename T>
void ToBlocked(const T* x, const BlockedLayout& l, float* y) {
  if constexpr (std::is_same_v<T, Half>) {
    if (UseAvx512(l)) return ToBlocked16Avx512(x, l, y);
  }
  const int64_t blocks = (l.c + l.block - 1) / l.block;
  for (int64_t n = 0; n < l.n; ++n) {
    for (int64_t cb = 0; cb < blocks; ++cb) {
      if (l.block == 16) {
        ToBlockedBlock<T, 16>(x, l, n, cb, y);
      } else if (l.block == 8) {
        ToBlockedBlock<T, 8>(x, l, n, cb, y);
      } else {
        ToF32(x + (n * l.c + cb) * l.p, y + n * l.sn + cb * l.sc, l.p);
      }
    }
  }
}

template <typename T>
void FromBlocked(const float* x, const BlockedLayout& l, T* y) {
  if constexpr (std::is_same_v<T, Half>) {
    if (UseAvx512(l)) return FromBlocked16Avx512(x, l, y);
  }
  const int64_t blocks = (l.c + l.block - 1) / l.block;
  for (int64_t n = 0; n < l.n; ++n) {
    for (int64_t cb = 0; cb < blocks; ++cb) {
      if (l.block == 16) {
        FromBlockedBlock<T, 16>(x, l, n, cb, y);
      } else if (l.block == 8) {
        FromBlockedBlock<T, 8>(x, l, n, cb, y);
      } else {
        FromF32(x + n * l.sn + cb * l.sc, y + (n * l.c + cb) * l.p, l.p);
      }
    }
  }
}

}  // namespace

bool BlockedLayoutSupported(const BlockedLayout& l) {
  if (l.n < 0 || l.c < 1 || l.p < 1) return false;
  if (l.block == 1) return l.sp == 1 && l.sc >= l.p && l.sn >= l.c * l.sc;
  return (l.block == 8 || l.block == 16) && l.sp == l.block && l.sc >= l.p * l.block &&
         l.sn >= (l.c + l.block - 1) / l.block * l.sc;
}

void HalfToBlocked(DType dtype, const void* x, const BlockedLayout& l, float* y) {
  if (dtype == DType::kF16) {
    ToBlocked(static_cast<const Half*>(x), l, y);
  } else {
    ToBlocked(static_cast<const BFloat16*>(x), l, y);
  }
}

void BlockedToHalf(DType dtype, const float* x, const BlockedLayout& l, void* y) {
  if (dtype == DType::kF16) {
    FromBlocked(x, l, static_cast<Half*>(y));
  } else {
    FromBlocked(x, l, static_cast<BFloat16*>(y));
  }
}

}  // namespace a8::cpu::internal

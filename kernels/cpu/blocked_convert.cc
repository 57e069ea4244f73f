#include "kernels/cpu/blocked_convert.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/fast_convert_lanes.h"

// GCC 12's intrinsics build their "undefined" vectors as `__m512 __Y = __Y`, which
// -Wmaybe-uninitialized reports wherever they are inlined (as in fast_convert.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace a8::cpu::internal {
namespace {

// The channels are walked in groups of up to 16 that are contiguous in the f32 buffer: group g
// holds channels [16 g, 16 g + lanes) at Base(g) + pixel * sp (8 for nChw8c). `lanes` counts
// the padding channels of a blocked layout (written 0), `real` only the channels that exist.
struct Group {
  int64_t base, lanes, real;
};

int64_t GroupWidth(const BlockedLayout& l) { return l.block == 8 ? 8 : 16; }

Group GroupOf(const BlockedLayout& l, int64_t g) {
  const int64_t width = GroupWidth(l), c0 = g * width;
  const int64_t padded = (l.c + l.block - 1) / l.block * l.block;
  return Group{(c0 / l.block) * l.sc + c0 % l.block, std::min(width, padded - c0),
               std::max<int64_t>(0, std::min(width, l.c - c0))};
}

int64_t Groups(const BlockedLayout& l) {
  const int64_t padded = (l.c + l.block - 1) / l.block * l.block;
  return (padded + GroupWidth(l) - 1) / GroupWidth(l);
}

// The tile's 8 channel rows, pixels [0, len), written interleaved (pixel q's 8 channels at
// out + q * sp); and back. AVX2: 8 pixels at a time through Transpose8, where the scalar loop
// moved one float at a time (the interleave was 7% of the example CNN's fp16 step on an AVX2
// machine). The tile rows hold kBlockedTile floats, so reading or writing past `len` stays in
// them.
__attribute__((target("avx2"))) void InterleaveTile8(const float (*tile)[kBlockedTile], int64_t len,
                                                     float* out, int64_t sp) {
  for (int64_t q0 = 0; q0 < len; q0 += 8) {
    __m256 r[8];
    for (int c = 0; c < 8; ++c) r[c] = _mm256_load_ps(tile[c] + q0);
    lanes::Transpose8(r);
    const int64_t m = std::min<int64_t>(8, len - q0);
    for (int64_t q = 0; q < m; ++q) _mm256_storeu_ps(out + (q0 + q) * sp, r[q]);
  }
}
__attribute__((target("avx2"))) void DeinterleaveTile8(const float* in, int64_t sp, int64_t len,
                                                       float (*tile)[kBlockedTile]) {
  for (int64_t q0 = 0; q0 < len; q0 += 8) {
    __m256 r[8];
    const int64_t m = std::min<int64_t>(8, len - q0);
    for (int64_t q = 0; q < 8; ++q)
      r[q] = q < m ? _mm256_loadu_ps(in + (q0 + q) * sp) : _mm256_setzero_ps();
    lanes::Transpose8(r);
    for (int c = 0; c < 8; ++c) _mm256_store_ps(tile[c] + q0, r[c]);
  }
}

// Groups of 8 (nChw8c) interleave in AVX2 registers wherever the conversions run vectorised
// (the conversion level under test decides, so the scalar level keeps the portable loop).
bool UseAvx2Interleave(const Group& k) {
  return k.lanes == 8 && std::strcmp(FastConvertIsa(), "scalar") != 0;
}

// Portable: each channel's run of up to kBlockedTile pixels converted into tile[channel] on the
// stack (fast_convert.h's levels), then written interleaved.
template <typename T>
void ToBlockedGroup(const T* x, const BlockedLayout& l, int64_t n, int64_t g, float* y) {
  alignas(64) float tile[kMaxBlock][kBlockedTile];
  const Group k = GroupOf(l, g);
  const T* src = x + (n * l.c + g * GroupWidth(l)) * l.p;
  float* dst = y + n * l.sn + k.base;
  const bool avx2 = UseAvx2Interleave(k);
  for (int64_t p0 = 0; p0 < l.p; p0 += kBlockedTile) {
    const int64_t len = std::min(kBlockedTile, l.p - p0);
    for (int64_t c = 0; c < k.real; ++c) ToF32(src + c * l.p + p0, tile[c], len);
    for (int64_t c = k.real; c < k.lanes; ++c) std::fill(tile[c], tile[c] + len, 0.0f);
    if (avx2) {
      InterleaveTile8(tile, len, dst + p0 * l.sp, l.sp);
      continue;
    }
    for (int64_t q = 0; q < len; ++q) {
      float* out = dst + (p0 + q) * l.sp;
      for (int64_t c = 0; c < k.lanes; ++c) out[c] = tile[c][q];
    }
  }
}

template <typename T>
void FromBlockedGroup(const float* x, const BlockedLayout& l, int64_t n, int64_t g, T* y) {
  alignas(64) float tile[kMaxBlock][kBlockedTile];
  const Group k = GroupOf(l, g);
  const float* src = x + n * l.sn + k.base;
  T* dst = y + (n * l.c + g * GroupWidth(l)) * l.p;
  const bool avx2 = UseAvx2Interleave(k);
  for (int64_t p0 = 0; p0 < l.p; p0 += kBlockedTile) {
    const int64_t len = std::min(kBlockedTile, l.p - p0);
    if (avx2) {
      DeinterleaveTile8(src + p0 * l.sp, l.sp, len, tile);
    } else {
      for (int64_t q = 0; q < len; ++q) {
        const float* in = src + (p0 + q) * l.sp;
        for (int64_t c = 0; c < k.real; ++c) tile[c][q] = in[c];
      }
    }
    for (int64_t c = 0; c < k.real; ++c) FromF32(tile[c], dst + c * l.p + p0, len);
  }
}

// f16 in groups of 16 on AVX-512F (the level fast_convert.h runs on), 16 pixels at a time: 16
// channels' values widened into 16 registers, transposed in registers (Transpose16), stored as
// 16 pixels' runs of the group; back, the reverse, rounded in a register. Tails (fewer than 16
// pixels or channels) through 16-element stack buffers and masked stores.
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

__attribute__((target("avx512f,f16c"))) void ToBlockedGroupAvx512(const Half* x,
                                                                  const BlockedLayout& l, int64_t n,
                                                                  int64_t g, float* y) {
  const Group k = GroupOf(l, g);
  const __mmask16 lanes = static_cast<__mmask16>((1u << k.lanes) - 1);
  const Half* src = x + (n * l.c + g * 16) * l.p;
  float* dst = y + n * l.sn + k.base;
  for (int64_t q0 = 0; q0 < l.p; q0 += 16) {
    const int64_t len = std::min<int64_t>(16, l.p - q0);
    __m512 r[16];
    for (int64_t c = 0; c < 16; ++c) {
      r[c] = _mm512_setzero_ps();
      if (c < k.real && len == 16) {
        r[c] = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + c * l.p + q0)));
      } else if (c < k.real) {
        alignas(32) Half tail[16] = {};
        std::memcpy(tail, src + c * l.p + q0, static_cast<size_t>(len) * sizeof(Half));
        r[c] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(tail)));
      }
    }
    Transpose16(r);
    for (int64_t q = 0; q < len; ++q) _mm512_mask_storeu_ps(dst + (q0 + q) * l.sp, lanes, r[q]);
  }
}

__attribute__((target("avx512f,f16c"))) void FromBlockedGroupAvx512(const float* x,
                                                                    const BlockedLayout& l,
                                                                    int64_t n, int64_t g, Half* y) {
  const Group k = GroupOf(l, g);
  const __mmask16 real = static_cast<__mmask16>((1u << k.real) - 1);
  const float* src = x + n * l.sn + k.base;
  Half* dst = y + (n * l.c + g * 16) * l.p;
  for (int64_t q0 = 0; q0 < l.p; q0 += 16) {
    const int64_t len = std::min<int64_t>(16, l.p - q0);
    __m512 r[16];
    for (int64_t q = 0; q < 16; ++q) {
      r[q] = q < len ? _mm512_maskz_loadu_ps(real, src + (q0 + q) * l.sp) : _mm512_setzero_ps();
    }
    Transpose16(r);
    for (int64_t c = 0; c < k.real; ++c) {
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

bool UseAvx512(const BlockedLayout& l) {
  return l.block != 1 && GroupWidth(l) == 16 && std::strcmp(FastConvertIsa(), "avx512f") == 0;
}

// The walk both directions share, image by image: `plane(n, c)` for each channel of a planar
// layout (block 1), else `group(n, g)` for each group of channels (Groups).
template <typename Plane, typename Group>
void ForEachPlaneOrGroup(const BlockedLayout& l, Plane plane, Group group) {
  for (int64_t n = 0; n < l.n; ++n) {
    if (l.block == 1) {
      for (int64_t c = 0; c < l.c; ++c) plane(n, c);
      continue;
    }
    for (int64_t g = 0; g < Groups(l); ++g) group(n, g);
  }
}

template <typename T>
void ToBlocked(const T* x, const BlockedLayout& l, float* y) {
  ForEachPlaneOrGroup(
      l,
      [&](int64_t n, int64_t c) { ToF32(x + (n * l.c + c) * l.p, y + n * l.sn + c * l.sc, l.p); },
      [&](int64_t n, int64_t g) {
        if constexpr (std::is_same_v<T, Half>) {
          if (UseAvx512(l)) return ToBlockedGroupAvx512(x, l, n, g, y);
        }
        ToBlockedGroup(x, l, n, g, y);
      });
}

template <typename T>
void FromBlocked(const float* x, const BlockedLayout& l, T* y) {
  ForEachPlaneOrGroup(
      l,
      [&](int64_t n, int64_t c) { FromF32(x + n * l.sn + c * l.sc, y + (n * l.c + c) * l.p, l.p); },
      [&](int64_t n, int64_t g) {
        if constexpr (std::is_same_v<T, Half>) {
          if (UseAvx512(l)) return FromBlockedGroupAvx512(x, l, n, g, y);
        }
        FromBlockedGroup(x, l, n, g, y);
      });
}

}  // namespace

bool BlockedLayoutSupported(const BlockedLayout& l) {
  if (l.n < 0 || l.c < 1 || l.p < 1 || l.block < 1) return false;
  if (l.block == 1) return l.sp == 1 && l.sc >= l.p && l.sn >= l.c * l.sc;
  if (l.block >= l.c) return l.sp >= l.block && l.sn >= l.p * l.sp;  // channels last (NHWC)
  return (l.block == 8 || l.block % 16 == 0) && l.sp == l.block && l.sc >= l.p * l.block &&
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

#include "kernels/cpu/pool.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/common/pool_window.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/in_f32.h"
#include "kernels/cpu/parallel.h"

// GCC 12's AVX-512 intrinsics build their "undefined" vectors as `__m512 __Y = __Y`, which
// -Wmaybe-uninitialized reports wherever they are inlined (as in blocked_convert.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace a8::cpu {
namespace {

using internal::PoolGeometry;

// Whether every window of a 1-D/2-D pool lies wholly inside the input with contiguous taps (no
// padding, no dilation, no ceil_mode overhang): then MaxPoolPlaneInside needs no bounds checks.
bool WindowsInside(const PoolGeometry& g) {
  if (g.in[0] != 1 || g.out[0] != 1 || g.k[0] != 1) return false;
  for (int a = 1; a < 3; ++a) {
    if (g.pb[a] != 0 || g.d[a] != 1 || (g.out[a] - 1) * g.s[a] + g.k[a] > g.in[a]) return false;
  }
  return true;
}

// One plane of MaxPool where WindowsInside holds: the same first-maximum rule as the general
// loop (a NaN first tap stays, a later NaN never wins), without its per-tap bounds checks.
template <typename T>
void MaxPoolPlaneInside(const PoolGeometry& g, const T* src, T* dst) {
  using C = Compute<T>;
  const int64_t w = g.in[2], kh = g.k[1], kw = g.k[2], sh = g.s[1], sw = g.s[2];
  if (kh == 2 && kw == 2 && sh == 2 && sw == 2) {
    // The common 2x2 / stride 2 pool, taps unrolled. In f32, four outputs a step in SSE (every
    // x86-64 CPU has it): the even and odd columns of both rows by shuffles, then the scalar
    // chain's maxima in its order. maxps(v, best) is v > best ? v : best, NaN and signed zero
    // included (a NaN best stays, a later NaN never wins), so the bits are the scalar loop's.
    // (The example CNN's pool, 8x8 planes at batch 32, one thread: 10.6 -> 8.7 us a call.)
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const T* r0 = src + 2 * oh * w;
      const T* r1 = r0 + w;
      T* d = dst + oh * g.out[2];
      int64_t ow = 0;
#if defined(__SSE2__)
      if constexpr (std::is_same_v<T, float>) {
        for (; ow + 4 <= g.out[2]; ow += 4) {
          const __m128 a0 = _mm_loadu_ps(r0 + 2 * ow), a1 = _mm_loadu_ps(r0 + 2 * ow + 4);
          const __m128 c0 = _mm_loadu_ps(r1 + 2 * ow), c1 = _mm_loadu_ps(r1 + 2 * ow + 4);
          __m128 best = _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
          best = _mm_max_ps(_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)), best);
          best = _mm_max_ps(_mm_shuffle_ps(c0, c1, _MM_SHUFFLE(2, 0, 2, 0)), best);
          best = _mm_max_ps(_mm_shuffle_ps(c0, c1, _MM_SHUFFLE(3, 1, 3, 1)), best);
          _mm_storeu_ps(d + ow, best);
        }
      }
#endif
      for (; ow < g.out[2]; ++ow) {
        C best = Load(r0[2 * ow]);
        const C b = Load(r0[2 * ow + 1]), c = Load(r1[2 * ow]), e = Load(r1[2 * ow + 1]);
        best = b > best ? b : best;
        best = c > best ? c : best;
        best = e > best ? e : best;
        d[ow] = Store<T>(best);
      }
    }
    return;
  }
  for (int64_t oh = 0; oh < g.out[1]; ++oh) {
    const T* row = src + oh * sh * w;
    for (int64_t ow = 0; ow < g.out[2]; ++ow) {
      const T* win = row + ow * sw;
      C best = Load(win[0]);
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          const C v = Load(win[i * w + j]);
          if (v > best) best = v;
        }
      }
      dst[oh * g.out[2] + ow] = Store<T>(best);
    }
  }
}

}  // namespace

namespace internal {

PoolGeometry MakeWindow(const Dims& in, const Dims& out, const Dims& kernel, const Dims& strides,
                        const Dims& dilations, const Dims& pads) {
  const size_t r = in.size();
  PoolGeometry g;
  for (int i = 0; i < 3; ++i) {
    g.in[i] = g.out[i] = g.k[i] = g.s[i] = g.d[i] = 1;
    g.pb[i] = g.pe[i] = 0;
  }
  for (size_t i = 0; i < r; ++i) {
    const size_t j = 3 - r + i;
    g.in[j] = in[i];
    g.out[j] = out[i];
    g.k[j] = kernel[i];
    g.s[j] = strides.empty() ? 1 : strides[i];
    g.d[j] = dilations.empty() ? 1 : dilations[i];
    g.pb[j] = pads.empty() ? 0 : pads[i];
    g.pe[j] = pads.empty() ? 0 : pads[r + i];
  }
  for (int i = 0; i < 3; ++i) {
    g.in_size *= g.in[i];
    g.out_size *= g.out[i];
    g.k_size *= g.k[i];
  }
  return g;
}

StatusOr<PoolGeometry> MakePoolGeometry(const PoolParams& p, Dims* out_spatial) {
  const size_t r = p.in_spatial.size();
  if (r < 1 || r > 3) return Unsupported("Pool: {} spatial dims (1 to 3 are supported)", r);
  if (p.kernel.size() != r || (!p.strides.empty() && p.strides.size() != r) ||
      (!p.dilations.empty() && p.dilations.size() != r) ||
      (!p.pads.empty() && p.pads.size() != 2 * r)) {
    return InvalidInput("Pool: kernel/strides/dilations/pads do not match {} spatial dims", r);
  }
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t in = p.in_spatial[i], k = p.kernel[i];
    const int64_t s = p.strides.empty() ? 1 : p.strides[i];
    const int64_t d = p.dilations.empty() ? 1 : p.dilations[i];
    const int64_t pb = p.pads.empty() ? 0 : p.pads[i], pe = p.pads.empty() ? 0 : p.pads[r + i];
    if (k < 1 || s < 1 || d < 1 || pb < 0 || pe < 0) {
      return InvalidInput("Pool: spatial dim {}: kernel {}, stride {}, dilation {}, pads {}+{}", i,
                          k, s, d, pb, pe);
    }
    const int64_t span = (k - 1) * d + 1;
    const int64_t room = in + pb + pe - span;
    if (room < 0) {
      return InvalidInput("Pool: spatial dim {}: kernel span {} exceeds padded input {}", i, span,
                          in + pb + pe);
    }
    int64_t o = (p.ceil_mode ? (room + s - 1) / s : room / s) + 1;
    if (p.ceil_mode && (o - 1) * s >= in + pb) --o;
    out[i] = o;
  }
  if (out_spatial != nullptr) *out_spatial = out;
  return MakeWindow(p.in_spatial, out, p.kernel, p.strides, p.dilations, p.pads);
}

PoolParams PlanesAsF32(const PoolParams& p, int64_t planes) {
  PoolParams q = p;
  q.dtype = DType::kF32;
  q.batch = planes;
  q.channels = 1;
  return q;
}

bool AllTapsInside(const PoolGeometry& g) {
  for (int a = 0; a < 3; ++a) {
    if (g.pb[a] != 0 || (g.out[a] - 1) * g.s[a] + (g.k[a] - 1) * g.d[a] >= g.in[a]) return false;
  }
  return true;
}

std::vector<int64_t> WindowBases(const PoolGeometry& g) {
  std::vector<int64_t> bases;
  bases.reserve(static_cast<size_t>(g.out_size));
  ForEachWindow(g, [&](int64_t, const int64_t start[3]) {
    bases.push_back((start[0] * g.in[1] + start[1]) * g.in[2] + start[2]);
  });
  return bases;
}

std::vector<int64_t> TapOffsets(const PoolGeometry& g) {
  std::vector<int64_t> taps;
  taps.reserve(static_cast<size_t>(g.k_size));
  for (int64_t t0 = 0; t0 < g.k[0]; ++t0) {
    for (int64_t t1 = 0; t1 < g.k[1]; ++t1) {
      for (int64_t t2 = 0; t2 < g.k[2]; ++t2) {
        taps.push_back((t0 * g.d[0] * g.in[1] + t1 * g.d[1]) * g.in[2] + t2 * g.d[2]);
      }
    }
  }
  return taps;
}

}  // namespace internal

StatusOr<Dims> PoolOutputSpatial(const PoolParams& p) {
  Dims out;
  A8_ASSIGN_OR_RETURN(PoolGeometry g, internal::MakePoolGeometry(p, &out));
  (void)g;
  return out;
}

Status MaxPool(const PoolParams& p, const void* x, void* y, int64_t* indices) {
  A8_ASSIGN_OR_RETURN(PoolGeometry g, internal::MakePoolGeometry(p, nullptr));
  if (internal::HalfInF32(p.dtype)) {
    return internal::PlanesInF32(
        p.dtype, p.batch * p.channels, {{x, g.in_size}}, g.out_size, y,
        [&](int64_t p0, int64_t k, const float* const* in, float* y32) -> Status {
          int64_t* at = indices != nullptr ? indices + p0 * g.out_size : nullptr;
          A8_RETURN_IF_ERROR(MaxPool(internal::PlanesAsF32(p, k), in[0], y32, at));
          for (int64_t i = 0; at != nullptr && i < k * g.out_size; ++i) at[i] += p0 * g.in_size;
          return Status::Ok();
        });
  }
  return Dispatch<TypeSet::kNumeric>(p.dtype, "MaxPool", [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      return Unsupported("MaxPool: dtype {} is not supported", ElemName(p.dtype));
    } else {
      const T* in = static_cast<const T*>(x);
      T* out = static_cast<T*>(y);
      const int64_t k_total = g.k[0] * g.k[1] * g.k[2];
      if (indices == nullptr && WindowsInside(g)) {
        ParallelFor(p.batch * p.channels, g.out_size * k_total, [&](int64_t b, int64_t e) {
          for (int64_t plane = b; plane < e; ++plane) {
            MaxPoolPlaneInside<T>(g, in + plane * g.in_size, out + plane * g.out_size);
          }
        });
        return Status::Ok();
      }
      ParallelFor(p.batch * p.channels, g.out_size * k_total, [&](int64_t b, int64_t e) {
        for (int64_t plane = b; plane < e; ++plane) {
          const T* src = in + plane * g.in_size;
          ForEachWindow(g, [&](int64_t o, const int64_t start[3]) {
            C best = std::numeric_limits<C>::lowest();
            if constexpr (std::is_floating_point_v<C>) best = -std::numeric_limits<C>::infinity();
            int64_t best_i = -1;
            ForEachTapInside(g, start, [&](int64_t i) {
              C v = Load(src[i]);
              if (best_i < 0 || v > best) {
                best = v;
                best_i = i;
              }
            });
            out[plane * g.out_size + o] = Store<T>(best);
            if (indices != nullptr) {
              int64_t at = best_i;
              if (p.column_major_indices) {
                const int64_t i2 = best_i % g.in[2], i1 = (best_i / g.in[2]) % g.in[1];
                const int64_t i0 = best_i / (g.in[2] * g.in[1]);
                at = i0 + i1 * g.in[0] + i2 * g.in[0] * g.in[1];
              }
              indices[plane * g.out_size + o] = plane * g.in_size + at;
            }
          });
        }
      });
      return Status::Ok();
    }
  });
}

Status AveragePool(const PoolParams& p, const void* x, void* y) {
  A8_ASSIGN_OR_RETURN(PoolGeometry g, internal::MakePoolGeometry(p, nullptr));
  if (internal::HalfInF32(p.dtype)) {
    return internal::PlanesInF32(p.dtype, p.batch * p.channels, {{x, g.in_size}}, g.out_size, y,
                                 [&](int64_t, int64_t k, const float* const* in, float* y32) {
                                   return AveragePool(internal::PlanesAsF32(p, k), in[0], y32);
                                 });
  }
  return Dispatch<TypeSet::kFloat>(p.dtype, "AveragePool", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    const int64_t k_total = g.k[0] * g.k[1] * g.k[2];
    ParallelFor(p.batch * p.channels, g.out_size * k_total, [&](int64_t b, int64_t e) {
      for (int64_t plane = b; plane < e; ++plane) {
        const T* src = in + plane * g.in_size;
        ForEachWindow(g, [&](int64_t o, const int64_t start[3]) {
          C sum = 0;
          ForEachTapInside(g, start, [&](int64_t i) { sum += Load(src[i]); });
          const int64_t count = AverageCount(g, start, p.count_include_pad);
          out[plane * g.out_size + o] = Store<T>(count > 0 ? sum / static_cast<C>(count) : C(0));
        });
      }
    });
    return Status::Ok();
  });
}

namespace {

// y[plane] = the mean (or, kMax, the max) of the plane's `spatial` elements, for the
// batch * channels planes of x.
template <bool kMax>
Status GlobalPool(const char* op, DType dtype, int64_t planes, int64_t spatial, const void* x,
                  void* y) {
  if (internal::HalfInF32(dtype)) {
    return internal::PlanesInF32(dtype, planes, {{x, spatial}}, 1, y,
                                 [&](int64_t, int64_t k, const float* const* in, float* y32) {
                                   return GlobalPool<kMax>(op, DType::kF32, k, spatial, in[0], y32);
                                 });
  }
  return Dispatch<TypeSet::kFloat>(dtype, op, [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    ParallelFor(planes, spatial, [&](int64_t b, int64_t e) {
      for (int64_t plane = b; plane < e; ++plane) {
        C acc = kMax ? -std::numeric_limits<C>::infinity() : C(0);
        for (int64_t i = 0; i < spatial; ++i) {
          const C v = Load(in[plane * spatial + i]);
          acc = kMax ? std::max(acc, v) : acc + v;
        }
        if (!kMax) acc = spatial > 0 ? acc / static_cast<C>(spatial) : C(0);
        out[plane] = Store<T>(acc);
      }
    });
    return Status::Ok();
  });
}

}  // namespace

Status GlobalAveragePool(DType dtype, int64_t batch, int64_t channels, int64_t spatial,
                         const void* x, void* y) {
  return GlobalPool<false>("GlobalAveragePool", dtype, batch * channels, spatial, x, y);
}

Status GlobalMaxPool(DType dtype, int64_t batch, int64_t channels, int64_t spatial, const void* x,
                     void* y) {
  return GlobalPool<true>("GlobalMaxPool", dtype, batch * channels, spatial, x, y);
}

namespace {

// The geometry of a MaxPool that MaxPoolChannelsLast takes, or why it does not take it.
StatusOr<PoolGeometry> ChannelsLastMaxPoolGeometry(const PoolParams& p) {
  if (p.dtype != DType::kF32) {
    return Unsupported("MaxPoolChannelsLast: dtype {} is not supported (f32 only)",
                       ElemName(p.dtype));
  }
  if (p.in_spatial.size() != 2) {
    return Unsupported("MaxPoolChannelsLast: {} spatial dims (2 are supported)",
                       p.in_spatial.size());
  }
  A8_ASSIGN_OR_RETURN(PoolGeometry g, internal::MakePoolGeometry(p, nullptr));
  if (!WindowsInside(g)) {
    return Unsupported(
        "MaxPoolChannelsLast: the windows reach padding, are dilated or overhang the input");
  }
  return g;
}

// One output row of the channels-last MaxPool: dst[ow * channels + c] for every output column
// ow, the window of column ow starting at src + ow * sw * channels (its top-left tap). The taps
// are visited row major, as MaxPoolPlaneInside visits them, with its compare: the first tap,
// then v > best ? v : best for each later one (a NaN first tap stays, a later NaN never wins, and
// of equal taps, +0 and -0 included, the first stays). The AVX-512, AVX2 and baseline clones are
// chosen at load time and give the same bits (compares and selects only).
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void MaxPoolRowChannelsLast(
    const float* __restrict src, int64_t in_w, int64_t channels, int64_t out_w, int64_t kh,
    int64_t kw, int64_t sw, float* __restrict dst) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const float* win = src + ow * sw * channels;
    float* best = dst + ow * channels;
    for (int64_t c = 0; c < channels; ++c) best[c] = win[c];
    for (int64_t t = 1; t < kh * kw; ++t) {
      const float* tap = win + ((t / kw) * in_w + t % kw) * channels;
      for (int64_t c = 0; c < channels; ++c) {
        const float v = tap[c];
        best[c] = v > best[c] ? v : best[c];
      }
    }
  }
}

// The same row where `channels` is a multiple of 16, on AVX-512: a vector of 16 channels kept in
// a register over the window (GCC scalarises the loop above into one maxss a lane there: 12 us
// for the example CNN's pool against 8 for the NCHW kernel). vmaxps(v, best) is v > best ? v :
// best, so the bits are the loop's.
__attribute__((target("avx512f"))) void MaxPoolRowChannelsLast16(const float* src, int64_t in_w,
                                                                 int64_t channels, int64_t out_w,
                                                                 int64_t kh, int64_t kw, int64_t sw,
                                                                 float* dst) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const float* win = src + ow * sw * channels;
    for (int64_t c = 0; c < channels; c += 16) {
      __m512 best = _mm512_loadu_ps(win + c);
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = i == 0 ? 1 : 0; j < kw; ++j)
          best = _mm512_max_ps(_mm512_loadu_ps(win + (i * in_w + j) * channels + c), best);
      }
      _mm512_storeu_ps(dst + ow * channels + c, best);
    }
  }
}

// The channels-last global pool of `channels` channels of one image: acc[c] over the `spatial`
// pixels of src (`stride` floats apart), pixel by pixel. Each channel sees GlobalPool's steps in
// its order (from -inf, std::max; or from 0, sums, then one divide), so its result has the same
// bits. NaNs included: GlobalPool's scalar add keeps the sum as its first operand, and an x86 add
// of two NaNs returns its first operand's, so a sum that has become NaN keeps that NaN; the
// vectorised add may take its operands either way round, hence the select that keeps a NaN sum.
// Clones as MaxPoolRowChannelsLast's: adds, a divide and selects, nothing to contract into an FMA.
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void
GlobalPoolBlockChannelsLast(bool max, const float* __restrict src, int64_t spatial, int64_t stride,
                            int64_t channels, float* __restrict acc) {
  if (max) {
    for (int64_t c = 0; c < channels; ++c) acc[c] = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < spatial; ++i) {
      const float* row = src + i * stride;
      for (int64_t c = 0; c < channels; ++c) acc[c] = std::max(acc[c], row[c]);
    }
    return;
  }
  for (int64_t c = 0; c < channels; ++c) acc[c] = 0.0f;
  for (int64_t i = 0; i < spatial; ++i) {
    const float* row = src + i * stride;
    for (int64_t c = 0; c < channels; ++c) {
      const float sum = acc[c] + row[c];
      acc[c] = acc[c] != acc[c] ? acc[c] : sum;
    }
  }
  if (spatial > 0) {
    const float count = static_cast<float>(spatial);
    for (int64_t c = 0; c < channels; ++c) acc[c] = acc[c] / count;
  }
}

// Channels a GlobalPoolBlockChannelsLast call takes at most: its accumulators (2 KiB) stay in L1,
// and a wide image splits over more threads than it has images.
constexpr int64_t kGlobalPoolChannelBlock = 512;

constexpr int64_t kFloatBytes = sizeof(float);

}  // namespace

bool MaxPoolChannelsLastTakes(const PoolParams& p) { return ChannelsLastMaxPoolGeometry(p).ok(); }

Status MaxPoolChannelsLast(const PoolParams& p, const void* x, void* y) {
  A8_ASSIGN_OR_RETURN(PoolGeometry g, ChannelsLastMaxPoolGeometry(p));
  const float* in = static_cast<const float*>(x);
  float* out = static_cast<float*>(y);
  const int64_t c = p.channels, in_h = g.in[1], in_w = g.in[2];
  const int64_t out_h = g.out[1], out_w = g.out[2];
  const bool avx512 = internal::CpuHasAvx512() && c % 16 == 0;
  // One item per (image, output row); each writes its own row of y. The cost is the bytes read:
  // the loop is a few vector maxima per cache line, and split in two it leaves each half of the
  // batch with the thread whose part of the convolution before wrote it (onednn_conv.h), where
  // one thread alone reads half of X from the other core (the example CNN's pool, two threads:
  // 6.9 us whole against 3.6 on one).
  ParallelFor(p.batch * out_h, out_w * g.k_size * c * kFloatBytes, [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t n = item / out_h, oh = item % out_h;
      (avx512 ? MaxPoolRowChannelsLast16 : MaxPoolRowChannelsLast)(
          in + (n * in_h + oh * g.s[1]) * in_w * c, in_w, c, out_w, g.k[1], g.k[2], g.s[2],
          out + item * out_w * c);
    }
  });
  return Status::Ok();
}

Status GlobalPoolChannelsLast(bool max, DType dtype, int64_t batch, int64_t channels,
                              int64_t spatial, const void* x, void* y) {
  if (dtype != DType::kF32) {
    return Unsupported("GlobalPoolChannelsLast: dtype {} is not supported (f32 only)",
                       ElemName(dtype));
  }
  const float* in = static_cast<const float*>(x);
  float* out = static_cast<float*>(y);
  const int64_t blocks = (channels + kGlobalPoolChannelBlock - 1) / kGlobalPoolChannelBlock;
  // The cost in bytes read, as MaxPoolChannelsLast's.
  ParallelFor(batch * blocks, spatial * std::min(channels, kGlobalPoolChannelBlock) * kFloatBytes,
              [&](int64_t b, int64_t e) {
                for (int64_t item = b; item < e; ++item) {
                  const int64_t n = item / blocks, c0 = (item % blocks) * kGlobalPoolChannelBlock;
                  GlobalPoolBlockChannelsLast(
                      max, in + n * spatial * channels + c0, spatial, channels,
                      std::min(channels - c0, kGlobalPoolChannelBlock), out + n * channels + c0);
                }
              });
  return Status::Ok();
}

}  // namespace a8::cpu

// Dynamic loss scaling kernels (declared in optim.h): a8.UnscaleCheckFinite and a8.UpdateScale.
#include <immintrin.h>

#include <cmath>
#include <type_traits>

#include "kernels/cpu/fast_convert_lanes.h"
#include "kernels/cpu/optim.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/tensor_chunks.h"

namespace a8::cpu {
namespace {

// Elements per fixed chunk: each chunk records its own overflow flag, so the result does not
// depend on how ParallelFor splits the work.
constexpr int64_t kUnscaleChunk = int64_t{1} << 14;

// out[i] = float(g[i]) * inv for the whole vectors of 8 of an f32, f16 or bf16 (T) gradient of
// n elements, in AVX2 registers; returns how many elements it did (the caller's scalar loop does
// the rest) and sets *inf where any of them is inf or NaN (exponent bits all ones). The same
// products as the scalar loop (one f32 multiply each), so the same bits in either mode; `out` may
// be `g` (an f32 gradient unscaled in place): each vector is loaded before its store. Vectorised
// by hand because the compiler left the scalar loop scalar (an exact alias of `out` and `g` fails
// its overlap check): the amp BERT-base-width encoder's 28 M gradients took 46 ms.
// With `out` null it only checks (a8.CheckFinite).
template <typename T>
__attribute__((target("avx2,f16c"))) int64_t UnscaleAvx2(const T* g, float* out, int64_t n,
                                                         float inv, bool* inf) {
  const __m256 inv8 = _mm256_set1_ps(inv);
  const __m256i exponent = _mm256_set1_epi32(0x7f800000);
  __m256i bad = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v;
    if constexpr (std::is_same_v<T, float>) {
      v = _mm256_loadu_ps(g + i);
    } else {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + i));
      v = std::is_same_v<T, Half> ? lanes::HalfToFloat8(h) : lanes::BFloat16ToFloat8(h);
    }
    const __m256i e = _mm256_and_si256(_mm256_castps_si256(v), exponent);
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(e, exponent));
    if (out != nullptr) _mm256_storeu_ps(out + i, _mm256_mul_ps(v, inv8));
  }
  *inf = !_mm256_testz_si256(bad, bad);
  return i;
}

// The check alone (a8.CheckFinite) of an f16 or bf16 gradient: whether any of its whole vectors
// of 16 elements has an element whose exponent bits are all ones (Inf or NaN), read as 16-bit
// integers, 64 bytes an iteration with no conversion; returns how many elements it did. The same
// answer as converting each element and asking std::isfinite.
template <typename T>
__attribute__((target("avx2"))) int64_t CheckHalfAvx2(const T* g, int64_t n, bool* inf) {
  const uint16_t bits = std::is_same_v<T, Half> ? 0x7c00 : 0x7f80;
  const __m256i exponent = _mm256_set1_epi16(static_cast<int16_t>(bits));
  __m256i bad = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + i + 16));
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi16(_mm256_and_si256(a, exponent), exponent));
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi16(_mm256_and_si256(b, exponent), exponent));
  }
  *inf = !_mm256_testz_si256(bad, bad);
  return i;
}

}  // namespace

Status UnscaleCheckFinite(float scale, const std::vector<DType>& dtypes,
                          const std::vector<int64_t>& counts, const std::vector<const void*>& grads,
                          const std::vector<float*>& outs, float* found_inf) {
  const bool store = !outs.empty();  // else a8.CheckFinite: check only
  if (dtypes.size() != counts.size() || dtypes.size() != grads.size() ||
      (store && dtypes.size() != outs.size())) {
    return InvalidInput("a8.UnscaleCheckFinite: {} dtypes, {} counts, {} gradients and {} outputs",
                        dtypes.size(), counts.size(), grads.size(), outs.size());
  }
  const float inv_scale = InverseScale(scale);
  const bool avx2 = lanes::CpuHasAvx2F16c();
  bool any_inf = false;
  // A chunk's flag is a char, not a vector<bool> bit: the chunks are written from several threads.
  A8_RETURN_IF_ERROR(ForEachTensorChunk<char>(
      "a8.UnscaleCheckFinite", kUnscaleChunk, dtypes, counts,
      [&](auto tag, size_t t, int64_t b, int64_t e) -> char {
        using T = A8_TAG_TYPE(tag);
        using C = Compute<T>;  // float, or double for f64 gradients
        const C inv = static_cast<C>(inv_scale);
        const T* g = static_cast<const T*>(grads[t]);
        float* out = store ? outs[t] : nullptr;
        bool inf = false;
        int64_t i = b;
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
          if (avx2 && out == nullptr) {
            i += CheckHalfAvx2(g + b, e - b, &inf);
          } else if (avx2) {
            i += UnscaleAvx2(g + b, out + b, e - b, inv, &inf);
          }
        } else if constexpr (std::is_same_v<T, float>) {
          if (avx2) i += UnscaleAvx2(g + b, out != nullptr ? out + b : nullptr, e - b, inv, &inf);
        }
        for (; i < e; ++i) {
          // Loaded before the store: `out` may be `g` (an f32 gradient unscaled in place).
          const C v = Load(g[i]);
          inf |= !std::isfinite(v);
          if (out != nullptr) out[i] = static_cast<float>(v * inv);
        }
        return inf ? 1 : 0;
      },
      [&](char c) { any_inf |= c != 0; }));
  *found_inf = any_inf ? 1.0f : 0.0f;
  return Status::Ok();
}

Status CheckUpdateScaleParams(const UpdateScaleParams& p) {
  if (p.accumulate < 1) {
    return InvalidInput("a8.UpdateScale: accumulate must be at least 1, got {}", p.accumulate);
  }
  if (p.growth_interval < 1) {
    return InvalidInput("a8.UpdateScale: growth_interval must be at least 1, got {}",
                        p.growth_interval);
  }
  return Status::Ok();
}

Status UpdateScale(const UpdateScaleParams& p, float scale, int32_t tracker, float found_inf,
                   int64_t step, float* scale_next, int32_t* tracker_next) {
  A8_RETURN_IF_ERROR(CheckUpdateScaleParams(p));
  if (step < 0) return InvalidInput("a8.UpdateScale: negative step {}", step);
  UpdateScaleStep(p, scale, tracker, found_inf, step, scale_next, tracker_next);
  return Status::Ok();
}

}  // namespace a8::cpu

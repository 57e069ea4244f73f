// Dynamic loss scaling kernels (declared in optim.h): a8.UnscaleCheckFinite and a8.UpdateScale.
#include <cmath>

#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/optim.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

// Elements per fixed chunk: each chunk records its own overflow flag, so the result does not
// depend on how ParallelFor splits the work.
constexpr int64_t kUnscaleChunk = int64_t{1} << 14;

}  // namespace

Status UnscaleCheckFinite(float scale, const std::vector<DType>& dtypes,
                          const std::vector<int64_t>& counts, const std::vector<const void*>& grads,
                          const std::vector<float*>& outs, float* found_inf) {
  if (dtypes.size() != counts.size() || dtypes.size() != grads.size() ||
      dtypes.size() != outs.size()) {
    return InvalidInput("a8.UnscaleCheckFinite: {} dtypes, {} counts, {} gradients and {} outputs",
                        dtypes.size(), counts.size(), grads.size(), outs.size());
  }
  const float inv_scale = InverseScale(scale);
  bool any_inf = false;
  for (size_t t = 0; t < dtypes.size(); ++t) {
    const int64_t n = counts[t];
    if (n < 0) return InvalidInput("a8.UnscaleCheckFinite: negative element count {}", n);
    const int64_t chunks = (n + kUnscaleChunk - 1) / kUnscaleChunk;
    std::vector<char> chunk_inf(static_cast<size_t>(chunks), 0);
    A8_RETURN_IF_ERROR(Dispatch<TypeSet::kFloat>(dtypes[t], "a8.UnscaleCheckFinite", [&](auto tag) {
      using T = A8_TAG_TYPE(tag);
      using C = Compute<T>;  // float, or double for f64 gradients
      const C inv = static_cast<C>(inv_scale);
      const T* g = static_cast<const T*>(grads[t]);
      float* out = outs[t];
      ParallelFor(chunks, kUnscaleChunk, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          const int64_t b = c * kUnscaleChunk, e = std::min(n, b + kUnscaleChunk);
          bool inf = false;
          if constexpr (kIsHalfElem<T>) {
            // The fast mode widens f16/bf16 gradients in vector registers (the same floats; the
            // scalar widening was 185 of the example BERT's 235 us in this kernel, amp).
            if (CurrentKernelMode() == KernelMode::kFast) {
              ForEachF32Block(b, e, [&](int64_t i0, int64_t len) {
                float v[kF32Block];
                ToF32(g + i0, v, len);
                for (int64_t i = 0; i < len; ++i) {
                  inf |= !std::isfinite(v[i]);
                  out[i0 + i] = v[i] * inv;
                }
              });
              chunk_inf[static_cast<size_t>(c)] = inf ? 1 : 0;
              continue;
            }
          }
          for (int64_t i = b; i < e; ++i) {
            // Loaded before the store: `out` may be `g` (an f32 gradient unscaled in place).
            const C v = Load(g[i]);
            inf |= !std::isfinite(v);
            out[i] = static_cast<float>(v * inv);
          }
          chunk_inf[static_cast<size_t>(c)] = inf ? 1 : 0;
        }
      });
      return Status::Ok();
    }));
    for (char c : chunk_inf) any_inf |= c != 0;
  }
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

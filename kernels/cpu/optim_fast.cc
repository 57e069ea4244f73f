#include "kernels/cpu/optim_fast.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu::internal {
namespace {

// Rough cost of one update element relative to a copy, for ParallelFor: half the reference
// loop's (optim.cc), since these loops are vectorised (0.84 ns an f32 element on one core of a
// Sapphire Rapids VM). So a tensor splits over two threads from 16 K elements, about 7 us a
// chunk, which pays for waking a sleeping worker: the example mlp's 8 K-element weights took
// 19 us on two threads against 7 on one when they split at 8 K, while the BERT example's 16 K
// FFN weights take 11.5 us on two against 18.7 on one (traced steps, tools/bench/README.md).
constexpr int64_t kUpdateCost = 4;

// AdamElement over `len` elements of local buffers (no aliasing: the loop vectorises).
// kCoupled: L2 decay added to the gradient (Adam with weight_decay != 0); else x is scaled by
// `keep` (AdamW's 1 - lr * wd, or 1: exact) and the gradient left alone, as AdamElement does.
template <bool kCoupled>
inline void AdamBlockBody(const AdamStep<float>& s, float keep, int64_t len, const float* g_in,
                          float* x, float* m, float* v) {
  const float b1 = s.beta1, b2 = s.beta2, c1 = 1.0f - s.beta1, c2 = 1.0f - s.beta2;
  for (int64_t i = 0; i < len; ++i) {
    float g = g_in[i] * s.grad_scale;
    float x0 = x[i];
    if constexpr (kCoupled) {
      g += s.weight_decay * x0;
    } else {
      x0 *= keep;
    }
    const float mn = b1 * m[i] + c1 * g;
    const float vn = b2 * v[i] + c2 * g * g;
    const float denom = std::sqrt(vn) * s.inv_sqrt_bc2 + s.eps;
    x[i] = x0 - s.step_size * mn / denom;
    m[i] = mn;
    v[i] = vn;
  }
}

__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void AdamBlockCoupled(
    const AdamStep<float>& s, int64_t len, const float* g, float* x, float* m, float* v) {
  AdamBlockBody<true>(s, 1.0f, len, g, x, m, v);
}

__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void AdamBlockScaled(
    const AdamStep<float>& s, float keep, int64_t len, const float* g, float* x, float* m,
    float* v) {
  AdamBlockBody<false>(s, keep, len, g, x, m, v);
}

void AdamBlock(const AdamStep<float>& s, int64_t len, const float* g, float* x, float* m,
               float* v) {
  if (s.decoupled) {
    AdamBlockScaled(s, 1.0f - s.lr * s.weight_decay, len, g, x, m, v);
  } else if (s.weight_decay != 0.0f) {
    AdamBlockCoupled(s, len, g, x, m, v);
  } else {
    AdamBlockScaled(s, 1.0f, len, g, x, m, v);
  }
}

// Unscales a block of gradients in place: g * inv, one float multiply each (UnscaleElement).
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void UnscaleBlock(
    float inv, int64_t len, float* g) {
  for (int64_t i = 0; i < len; ++i) g[i] = g[i] * inv;
}

template <typename G>
void AdamRange(const AdamStep<float>& s, int64_t b, int64_t e, const float* param, const G* grad,
               const float* m, const float* v, float* param_next, float* m_next, float* v_next,
               const float* inv, DType copy_dtype, void* copy) {
  float gb[kF32Block], xb[kF32Block], mb[kF32Block], vb[kF32Block];
  ForEachF32Block(b, e, [&](int64_t i, int64_t len) {
    const size_t bytes = static_cast<size_t>(len) * sizeof(float);
    ToF32(grad + i, gb, len);
    if (inv != nullptr) UnscaleBlock(*inv, len, gb);
    std::memcpy(xb, param + i, bytes);
    std::memcpy(mb, m + i, bytes);
    std::memcpy(vb, v + i, bytes);
    AdamBlock(s, len, gb, xb, mb, vb);
    std::memcpy(param_next + i, xb, bytes);
    std::memcpy(m_next + i, mb, bytes);
    std::memcpy(v_next + i, vb, bytes);
    if (copy == nullptr) return;
    if (copy_dtype == DType::kF16) {
      FromF32(xb, static_cast<Half*>(copy) + i, len);
    } else {
      FromF32(xb, static_cast<BFloat16*>(copy) + i, len);
    }
  });
}

}  // namespace

bool AdamUpdateF32Fast(const AdamStep<float>& s, DType grad_dtype, int64_t n, const float* param,
                       const void* grad, const float* m, const float* v, float* param_next,
                       float* m_next, float* v_next, const float* inv, DType copy_dtype,
                       void* copy) {
  return VisitF32OrHalfType(grad_dtype, [&](auto tag) {
    using G = decltype(tag);
    const G* g = static_cast<const G*>(grad);
    ParallelFor(n, kUpdateCost, [&](int64_t b, int64_t e) {
      AdamRange(s, b, e, param, g, m, v, param_next, m_next, v_next, inv, copy_dtype, copy);
    });
  });
}

}  // namespace a8::cpu::internal

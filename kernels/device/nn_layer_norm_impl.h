// The LayerNormalization kernels of kernels/device/nn.h and their gradient (BatchNormalization and
// InstanceNormalization: nn_norm_impl.h). This is their only math: the CPU backend runs these
// bodies on the host (runtime/cpu/cpu_backend.h), the CUDA backend on the GPU. Every sum runs in a
// fixed order in the compute type C (float, or double for f64), so results do not depend on the
// thread count or the launch. Per-row/channel/plane statistics go to
// scratch memory in C, never rounded to a narrower stash before they are applied.
#pragma once

#include <type_traits>

#include "kernels/common/sum_order.h"
#include "kernels/device/launch.h"
#include "kernels/device/nn.h"
#include "kernels/device/nn_common.h"

namespace a8::A8_DEV_NS {
namespace nn_detail {

// Where a broadcast LayerNorm parameter holds element j of a row.
A8_HD int64_t MapParam(const ParamMap& m, int64_t j) {
  if (m.dense) return j;
  int64_t off = 0;
  for (int a = m.rank - 1; a >= 0; --a) {
    off += (j % m.dims[a]) * m.strides[a];
    j /= m.dims[a];
  }
  return off;
}

// Mean and population variance of one LayerNorm row in 8 interleaved partial sums added in a
// fixed order (a CPU thread keeps them in one vector register, where one running sum would be a
// chain of dependent adds).
template <typename T, typename C = Acc<T>>
A8_HD void RowMoments(const T* x, int64_t n, C* mean, C* var) {
  constexpr int64_t kLanes = 8;
  const int64_t body = n - n % kLanes;
  C lanes[kLanes] = {};
  for (int64_t i = 0; i < body; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += Ld(x, i + l);
  }
  C sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
          ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
  for (int64_t i = body; i < n; ++i) sum += Ld(x, i);
  const C m = n > 0 ? sum / static_cast<C>(n) : C(0);
  for (int64_t l = 0; l < kLanes; ++l) lanes[l] = C(0);
  for (int64_t i = 0; i < body; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      const C v = Ld(x, i + l);
      lanes[l] += (v - m) * (v - m);
    }
  }
  C sq = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
         ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
  for (int64_t i = body; i < n; ++i) {
    const C v = Ld(x, i);
    sq += (v - m) * (v - m);
  }
  *mean = m;
  *var = n > 0 ? sq / static_cast<C>(n) : C(0);
}

// ---- LayerNormalization: rows of `inner` elements. stats: [outer] means, [outer] inv stds.
template <typename T>
struct LayerNormRows {
  using C = Acc<T>;
  LayerNormArgs a;
  C* stats;
  A8_HD void operator()(int64_t r) const {
    C m, v;
    RowMoments(static_cast<const T*>(a.x) + r * a.inner, a.inner, &m, &v);
    const C inv = C(1) / Sqrt(v + static_cast<C>(a.epsilon));
    stats[r] = m;
    stats[a.outer + r] = inv;
    if (a.mean != nullptr) StoreParam(a.stat_dtype, a.mean, r, m);
    if (a.inv_std_dev != nullptr) StoreParam(a.stat_dtype, a.inv_std_dev, r, inv);
  }
};

// Row-shaped (launch.h, ForEachRow): rows of `inner`, P the storage type of scale and bias.
template <typename T, typename P>
struct LayerNormApply {
  using C = Acc<T>;
  LayerNormArgs a;
  const C* stats;
  A8_HD void Span(int64_t r, int64_t j0, int64_t j1) const {
    const T* x = static_cast<const T*>(a.x) + r * a.inner;
    T* y = static_cast<T*>(a.y) + r * a.inner;
    const P* scale = static_cast<const P*>(a.scale);
    const P* bias = static_cast<const P*>(a.bias);
    const C m = stats[r], inv = stats[a.outer + r];
    if (a.scale_map.dense && (bias == nullptr || a.bias_map.dense)) {  // the same, vectorised
      if (bias == nullptr) {
        for (int64_t j = j0; j < j1; ++j) St(y, j, (Ld(x, j) - m) * inv * ParamOf<C>(scale, j));
      } else {
        for (int64_t j = j0; j < j1; ++j) {
          St(y, j, (Ld(x, j) - m) * inv * ParamOf<C>(scale, j) + ParamOf<C>(bias, j));
        }
      }
      return;
    }
    for (int64_t j = j0; j < j1; ++j) {
      const C s = ParamOf<C>(scale, MapParam(a.scale_map, j));
      C v = (Ld(x, j) - m) * inv * s;
      if (bias != nullptr) v = v + ParamOf<C>(bias, MapParam(a.bias_map, j));
      St(y, j, v);
    }
  }
};

// ---- a8.LayerNormalizationGrad. stats: [outer] means, inv stds, mean(g), mean(g * xhat) with
// g = dY * scale.
template <typename T, typename P>
struct LayerNormGradRows {
  using C = Acc<T>;
  LayerNormGradArgs a;
  bool have_stats;
  C* stats;
  A8_HD void operator()(int64_t r) const {
    const T* row = static_cast<const T*>(a.x) + r * a.inner;
    const T* grow = static_cast<const T*>(a.dy) + r * a.inner;
    const C inner = static_cast<C>(a.inner);
    C m, inv;
    if (have_stats) {
      m = Param<C>(a.stat_dtype, a.mean, r);
      inv = Param<C>(a.stat_dtype, a.inv_std_dev, r);
    } else {
      C sum = 0;
      for (int64_t i = 0; i < a.inner; ++i) sum += Ld(row, i);
      m = sum / inner;
      C sq = 0;
      for (int64_t i = 0; i < a.inner; ++i) {
        const C d = Ld(row, i) - m;
        sq += d * d;
      }
      inv = C(1) / Sqrt(sq / inner + static_cast<C>(a.epsilon));
    }
    stats[r] = m;
    stats[a.outer + r] = inv;
    if (a.dx == nullptr) return;
    C sum_g = 0, sum_gx = 0;
    const P* scale = static_cast<const P*>(a.scale);
    for (int64_t i = 0; i < a.inner; ++i) {
      const C g = Ld(grow, i) * ParamOf<C>(scale, i);
      sum_g += g;
      sum_gx += g * (Ld(row, i) - m) * inv;
    }
    stats[2 * a.outer + r] = sum_g / inner;
    stats[3 * a.outer + r] = sum_gx / inner;
  }
};

// Row-shaped: rows of `inner`, P the storage type of scale.
template <typename T, typename P>
struct LayerNormGradDx {
  using C = Acc<T>;
  LayerNormGradArgs a;
  const C* stats;
  A8_HD void Span(int64_t r, int64_t j0, int64_t j1) const {
    const T* x = static_cast<const T*>(a.x) + r * a.inner;
    const T* dy = static_cast<const T*>(a.dy) + r * a.inner;
    T* dx = static_cast<T*>(a.dx) + r * a.inner;
    const P* scale = static_cast<const P*>(a.scale);
    const C m = stats[r], inv = stats[a.outer + r];
    const C mean_g = stats[2 * a.outer + r], mean_gx = stats[3 * a.outer + r];
    for (int64_t j = j0; j < j1; ++j) {
      const C xhat = (Ld(x, j) - m) * inv;
      const C g = Ld(dy, j) * ParamOf<C>(scale, j);
      St(dx, j, inv * (g - mean_g - xhat * mean_gx));
    }
  }
};

// dScale and dBias: each a sum over the rows in chunks of kSumChunk rows
// (kernels/common/sum_order.h). Pass 1, row-shaped over [chunks, inner]: the sums of one chunk's
// rows into `part` ([2][chunks][inner] of scratch); a GPU thread sums one (chunk, column), the
// host walks the chunk's rows once for a whole range of columns (contiguous loads).
template <typename T>
struct LayerNormGradParamChunks {
  using C = Acc<T>;
  LayerNormGradArgs a;
  const C* stats;
  C* part;
  A8_HD void Span(int64_t chunk, int64_t j0, int64_t j1) const {
    const T* x = static_cast<const T*>(a.x);
    const T* dy = static_cast<const T*>(a.dy);
    const int64_t chunks = SumChunks(a.outer);
    C* ds = part + chunk * a.inner;
    C* db = part + (chunks + chunk) * a.inner;
    for (int64_t j = j0; j < j1; ++j) ds[j] = db[j] = C(0);
    const int64_t r0 = chunk * kSumChunk;
    const int64_t r1 = a.outer < r0 + kSumChunk ? a.outer : r0 + kSumChunk;
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * a.inner;
      const T* gr = dy + r * a.inner;
      const C m = stats[r], inv = stats[a.outer + r];
      for (int64_t j = j0; j < j1; ++j) {
        const C g = Ld(gr, j);
        ds[j] += g * (Ld(xr, j) - m) * inv;
        db[j] += g;
      }
    }
  }
};

// Pass 2, row-shaped over one row of `inner`: the chunks' sums in order.
template <typename T>
struct LayerNormGradParams {
  using C = Acc<T>;
  LayerNormGradArgs a;
  const C* part;
  A8_HD void Span(int64_t, int64_t j0, int64_t j1) const {
    const int64_t chunks = SumChunks(a.outer);
    for (int64_t j = j0; j < j1; ++j) {
      C ds = 0, db = 0;
      for (int64_t k = 0; k < chunks; ++k) {
        ds += part[k * a.inner + j];
        db += part[(chunks + k) * a.inner + j];
      }
      if (a.dscale != nullptr) StoreParam(a.param_dtype, a.dscale, j, ds);
      if (a.dbias != nullptr) StoreParam(a.param_dtype, a.dbias, j, db);
    }
  }
};

}  // namespace nn_detail

DevStatus LayerNorm(DevCtx& ctx, const LayerNormArgs& a) {
  using namespace nn_detail;
  return DispatchWithStats(ctx, a.dtype, 2 * a.outer, [&](auto tag, auto* stats) -> DevStatus {
    using T = decltype(tag);
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, a.outer, LayerNormRows<T>{a, stats}, 2 * a.inner));
    return DispatchFloat(a.param_dtype, [&](auto ptag) -> DevStatus {
      return ForEachRow(ctx, a.outer, a.inner, LayerNormApply<T, decltype(ptag)>{a, stats});
    });
  });
}

DevStatus LayerNormGrad(DevCtx& ctx, const LayerNormGradArgs& a) {
  using namespace nn_detail;
  const int64_t chunks = SumChunks(a.outer);
  return DispatchWithStats(
      ctx, a.dtype, 4 * a.outer + 2 * chunks * a.inner, [&](auto tag, auto* stats) -> DevStatus {
        using T = decltype(tag);
        using C = Acc<T>;
        // The forward normalized with statistics of the compute type; a narrower stash is only a
        // rounded copy of them, so recompute instead (as the CPU kernel does).
        const bool exact_stash = !std::is_same_v<C, double> || a.stat_dtype == DType::kF64;
        const bool have_stats = a.mean != nullptr && a.inv_std_dev != nullptr && exact_stash;
        A8_DEV_RETURN_IF_ERROR(DispatchFloat(a.param_dtype, [&](auto ptag) -> DevStatus {
          return ForEach(ctx, a.outer, LayerNormGradRows<T, decltype(ptag)>{a, have_stats, stats},
                         3 * a.inner);
        }));
        if (a.dx != nullptr) {
          A8_DEV_RETURN_IF_ERROR(DispatchFloat(a.param_dtype, [&](auto ptag) -> DevStatus {
            return ForEachRow(ctx, a.outer, a.inner, LayerNormGradDx<T, decltype(ptag)>{a, stats});
          }));
        }
        if (a.dscale == nullptr && a.dbias == nullptr) return DevOk();
        C* part = stats + 4 * a.outer;
        A8_DEV_RETURN_IF_ERROR(ForEachRow(ctx, chunks, a.inner,
                                          LayerNormGradParamChunks<T>{a, stats, part}, kSumChunk));
        return ForEachRow(ctx, 1, a.inner, LayerNormGradParams<T>{a, part}, chunks);
      });
}

}  // namespace a8::A8_DEV_NS

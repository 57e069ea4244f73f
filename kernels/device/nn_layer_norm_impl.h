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
// chain of dependent adds): lane l adds the terms of elements l, l + 8, ... of the row's body
// (its first n - n % 8 elements), LaneTree adds the lanes, then the tail's terms follow in order.
// The term of element x is x for the mean, (x - mean)^2 for the variance.
constexpr int64_t kMomentLanes = 8;

template <typename C>
A8_HD C LaneTree(const C* l) {
  return ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
}

template <bool kSquare, typename T, typename C>
A8_HD C MomentTerm(const T* x, int64_t i, C m) {
  const C v = Ld(x, i);
  if constexpr (kSquare) {
    return (v - m) * (v - m);
  } else {
    return v;
  }
}

// The lanes' sum plus the tail's terms, over n (0 for an empty row).
template <bool kSquare, typename T, typename C>
A8_HD C FinishMoment(const C* lanes, const T* x, int64_t n, C m) {
  C sum = LaneTree(lanes);
  for (int64_t i = n - n % kMomentLanes; i < n; ++i) sum += MomentTerm<kSquare>(x, i, m);
  return n > 0 ? sum / static_cast<C>(n) : C(0);
}

// One moment of a row by one thread, the lanes advancing together.
template <bool kSquare, typename T, typename C>
A8_HD C RowMoment(const T* x, int64_t n, C m) {
  C lanes[kMomentLanes] = {};
  for (int64_t i = 0; i < n - n % kMomentLanes; i += kMomentLanes) {
    for (int64_t l = 0; l < kMomentLanes; ++l) lanes[l] += MomentTerm<kSquare>(x, i + l, m);
  }
  return FinishMoment<kSquare>(lanes, x, n, m);
}

template <typename T, typename C = Acc<T>>
A8_HD void RowMoments(const T* x, int64_t n, C* mean, C* var) {
  *mean = RowMoment<false>(x, n, C(0));
  *var = RowMoment<true>(x, n, *mean);
}

// RowMoments for long rows with a thread a lane (LayerNormStats): lane l of row r's mean
// (kSquare false) or variance (true, around means[r]) into part[r * kMomentLanes + l]. The same
// terms in the same order as RowMoment's lane l, so the same bits.
template <typename T, bool kSquare>
struct MomentLaneFn {
  using C = Acc<T>;
  const T* x;
  int64_t inner;
  const C* means;  // kSquare only
  C* part;
  A8_HD void operator()(int64_t idx) const {
    const int64_t r = idx / kMomentLanes, l = idx - r * kMomentLanes;
    const T* row = x + r * inner;
    const C m = kSquare ? means[r] : C(0);
    C s = 0;
    for (int64_t i = l; i < inner - inner % kMomentLanes; i += kMomentLanes)
      s += MomentTerm<kSquare>(row, i, m);
    part[idx] = s;
  }
};

// ---- LayerNormalization: rows of `inner` elements. stats: [rows] means, [rows] inv stds, and
// the forward's optional Mean and InvStdDev outputs (the gradient recomputes the statistics
// with the same body, so they are the forward's own bits).
template <typename T>
struct LayerNormRows {
  using C = Acc<T>;
  const T* x;
  int64_t rows, inner;
  float epsilon;
  DType stat_dtype;
  void* mean_out;
  void* inv_std_out;
  C* stats;
  A8_HD void operator()(int64_t r) const {
    C m, v;
    RowMoments(x + r * inner, inner, &m, &v);
    Store(r, m, v);
  }
  A8_HD void Store(int64_t r, C m, C v) const {
    const C inv = C(1) / Sqrt(v + static_cast<C>(epsilon));
    stats[r] = m;
    stats[rows + r] = inv;
    if (mean_out != nullptr) StoreParam(stat_dtype, mean_out, r, m);
    if (inv_std_out != nullptr) StoreParam(stat_dtype, inv_std_out, r, inv);
  }
};

// The lane path's per-row steps: the mean from its lanes (stats[r]), then the variance from its
// lanes and LayerNormRows' stores.
template <typename T>
struct MomentRowFn {
  using C = Acc<T>;
  LayerNormRows<T> rows_fn;
  const C* part;
  bool variance;
  A8_HD void operator()(int64_t r) const {
    const T* row = rows_fn.x + r * rows_fn.inner;
    const C* lanes = part + r * kMomentLanes;
    if (!variance) {
      rows_fn.stats[r] = FinishMoment<false>(lanes, row, rows_fn.inner, C(0));
      return;
    }
    const C m = rows_fn.stats[r];
    rows_fn.Store(r, m, FinishMoment<true>(lanes, row, rows_fn.inner, m));
  }
};

// On a GPU, rows of at least kLongRow elements take the lane path, a thread a (row, lane), where
// one a row left the GPU with a few thousand threads reading a row's stride apart (BERT-base:
// 4,096 rows of 768, 0.2 ms a LayerNorm on an H200). The host keeps one call a row, its lanes in
// vector registers (the lane path there measured 3x slower: a row read with a stride of 8, once
// a lane): the same terms in the same order, so the same bits (a8_gpu_tests compares the GPU
// with the host on rows of both kinds).
constexpr int64_t kLongRow = 256;

// LayerNormRows over every row; `part` holds rows * kMomentLanes values.
template <typename T>
DevStatus LayerNormStats(DevCtx& ctx, const LayerNormRows<T>& f, Acc<T>* part) {
#if defined(__CUDACC__)
  if (f.inner >= kLongRow) {
    const int64_t lanes = f.rows * kMomentLanes;
    A8_DEV_RETURN_IF_ERROR(
        ForEach(ctx, lanes, MomentLaneFn<T, false>{f.x, f.inner, nullptr, part}));
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, f.rows, MomentRowFn<T>{f, part, false}));
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, lanes, MomentLaneFn<T, true>{f.x, f.inner, f.stats, part}));
    return ForEach(ctx, f.rows, MomentRowFn<T>{f, part, true});
  }
#else
  (void)part;
#endif
  return ForEach(ctx, f.rows, f, 2 * f.inner);
}

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
template <typename C>
struct GivenRowStats {
  LayerNormGradArgs a;
  C* stats;
  A8_HD void operator()(int64_t r) const {
    stats[r] = Param<C>(a.stat_dtype, a.mean, r);
    stats[a.outer + r] = Param<C>(a.stat_dtype, a.inv_std_dev, r);
  }
};

// The two lane sums of a row: g and g * xhat.
template <typename T, typename P>
struct GradRowTerms {
  using C = Acc<T>;
  LayerNormGradArgs a;
  const C* stats;
  A8_HD void Terms(int64_t r, int64_t i, C* acc) const {
    const int64_t at = r * a.inner + i;
    const C g = Ld(static_cast<const T*>(a.dy), at) * ParamOf<C>(static_cast<const P*>(a.scale), i);
    acc[0] += g;
    acc[1] += g * (Ld(static_cast<const T*>(a.x), at) - stats[r]) * stats[a.outer + r];
  }
};

template <typename C>
struct GradRowMeansFn {
  const C* part;
  int64_t rows, inner;
  C* stats;
  A8_HD void operator()(int64_t r) const {
    const C n = static_cast<C>(inner);
    stats[2 * rows + r] = SumRowLanes(part, rows, r, 0) / n;
    stats[3 * rows + r] = SumRowLanes(part, rows, r, 1) / n;
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
  return DispatchWithStats(
      ctx, a.dtype, (2 + kMomentLanes) * a.outer, [&](auto tag, auto* stats) -> DevStatus {
        using T = decltype(tag);
        A8_DEV_RETURN_IF_ERROR(LayerNormStats<T>(
            ctx,
            LayerNormRows<T>{static_cast<const T*>(a.x), a.outer, a.inner, a.epsilon, a.stat_dtype,
                             a.mean, a.inv_std_dev, stats},
            stats + 2 * a.outer));
        return DispatchFloat(a.param_dtype, [&](auto ptag) -> DevStatus {
          return ForEachRow(ctx, a.outer, a.inner, LayerNormApply<T, decltype(ptag)>{a, stats});
        });
      });
}

DevStatus LayerNormGrad(DevCtx& ctx, const LayerNormGradArgs& a) {
  using namespace nn_detail;
  const int64_t chunks = SumChunks(a.outer);
  return DispatchWithStats(
      ctx, a.dtype, (4 + 2 * kRowLanes) * a.outer + 2 * chunks * a.inner,
      [&](auto tag, auto* stats) -> DevStatus {
        using T = decltype(tag);
        using C = Acc<T>;
        const T* x = static_cast<const T*>(a.x);
        C* rows = stats + 4 * a.outer;  // the lane sums, [2][outer][kRowLanes]
        // The forward normalized with statistics of the compute type; a narrower stash is only a
        // rounded copy of them, so recompute instead (the forward's own arithmetic).
        const bool exact_stash = !std::is_same_v<C, double> || a.stat_dtype == DType::kF64;
        if (a.mean != nullptr && a.inv_std_dev != nullptr && exact_stash) {
          A8_DEV_RETURN_IF_ERROR(ForEach(ctx, a.outer, GivenRowStats<C>{a, stats}));
        } else {
          A8_DEV_RETURN_IF_ERROR(
              LayerNormStats<T>(ctx,
                                LayerNormRows<T>{x, a.outer, a.inner, a.epsilon, a.stat_dtype,
                                                 nullptr, nullptr, stats},
                                rows));
        }
        if (a.dx != nullptr) {
          A8_DEV_RETURN_IF_ERROR(DispatchFloat(a.param_dtype, [&](auto ptag) -> DevStatus {
            return ForEachRowLanes<2>(ctx, a.outer, a.inner,
                                      GradRowTerms<T, decltype(ptag)>{a, stats}, rows);
          }));
          A8_DEV_RETURN_IF_ERROR(
              ForEach(ctx, a.outer, GradRowMeansFn<C>{rows, a.outer, a.inner, stats}, kRowLanes));
          A8_DEV_RETURN_IF_ERROR(DispatchFloat(a.param_dtype, [&](auto ptag) -> DevStatus {
            return ForEachRow(ctx, a.outer, a.inner, LayerNormGradDx<T, decltype(ptag)>{a, stats});
          }));
        }
        if (a.dscale == nullptr && a.dbias == nullptr) return DevOk();
        C* part = rows + 2 * kRowLanes * a.outer;
        A8_DEV_RETURN_IF_ERROR(ForEachRow(ctx, chunks, a.inner,
                                          LayerNormGradParamChunks<T>{a, stats, part}, kSumChunk));
        return ForEachRow(ctx, 1, a.inner, LayerNormGradParams<T>{a, part}, chunks);
      });
}

}  // namespace a8::A8_DEV_NS

// The fused attention kernels, forward and backward (declared in attention.h).
#include <cmath>

#include "kernels/device/attention.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS::attention {
namespace {

A8_HD float Exp(float v) { return ::expf(v); }
A8_HD double Exp(double v) { return ::exp(v); }
A8_HD float Log(float v) { return ::logf(v); }
A8_HD double Log(double v) { return ::log(v); }

A8_HD int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }
A8_HD int64_t Chunks(int64_t n) { return (n + kDimChunk - 1) / kDimChunk; }

// Work item `idx` of a launch over (row, chunk of a `width`-wide row): the row, the chunk's
// first column and its width.
struct RowChunk {
  int64_t row, d0, n;
  A8_HD RowChunk(int64_t idx, int64_t width) {
    const int64_t chunks = Chunks(width);
    row = idx / chunks;
    d0 = (idx % chunks) * kDimChunk;
    n = Min(width - d0, kDimChunk);
  }
};

// Query row `row` (= (b * heads + h) * sq + i) of an attention as its batch, head and position.
struct QueryIndex {
  int64_t b, h, i;
  A8_HD QueryIndex(int64_t row, const AttentionParams& p) {
    i = row % p.sq;
    h = (row / p.sq) % p.heads;
    b = row / (p.sq * p.heads);
  }
};

// What every kernel of one attention reads: the operands, typed, and the score of a (query,
// key) pair. T: Q/K/V/Y's element type, Bt: the bias's, A: the accumulation type.
template <typename T, typename Bt>
struct Operands {
  using A = Acc<T>;
  AttentionParams p;

  A8_HD int64_t Group() const { return p.heads / p.kv_heads; }
  // The first key a query row may not see (all keys without is_causal).
  A8_HD int64_t KeyEnd(int64_t i) const {
    if (!p.causal) return p.sk;
    const int64_t end = i + p.causal_offset + 1;
    return end < 0 ? 0 : Min(end, p.sk);
  }
  // The first query row that may see key j.
  A8_HD int64_t QueryBegin(int64_t j) const {
    if (!p.causal) return 0;
    const int64_t begin = j - p.causal_offset;
    return begin < 0 ? 0 : Min(begin, p.sq);
  }
  A8_HD const T* QRow(int64_t b, int64_t h, int64_t i) const {
    return static_cast<const T*>(p.q) + ((b * p.heads + h) * p.sq + i) * p.d;
  }
  A8_HD const T* KRow(int64_t b, int64_t h, int64_t j) const {
    return static_cast<const T*>(p.k) + ((b * p.kv_heads + h / Group()) * p.sk + j) * p.d;
  }
  A8_HD const T* VRow(int64_t b, int64_t h, int64_t j) const {
    return static_cast<const T*>(p.v) + ((b * p.kv_heads + h / Group()) * p.sk + j) * p.dv;
  }
  // scale * q_i . k_j + bias_ij, in A.
  A8_HD A Score(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const T* q = QRow(b, h, i);
    const T* k = KRow(b, h, j);
    A dot = A(0);
    for (int64_t t = 0; t < p.d; ++t) dot += Ld(q, t) * Ld(k, t);
    A s = static_cast<A>(p.scale) * dot;
    if (p.bias != nullptr) {
      const int64_t at = b * p.bias_strides[0] + h * p.bias_strides[1] + i * p.bias_strides[2] +
                         j * p.bias_strides[3];
      s += static_cast<A>(Ld(static_cast<const Bt*>(p.bias), at));
    }
    return s;
  }
  // P_ij recomputed from the row's log-sum-exp (0 for a fully masked row, whose LSE is +inf).
  A8_HD A Prob(int64_t b, int64_t h, int64_t i, int64_t j, A lse) const {
    return Exp(Score(b, h, i, j) - lse);
  }
  // dP_ij = dY_i . v_j.
  A8_HD A DProb(const T* dy_row, int64_t b, int64_t h, int64_t j) const {
    const T* v = VRow(b, h, j);
    A dot = A(0);
    for (int64_t t = 0; t < p.dv; ++t) dot += Ld(dy_row, t) * Ld(v, t);
    return dot;
  }
};

// One (query row, chunk of Dv) of the forward: the online softmax over the allowed keys.
template <typename T, typename Bt>
struct ForwardFn {
  Operands<T, Bt> o;
  A8_HD void operator()(int64_t idx) const {
    using A = Acc<T>;
    const AttentionParams& p = o.p;
    const auto [row, d0, n] = RowChunk(idx, p.dv);
    const auto [b, h, i] = QueryIndex(row, p);
    A acc[kDimChunk];
    for (int64_t t = 0; t < n; ++t) acc[t] = A(0);
    A m = -A(INFINITY), l = A(0);
    const int64_t end = o.KeyEnd(i);
    for (int64_t j = 0; j < end; ++j) {
      const A s = o.Score(b, h, i, j);
      if (s == -A(INFINITY)) continue;  // masked: no weight (and no exp(-inf + inf))
      if (s > m) {
        const A corr = Exp(m - s);
        l *= corr;
        for (int64_t t = 0; t < n; ++t) acc[t] *= corr;
        m = s;
      }
      const A e = Exp(s - m);
      l += e;
      const T* v = o.VRow(b, h, j) + d0;
      for (int64_t t = 0; t < n; ++t) acc[t] += e * Ld(v, t);
    }
    T* y = static_cast<T*>(p.y) + row * p.dv + d0;
    const bool empty = l == A(0);
    for (int64_t t = 0; t < n; ++t) St(y, t, empty ? A(0) : acc[t] / l);
    if (d0 == 0) static_cast<A*>(p.lse)[row] = empty ? A(INFINITY) : m + Log(l);
  }
};

// D_i = rowsum(dY_i * Y_i), one query row.
template <typename T>
struct DeltaFn {
  AttentionGradParams g;
  Acc<T>* delta;
  A8_HD void operator()(int64_t row) const {
    using A = Acc<T>;
    const T* dy = static_cast<const T*>(g.dy) + row * g.fwd.dv;
    const T* y = static_cast<const T*>(g.fwd.y) + row * g.fwd.dv;
    A sum = A(0);
    for (int64_t t = 0; t < g.fwd.dv; ++t) sum += Ld(dy, t) * Ld(y, t);
    delta[row] = sum;
  }
};

// What the gradient kernels read: the forward's operands, dY, and D (DeltaFn's rows).
template <typename T, typename Bt>
struct GradOperands {
  using A = Acc<T>;
  Operands<T, Bt> o;
  AttentionGradParams g;
  const A* delta;

  // Query row `qrow` (= (b * heads + h) * sq + i): its log-sum-exp and its row of dY.
  A8_HD A Lse(int64_t qrow) const { return static_cast<const A*>(o.p.lse)[qrow]; }
  A8_HD const T* DyRow(int64_t qrow) const { return static_cast<const T*>(g.dy) + qrow * o.p.dv; }
  // dS_ij = P_ij (dP_ij - D_i), given P_ij.
  A8_HD A DScore(A pr, const T* dy, int64_t b, int64_t h, int64_t j, int64_t qrow) const {
    return pr * (o.DProb(dy, b, h, j) - delta[qrow]);
  }
};

// One (query row, chunk of D) of dQ = scale sum_j dS_ij k_j.
template <typename T, typename Bt>
struct GradQFn {
  GradOperands<T, Bt> go;
  A8_HD void operator()(int64_t idx) const {
    using A = Acc<T>;
    const Operands<T, Bt>& o = go.o;
    const AttentionParams& p = o.p;
    const auto [row, d0, n] = RowChunk(idx, p.d);
    const auto [b, h, i] = QueryIndex(row, p);
    const A lse = go.Lse(row);
    const T* dy = go.DyRow(row);
    A acc[kDimChunk];
    for (int64_t t = 0; t < n; ++t) acc[t] = A(0);
    const int64_t end = o.KeyEnd(i);
    for (int64_t j = 0; j < end; ++j) {
      const A pr = o.Prob(b, h, i, j, lse);
      if (pr == A(0)) continue;
      const A ds = go.DScore(pr, dy, b, h, j, row);
      const T* k = o.KRow(b, h, j) + d0;
      for (int64_t t = 0; t < n; ++t) acc[t] += ds * Ld(k, t);
    }
    T* dq = static_cast<T*>(go.g.dq) + row * p.d + d0;
    for (int64_t t = 0; t < n; ++t) St(dq, t, static_cast<A>(p.scale) * acc[t]);
  }
};

// One (key row of a kv head, chunk) of dK (kValues false: scale sum_i dS_ij q_i) or dV (kValues
// true: sum_i P_ij dY_i), over the query heads of the kv head's group in order.
template <typename T, typename Bt, bool kValues>
struct GradKVFn {
  GradOperands<T, Bt> go;
  A8_HD void operator()(int64_t idx) const {
    using A = Acc<T>;
    const Operands<T, Bt>& o = go.o;
    const AttentionParams& p = o.p;
    const int64_t width = kValues ? p.dv : p.d;
    const auto [row, d0, n] = RowChunk(idx, width);
    const int64_t j = row % p.sk, hk = (row / p.sk) % p.kv_heads, b = row / (p.sk * p.kv_heads);
    A acc[kDimChunk];
    for (int64_t t = 0; t < n; ++t) acc[t] = A(0);
    const int64_t group = o.Group();
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
      for (int64_t i = o.QueryBegin(j); i < p.sq; ++i) {
        const int64_t qrow = (b * p.heads + h) * p.sq + i;
        const A pr = o.Prob(b, h, i, j, go.Lse(qrow));
        if (pr == A(0)) continue;
        const T* dy = go.DyRow(qrow);
        if constexpr (kValues) {
          for (int64_t t = 0; t < n; ++t) acc[t] += pr * Ld(dy + d0, t);
        } else {
          const A ds = go.DScore(pr, dy, b, h, j, qrow);
          const T* q = o.QRow(b, h, i) + d0;
          for (int64_t t = 0; t < n; ++t) acc[t] += ds * Ld(q, t);
        }
      }
    }
    T* out = static_cast<T*>(kValues ? go.g.dv : go.g.dk) + row * width + d0;
    const A factor = kValues ? A(1) : static_cast<A>(p.scale);
    for (int64_t t = 0; t < n; ++t) St(out, t, factor * acc[t]);
  }
};

// One element of dBias: dS summed over the (b, h, i, j) the bias element is broadcast to.
template <typename T, typename Bt>
struct GradBiasFn {
  GradOperands<T, Bt> go;
  A8_HD void operator()(int64_t idx) const {
    using A = Acc<T>;
    const Operands<T, Bt>& o = go.o;
    const AttentionParams& p = o.p;
    const int64_t full[4] = {p.batch, p.heads, p.sq, p.sk};
    int64_t at[4], lo[4], hi[4];
    int64_t rest = idx;
    for (int a = 3; a >= 0; --a) {
      at[a] = rest % p.bias_dims[a];
      rest /= p.bias_dims[a];
      const bool broadcast = p.bias_dims[a] == 1 && full[a] != 1;
      lo[a] = broadcast ? 0 : at[a];
      hi[a] = broadcast ? full[a] : at[a] + 1;
    }
    A sum = A(0);
    for (int64_t b = lo[0]; b < hi[0]; ++b) {
      for (int64_t h = lo[1]; h < hi[1]; ++h) {
        for (int64_t i = lo[2]; i < hi[2]; ++i) {
          const int64_t qrow = (b * p.heads + h) * p.sq + i;
          const A lse = go.Lse(qrow);
          const T* dy = go.DyRow(qrow);
          const int64_t end = Min(hi[3], o.KeyEnd(i));
          for (int64_t j = lo[3]; j < end; ++j) {
            const A pr = o.Prob(b, h, i, j, lse);
            if (pr == A(0)) continue;
            sum += go.DScore(pr, dy, b, h, j, qrow);
          }
        }
      }
    }
    static_cast<Bt*>(go.g.dbias)[idx] = Elem<Bt>::Store(static_cast<Acc<Bt>>(sum));
  }
};

DevStatus CheckParams(const AttentionParams& p, const char* op) {
  if (p.batch < 0 || p.heads < 1 || p.kv_heads < 1 || p.heads % p.kv_heads != 0 || p.sq < 0 ||
      p.sk < 0 || p.d < 1 || p.dv < 1)
    return DevError(std::string(op) + ": bad dims (heads must be a multiple of kv heads)");
  if (p.bias != nullptr && p.bias_dtype != p.dtype && p.bias_dtype != DType::kF32)
    return DevError(std::string(op) + ": the bias must have Q's dtype or f32");
  return DevOk();
}

// Runs fn(T{}, Bt{}) for the operands' element types.
template <typename Fn>
DevStatus DispatchTypes(const AttentionParams& p, Fn&& fn) {
  return DispatchFloat(p.dtype, [&](auto t) {
    if (p.bias != nullptr && p.bias_dtype != p.dtype) return fn(t, float{});
    return fn(t, t);
  });
}

}  // namespace

DevStatus FusedAttention(DevCtx& ctx, const AttentionParams& p) {
  A8_DEV_RETURN_IF_ERROR(CheckParams(p, "FusedAttention"));
  const int64_t rows = p.batch * p.heads * p.sq;
  return DispatchTypes(p, [&](auto t, auto bt) {
    using T = decltype(t);
    using Bt = decltype(bt);
    return ForEach(ctx, rows * Chunks(p.dv), ForwardFn<T, Bt>{Operands<T, Bt>{p}},
                   p.sk * (p.d + Min(p.dv, kDimChunk) + 8));
  });
}

DevStatus FusedAttentionGrad(DevCtx& ctx, const AttentionGradParams& g) {
  const AttentionParams& p = g.fwd;
  A8_DEV_RETURN_IF_ERROR(CheckParams(p, "FusedAttentionGrad"));
  if (g.dbias != nullptr && p.bias == nullptr)
    return DevError("FusedAttentionGrad: dBias without a bias");
  const int64_t rows = p.batch * p.heads * p.sq, kv_rows = p.batch * p.kv_heads * p.sk;
  return DispatchTypes(p, [&](auto t, auto bt) {
    using T = decltype(t);
    using Bt = decltype(bt);
    using A = Acc<T>;
    A* delta = nullptr;
    A8_DEV_RETURN_IF_ERROR(ScratchOf(ctx, rows, &delta));
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, rows, DeltaFn<T>{g, delta}, p.dv));
    const Operands<T, Bt> o{p};
    const GradOperands<T, Bt> go{o, g, delta};
    const int64_t pair = p.d + p.dv + 8;  // one (query, key) pair's work
    if (g.dq != nullptr) {
      A8_DEV_RETURN_IF_ERROR(ForEach(ctx, rows * Chunks(p.d), GradQFn<T, Bt>{go}, p.sk * pair));
    }
    const int64_t per_key = o.Group() * p.sq * pair;
    if (g.dk != nullptr) {
      A8_DEV_RETURN_IF_ERROR(
          ForEach(ctx, kv_rows * Chunks(p.d), GradKVFn<T, Bt, false>{go}, per_key));
    }
    if (g.dv != nullptr) {
      A8_DEV_RETURN_IF_ERROR(
          ForEach(ctx, kv_rows * Chunks(p.dv), GradKVFn<T, Bt, true>{go}, per_key));
    }
    if (g.dbias == nullptr) return DevOk();
    const int64_t bias_size = p.bias_dims[0] * p.bias_dims[1] * p.bias_dims[2] * p.bias_dims[3];
    return ForEach(ctx, bias_size, GradBiasFn<T, Bt>{go},
                   rows * p.sk * pair / (bias_size > 0 ? bias_size : 1) + 1);
  });
}

}  // namespace a8::A8_DEV_NS::attention

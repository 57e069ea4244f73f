// The ScatterND, ScatterElements and TopK kernels (declared in scatter.h).
#include "kernels/device/launch.h"
#include "kernels/device/scatter.h"

namespace a8::A8_DEV_NS::scatter {
namespace {

// `acc` combined with the update `u` by `reduction` (kNone: u).
template <typename A>
A8_HD A Combine(int reduction, A acc, A u) {
  switch (reduction) {
    case kAdd:
      return static_cast<A>(acc + u);
    case kMul:
      return static_cast<A>(acc * u);
    case kMax:
      return u > acc ? u : acc;
    case kMin:
      return u < acc ? u : acc;
    default:
      return u;
  }
}

// y[i] (op)= u[j], in T's arithmetic (f16/bf16 rounded after each update; kNone moves the bits).
template <typename T>
A8_HD void Apply(int reduction, T* y, int64_t i, const T* u, int64_t j) {
  if (reduction == kNone) {
    y[i] = u[j];
  } else {
    St(y, i, Combine<Acc<T>>(reduction, Ld(y, i), Ld(u, j)));
  }
}

// Tuple `t` as a cell (row-major offset into data's first `depth` dims), or -1 with the error
// raised for a component out of range.
A8_HD int64_t TupleCell(const ScatterNDParams& p, int64_t t) {
  int64_t cell = 0;
  for (int k = 0; k < p.depth; ++k) {
    const int64_t v =
        NormalizeIndex(LoadIndex(p.index_i32, p.indices, t * p.depth + k), p.index_dims[k]);
    if (v < 0) {
      p.err.Raise();
      return -1;
    }
    cell = cell * p.index_dims[k] + v;
  }
  return cell;
}

// y = data, before the updates.
template <typename T>
struct CopyFn {
  const T* src;
  T* dst;
  A8_HD void operator()(int64_t i) const { dst[i] = src[i]; }
};

// Column s of y (viewed as [cells, slice]): every tuple's update of column s, in tuple order.
template <typename T>
struct ScatterNDFn {
  ScatterNDParams p;
  A8_HD void operator()(int64_t s) const {
    const T* u = static_cast<const T*>(p.updates);
    T* y = static_cast<T*>(p.y);
    for (int64_t t = 0; t < p.nq; ++t) {
      const int64_t cell = TupleCell(p, t);
      if (cell >= 0) Apply(p.reduction, y, cell * p.slice + s, u, t * p.slice + s);
    }
  }
};

// One line of indices along the axis (a coordinate of indices' other dims): its updates in order
// along the axis, into the same line of y.
template <typename T>
struct ScatterElementsFn {
  ScatterElementsParams p;
  int64_t data_strides[kMaxRank];
  int64_t index_strides[kMaxRank];
  A8_HD void operator()(int64_t line) const {
    int64_t rest = line, at = 0, out = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      if (d == p.axis) continue;
      const int64_t c = rest % p.index_dims[d];
      rest /= p.index_dims[d];
      at += c * index_strides[d];
      out += c * data_strides[d];
    }
    const int64_t len = p.data_dims[p.axis];
    T* y = static_cast<T*>(p.y);
    const T* u = static_cast<const T*>(p.updates);
    for (int64_t j = 0; j < p.index_dims[p.axis]; ++j, at += index_strides[p.axis]) {
      const int64_t k = NormalizeIndex(LoadIndex(p.index_i32, p.indices, at), len);
      if (k < 0) {
        p.err.Raise();
      } else {
        Apply(p.reduction, y, out + k * data_strides[p.axis], u, at);
      }
    }
  }
};

template <typename A>
A8_HD bool IsNan(A v) {
  return v != v;
}

// Whether value a ranks before value b (ties never do: the lower index, seen first, stays first).
template <typename A>
A8_HD bool Before(bool largest, A a, A b) {
  const bool an = IsNan(a), bn = IsNan(b);
  if (an || bn) return largest ? an && !bn : bn && !an;
  return largest ? a > b : a < b;
}

template <typename T>
struct TopKFn {
  TopKParams p;
  A8_HD void operator()(int64_t row) const {
    const int64_t o = row / p.inner, c = row % p.inner;
    const T* x = static_cast<const T*>(p.x) + o * p.n * p.inner + c;
    T* vals = static_cast<T*>(p.values) + o * p.k * p.inner + c;
    int64_t* idx = static_cast<int64_t*>(p.indices) + o * p.k * p.inner + c;
    int64_t count = 0;
    for (int64_t i = 0; i < p.n; ++i) {
      const Acc<T> v = Ld(x, i * p.inner);
      if (count == p.k && !Before(p.largest, v, Ld(vals, (p.k - 1) * p.inner))) continue;
      int64_t pos = count < p.k ? count : p.k - 1;
      while (pos > 0 && Before(p.largest, v, Ld(vals, (pos - 1) * p.inner))) {
        vals[pos * p.inner] = vals[(pos - 1) * p.inner];
        idx[pos * p.inner] = idx[(pos - 1) * p.inner];
        --pos;
      }
      vals[pos * p.inner] = x[i * p.inner];
      idx[pos * p.inner] = i;
      if (count < p.k) ++count;
    }
  }
};

}  // namespace

DevStatus ScatterND(DevCtx& ctx, const ScatterNDParams& p) {
  if (p.depth < 1 || p.depth > kMaxRank) return DevError("ScatterND: tuple length out of range");
  if (p.reduction < kNone || p.reduction > kMin) return DevError("ScatterND: unknown reduction");
  int64_t cells = 1;
  for (int k = 0; k < p.depth; ++k) cells *= p.index_dims[k];
  return DispatchAll(p.dtype, [&](auto t) {
    using T = decltype(t);
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, cells * p.slice,
                                   CopyFn<T>{static_cast<const T*>(p.data), static_cast<T*>(p.y)}));
    return ForEach(ctx, p.slice, ScatterNDFn<T>{p}, p.nq * (p.depth + 1));
  });
}

DevStatus ScatterElements(DevCtx& ctx, const ScatterElementsParams& p) {
  if (p.rank < 1 || p.rank > kMaxRank || p.axis < 0 || p.axis >= p.rank)
    return DevError("ScatterElements: rank or axis out of range");
  if (p.reduction < kNone || p.reduction > kMin)
    return DevError("ScatterElements: unknown reduction");
  int64_t n = 1, lines = 1, ds = 1, is = 1;
  for (int k = 0; k < p.rank; ++k) n *= p.data_dims[k];
  return DispatchAll(p.dtype, [&](auto t) {
    using T = decltype(t);
    ScatterElementsFn<T> f{p, {}, {}};
    for (int d = p.rank - 1; d >= 0; --d) {
      f.data_strides[d] = ds;
      f.index_strides[d] = is;
      ds *= p.data_dims[d];
      is *= p.index_dims[d];
      if (d != p.axis) lines *= p.index_dims[d];
    }
    A8_DEV_RETURN_IF_ERROR(
        ForEach(ctx, n, CopyFn<T>{static_cast<const T*>(p.data), static_cast<T*>(p.y)}));
    return ForEach(ctx, lines, f, p.index_dims[p.axis] + 1);
  });
}

DevStatus TopK(DevCtx& ctx, const TopKParams& p) {
  if (p.k < 0 || p.k > p.n) return DevError("TopK: k out of range");
  if (p.k == 0) return DevOk();
  return DispatchAll(p.dtype, [&](auto t) {
    return ForEach(ctx, p.outer * p.inner, TopKFn<decltype(t)>{p}, p.n * 4);
  });
}

}  // namespace a8::A8_DEV_NS::scatter

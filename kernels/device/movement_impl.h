// The data-movement kernels (declared in movement.h): one thread per output element (on the host
// StridedCopy takes whole rows a call, Gather a piece of a row); the values are moved as
// unsigned integers of the element's size, so every dtype takes the same path and the bits are
// kept exactly (NaN payloads, -0).
#include <cstring>
#include <type_traits>

#include "kernels/common/float_to_int.h"
#include "kernels/common/index_div.h"
#include "kernels/device/launch.h"
#include "kernels/device/loss_optim.h"
#include "kernels/device/movement.h"

namespace a8::A8_DEV_NS::movement {
namespace {

// One thread for each element of `dims` (p.rank of them, from min_rank to kMaxMapRank):
// Fn<U>{p} with U the unsigned integer of p.elem_size bytes.
template <template <typename> class Fn, typename P>
DevStatus ForEachOfDims(const DevCtx& ctx, const char* op, const P& p, int min_rank,
                        const int64_t* dims) {
  if (p.rank < min_rank || p.rank > kMaxMapRank) {
    return DevError(std::string(op) + ": rank out of range");
  }
  int64_t n = 1;
  for (int k = 0; k < p.rank; ++k) n *= dims[k];
  return DispatchBySize(p.elem_size, "movement kernel",
                        [&](auto u) { return ForEach(ctx, n, Fn<decltype(u)>{p}); });
}

// The dims and the source moduli divide by multiplication (kernels/common/index_div.h).
template <typename U>
struct StridedCopyFn {
  StridedCopyParams p;
  IndexDiv dims[kMaxMapRank];
  IndexDiv mods[kMaxMapRank];  // src_mod[k] (1 where there is none: unused)

  explicit StridedCopyFn(const StridedCopyParams& params) : p(params) {
    for (int k = 0; k < p.rank; ++k) {
      dims[k] = IndexDiv(p.dims[k] > 0 ? p.dims[k] : 1);
      mods[k] = IndexDiv(p.src_mod[k] > 0 ? p.src_mod[k] : 1);
    }
  }
  struct In {
    U v;
    int64_t d;  // the destination offset
  };
  A8_HD In Load(int64_t i) const {
    int64_t s = p.src_base, d = p.dst_base, rest = i;
    for (int k = p.rank - 1; k >= 0; --k) {
      int64_t c = 0;
      rest = dims[k].DivMod(rest, &c);
      d += c * p.dst_strides[k];
      if (p.src_mod[k] > 0) mods[k].DivMod(c, &c);
      s += c * p.src_strides[k];
    }
    return {static_cast<const U*>(p.src)[s], d};
  }
  A8_HD void Store(int64_t, const In& in) const { static_cast<U*>(p.dst)[in.d] = in.v; }
  A8_HD void operator()(int64_t i) const { Store(i, Load(i)); }

#if !defined(__CUDACC__)
  // The host's launch (StridedCopy): whole rows [r0, r1) of the innermost dim. The first row's
  // offsets are divided out; each next row's follow by carrying an odometer over the outer dims
  // (no division a row: a Transpose of an attention head moves rows of 16 elements). Each row is
  // then a run along the inner dim (a plain copy where both strides are 1: the inner dim of a
  // Transpose that keeps it, a Concat's or Slice's rows).
  void Rows(int64_t r0, int64_t r1) const {
    const int last = p.rank - 1;
    const int64_t n = p.dims[last], ss = p.src_strides[last], ds = p.dst_strides[last];
    const int64_t mod = p.src_mod[last];
    // The run's loop is chosen once a call, not once a row.
    if (mod > 0) {
      RowsOf(r0, r1, [=](const U* src, U* dst) {
        for (int64_t j = 0, c = 0; j < n; ++j) {  // c = j mod src_mod
          dst[j * ds] = src[c * ss];
          if (++c == mod) c = 0;
        }
      });
    } else if (ss == 1 && ds == 1) {
      const size_t bytes = static_cast<size_t>(n) * sizeof(U);
      // memmove: an in-place variadic op's Expand copies a buffer onto itself.
      RowsOf(r0, r1, [=](const U* src, U* dst) { std::memmove(dst, src, bytes); });
    } else if (ds == 1) {  // a Transpose that moves the inner dim: strided reads, a run written
      RowsOf(r0, r1, [=](const U* src, U* dst) {
        for (int64_t j = 0; j < n; ++j) dst[j] = src[j * ss];
      });
    } else {
      RowsOf(r0, r1, [=](const U* src, U* dst) {
        for (int64_t j = 0; j < n; ++j) dst[j * ds] = src[j * ss];
      });
    }
  }

  // run(src row, dst row) for the rows [r0, r1).
  template <typename RunFn>
  void RowsOf(int64_t r0, int64_t r1, const RunFn& run) const {
    const int last = p.rank - 1;
    int64_t c[kMaxMapRank] = {}, sc[kMaxMapRank] = {};  // output and source coordinates
    int64_t s = p.src_base, d = p.dst_base, rest = r0;
    for (int k = last - 1; k >= 0; --k) {
      rest = dims[k].DivMod(rest, &c[k]);
      sc[k] = c[k];
      if (p.src_mod[k] > 0) mods[k].DivMod(c[k], &sc[k]);
      d += c[k] * p.dst_strides[k];
      s += sc[k] * p.src_strides[k];
    }
    const U* src = static_cast<const U*>(p.src);
    U* dst = static_cast<U*>(p.dst);
    for (int64_t r = r0; r < r1; ++r) {
      run(src + s, dst + d);
      for (int k = last - 1; k >= 0; --k) {  // the next row
        d += p.dst_strides[k];
        s += p.src_strides[k];
        if (++sc[k] == p.src_mod[k]) {  // never where src_mod[k] is 0 (no wrap)
          s -= p.src_mod[k] * p.src_strides[k];
          sc[k] = 0;
        }
        if (++c[k] < p.dims[k]) break;
        d -= p.dims[k] * p.dst_strides[k];
        s -= sc[k] * p.src_strides[k];
        c[k] = sc[k] = 0;
      }
    }
  }
#endif
};

template <typename U>
struct GatherFn {
  GatherParams p;
  A8_HD void operator()(int64_t i) const {
    const int64_t c = i % p.inner, t = i / p.inner;
    const int64_t j = t % p.nidx, o = t / p.nidx;
    const int64_t k = NormalizeIndex(LoadIndex(p.index_i32, p.indices, j), p.dim);
    if (k < 0) p.err.Raise();
    static_cast<U*>(p.y)[i] =
        k < 0 ? U{0} : static_cast<const U*>(p.data)[(o * p.dim + k) * p.inner + c];
  }
  // The host's launch (Gather): row r = (o, j) of `inner` elements, its index read once and the
  // run copied (an embedding lookup copies whole rows).
  A8_HD void Span(int64_t r, int64_t c0, int64_t c1) const {
    const int64_t j = r % p.nidx, o = r / p.nidx;
    const int64_t k = NormalizeIndex(LoadIndex(p.index_i32, p.indices, j), p.dim);
    if (k < 0) p.err.Raise();
    U* y = static_cast<U*>(p.y) + r * p.inner;
    const U* x = static_cast<const U*>(p.data) + (o * p.dim + (k < 0 ? 0 : k)) * p.inner;
    for (int64_t c = c0; c < c1; ++c) y[c] = k < 0 ? U{0} : x[c];
  }
};

template <typename U>
struct GatherElementsFn {
  GatherElementsParams p;
  A8_HD void operator()(int64_t i) const {
    const int64_t k = NormalizeIndex(LoadIndex(p.index_i32, p.indices, i), p.axis_dim);
    if (k < 0) {
      p.err.Raise();
      static_cast<U*>(p.y)[i] = U{0};
      return;
    }
    int64_t rest = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rest % p.index_dims[d];
      rest /= p.index_dims[d];
      off += (d == p.axis ? k : c) * p.data_strides[d];
    }
    static_cast<U*>(p.y)[i] = static_cast<const U*>(p.data)[off];
  }
};

// The source index of output coordinate `o` in a dim of size d padded by pb in front, or -1 for
// the constant fill; `mode` as PadMode (kernel_types.h).
A8_HD int64_t PadSource(int64_t o, int64_t d, int64_t pb, int mode) {
  const int64_t i = o - pb;
  if (i >= 0 && i < d) return i;
  if (mode == 3) return ((i % d) + d) % d;  // wrap
  if (mode == 2) return i < 0 ? 0 : d - 1;  // edge
  if (mode == 1) {                          // reflect
    if (d == 1) return 0;
    const int64_t period = 2 * (d - 1);
    const int64_t m = ((i % period) + period) % period;
    return m < d ? m : period - m;
  }
  return -1;
}

template <typename U>
struct PadFn {
  PadParams p;
  A8_HD void operator()(int64_t i) const {
    int64_t rest = i, off = 0, stride = 1;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t src = PadSource(rest % p.out_dims[d], p.in_dims[d], p.pads_begin[d], p.mode);
      rest /= p.out_dims[d];
      if (src < 0) {
        static_cast<U*>(p.y)[i] = p.value != nullptr ? static_cast<const U*>(p.value)[0] : U{0};
        return;
      }
      off += src * stride;
      stride *= p.in_dims[d];
    }
    static_cast<U*>(p.y)[i] = static_cast<const U*>(p.x)[off];
  }
};

template <typename U>
struct TriluFn {
  TriluParams p;
  A8_HD void operator()(int64_t i) const {
    const int64_t k = p.k_ptr == nullptr ? 0
                      : p.k_i32          ? static_cast<const int32_t*>(p.k_ptr)[0]
                                         : static_cast<const int64_t*>(p.k_ptr)[0];
    const int64_t j = i % p.cols, r = (i / p.cols) % p.rows;
    const bool keep = p.upper ? j - r >= k : j - r <= k;
    static_cast<U*>(p.y)[i] = keep ? static_cast<const U*>(p.x)[i] : U{0};
  }
};

template <typename U, typename I>
struct OneHotFn {
  OneHotParams p;
  A8_HD void operator()(int64_t i) const {
    const int64_t in = i % p.inner, t = i / p.inner;
    const int64_t d = t % p.depth, o = t / p.depth;
    const I raw = static_cast<const I*>(p.indices)[o * p.inner + in];
    int64_t v = 0;
    if constexpr (std::is_integral_v<I>) {
      v = static_cast<int64_t>(raw);
    } else {
      v = TruncToI64(ToDouble(raw));
    }
    if (v < 0) v += p.depth;
    static_cast<U*>(p.y)[i] = static_cast<const U*>(p.values)[d == v ? 1 : 0];
  }
};

// f16 / bf16 ranges (RangeParams): numpy's arange in the stash type C, through the _rn
// operations (no FMA contraction on the GPU). A double is rounded to T through a float rounded
// to odd (the nearest float with an odd last bit when inexact), which rounds correctly once more.
template <typename T, typename C>
struct RangeStashFn {
  RangeParams p;
  A8_HD void operator()(int64_t i) const {
    const C s = static_cast<C>(Ld(static_cast<const T*>(p.start), 0));
    const C a1 = rn::Add(s, static_cast<C>(Ld(static_cast<const T*>(p.delta), 0)));
    const C v = i == 0 ? s : i == 1 ? a1 : rn::Add(s, rn::Mul(static_cast<C>(i), rn::Sub(a1, s)));
    float f = static_cast<float>(v);
    if constexpr (std::is_same_v<C, double>) {
      const uint32_t bits = FloatToBits(f);
      if (static_cast<double>(f) != v && (bits & 1u) == 0 && f == f && f - f == 0.0f)
        f = BitsToFloat((v < 0 ? -v : v) > (f < 0 ? -f : f) ? bits + 1u : bits - 1u);
    }
    St(static_cast<T*>(p.y), i, f);
  }
};

// Float ranges: one thread accumulates in the dtype, as ONNX's function body and onnxruntime do
// (start + i * delta would round differently).
template <typename T>
struct RangeSerialFn {
  RangeParams p;
  A8_HD void operator()(int64_t) const {
    T v = static_cast<const T*>(p.start)[0];
    const T d = static_cast<const T*>(p.delta)[0];
    T* y = static_cast<T*>(p.y);
    for (int64_t i = 0; i < p.n; ++i) {
      y[i] = v;
      v = static_cast<T>(v + d);
    }
  }
};

// Integer ranges: start + i * delta in two's complement, the values repeated addition gives.
template <typename T>
struct RangeIntFn {
  RangeParams p;
  A8_HD void operator()(int64_t i) const {
    using W = uint64_t;  // wraps modulo 2^64, so modulo T's width after the cast (no promotion)
    const W s = static_cast<W>(static_cast<int64_t>(static_cast<const T*>(p.start)[0]));
    const W d = static_cast<W>(static_cast<int64_t>(static_cast<const T*>(p.delta)[0]));
    static_cast<T*>(p.y)[i] = static_cast<T>(s + static_cast<W>(i) * d);
  }
};

template <typename U>
struct FillValueFn {
  U value;
  U* y;
  A8_HD void operator()(int64_t i) const { y[i] = value; }
};

struct WriteInt64sFn {
  WriteInt64sParams p;
  A8_HD void operator()(int64_t i) const { static_cast<int64_t*>(p.y)[i] = p.values[i]; }
};

// GatherGrad pass 1: position j's place in the stable sort of the positions by index (an
// out-of-range index sorts last, as `dim`, and matches no row); O(nidx) per position.
struct GatherGradSortFn {
  GatherGradParams p;
  int64_t* sorted_pos;  // [nidx]
  int64_t* sorted_key;  // [nidx]
  A8_HD int64_t Key(int64_t j) const {
    const int64_t k = NormalizeIndex(LoadIndex(p.index_i32, p.indices, j), p.dim);
    if (k < 0) p.err.Raise();
    return k < 0 ? p.dim : k;
  }
  A8_HD void operator()(int64_t j) const {
    const int64_t key = Key(j);
    int64_t at = 0;
    for (int64_t q = 0; q < p.nidx; ++q) {
      const int64_t kq = Key(q);
      if (kq < key || (kq == key && q < j)) ++at;
    }
    sorted_pos[at] = j;
    sorted_key[at] = key;
  }
};

// GatherGrad pass 2: dx[o, d, c] sums dy[o, j, c] over the run of positions j with key d.
template <typename T>
struct GatherGradSumFn {
  GatherGradParams p;
  const int64_t* sorted_pos;
  const int64_t* sorted_key;
  A8_HD void operator()(int64_t i) const {
    const int64_t c = i % p.inner, t = i / p.inner;
    const int64_t d = t % p.dim, o = t / p.dim;
    int64_t lo = 0, hi = p.nidx;  // first sorted place with key >= d
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (sorted_key[mid] < d)
        lo = mid + 1;
      else
        hi = mid;
    }
    const T* dy = static_cast<const T*>(p.dy);
    Acc<T> acc = Acc<T>(0);
    for (int64_t q = lo; q < p.nidx && sorted_key[q] == d; ++q)
      acc += Ld(dy, (o * p.nidx + sorted_pos[q]) * p.inner + c);
    St(static_cast<T*>(p.dx), i, acc);
  }
};

}  // namespace

DevStatus StridedCopy(DevCtx& ctx, const StridedCopyParams& p) {
#if defined(__CUDACC__)
  return ForEachOfDims<StridedCopyFn>(ctx, "StridedCopy", p, 0, p.dims);
#else
  // On the host whole rows at a time (StridedCopyFn::Rows); the same elements to the same places.
  if (p.rank < 1 || p.rank > kMaxMapRank)
    return ForEachOfDims<StridedCopyFn>(ctx, "StridedCopy", p, 0, p.dims);
  int64_t rows = 1;
  for (int k = 0; k + 1 < p.rank; ++k) rows *= p.dims[k];
  const int64_t cols = p.dims[p.rank - 1];
  if (rows <= 0 || cols <= 0) return DevOk();
  return DispatchBySize(p.elem_size, "movement kernel", [&](auto u) {
    const StridedCopyFn<decltype(u)> f{p};
    cpu::ParallelFor(rows, cols, [&f](int64_t r0, int64_t r1) { f.Rows(r0, r1); });
    return DevOk();
  });
#endif
}

DevStatus Gather(DevCtx& ctx, const GatherParams& p) {
  return DispatchBySize(p.elem_size, "movement kernel", [&](auto u) {
#if defined(__CUDACC__)
    return ForEach(ctx, p.outer * p.nidx * p.inner, GatherFn<decltype(u)>{p});
#else
    // On the host a row of `inner` at a time (GatherFn::Span): the same values and errors.
    return ForEachRow(ctx, p.outer * p.nidx, p.inner, GatherFn<decltype(u)>{p});
#endif
  });
}

DevStatus GatherElements(DevCtx& ctx, const GatherElementsParams& p) {
  return ForEachOfDims<GatherElementsFn>(ctx, "GatherElements", p, 1, p.index_dims);
}

DevStatus Pad(DevCtx& ctx, const PadParams& p) {
  return ForEachOfDims<PadFn>(ctx, "Pad", p, 0, p.out_dims);
}

DevStatus Trilu(DevCtx& ctx, const TriluParams& p) {
  if (p.rows <= 0 || p.cols <= 0) return DevOk();
  return DispatchBySize(p.elem_size, "movement kernel",
                        [&](auto u) { return ForEach(ctx, p.count, TriluFn<decltype(u)>{p}); });
}

DevStatus OneHot(DevCtx& ctx, const OneHotParams& p) {
  return DispatchBySize(p.elem_size, "movement kernel", [&](auto u) {
    using U = decltype(u);
    return DispatchAll(p.index_dtype, [&](auto idx) {
      return ForEach(ctx, p.outer * p.depth * p.inner, OneHotFn<U, decltype(idx)>{p});
    });
  });
}

DevStatus Range(DevCtx& ctx, const RangeParams& p) {
  if (p.n <= 0) return DevOk();
  switch (p.dtype) {
    case DType::kF32:
      return ForEach(ctx, 1, RangeSerialFn<float>{p});
    case DType::kF64:
      return ForEach(ctx, 1, RangeSerialFn<double>{p});
    case DType::kI64:
      return ForEach(ctx, p.n, RangeIntFn<int64_t>{p});
    case DType::kI32:
      return ForEach(ctx, p.n, RangeIntFn<int32_t>{p});
    case DType::kI16:  // constant folding's (no backend lists i16 Range)
      return ForEach(ctx, p.n, RangeIntFn<int16_t>{p});
    case DType::kF16:
      if (p.stash == DType::kF64) return ForEach(ctx, p.n, RangeStashFn<Half, double>{p});
      return ForEach(ctx, p.n, RangeStashFn<Half, float>{p});
    case DType::kBF16:
      if (p.stash == DType::kF64) return ForEach(ctx, p.n, RangeStashFn<BF16, double>{p});
      return ForEach(ctx, p.n, RangeStashFn<BF16, float>{p});
    default:
      return DevError("Range: dtype must be f32, f64, f16, bf16, i64, i32 or i16");
  }
}

DevStatus FillValue(DevCtx& ctx, const FillValueParams& p) {
  return DispatchBySize(p.elem_size, "movement kernel", [&](auto u) {
    using U = decltype(u);
    return ForEach(ctx, p.n, FillValueFn<U>{static_cast<U>(p.bits), static_cast<U*>(p.y)});
  });
}

DevStatus WriteInt64s(DevCtx& ctx, const WriteInt64sParams& p) {
  if (p.n < 0 || p.n > kMaxShapeValues) return DevError("WriteInt64s: too many values");
  return ForEach(ctx, p.n, WriteInt64sFn{p});
}

DevStatus GatherGrad(DevCtx& ctx, const GatherGradParams& p) {
  void* scratch = nullptr;
  const int64_t slots = p.nidx > 0 ? p.nidx : 1;
  A8_DEV_RETURN_IF_ERROR(Scratch(ctx, 2 * static_cast<size_t>(slots) * sizeof(int64_t), &scratch));
  int64_t* sorted_pos = static_cast<int64_t*>(scratch);
  int64_t* sorted_key = sorted_pos + slots;
  A8_DEV_RETURN_IF_ERROR(ForEach(ctx, p.nidx, GatherGradSortFn{p, sorted_pos, sorted_key}));
  return DispatchFloat(p.dtype, [&](auto t) {
    return ForEach(ctx, p.outer * p.dim * p.inner,
                   GatherGradSumFn<decltype(t)>{p, sorted_pos, sorted_key});
  });
}

}  // namespace a8::A8_DEV_NS::movement

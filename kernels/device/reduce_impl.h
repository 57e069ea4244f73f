// The reduction family's kernels (reduce.h; Softmax and its gradient are softmax_impl.h), compiled
// once for the GPU and once for its host emulation (kernels/device/device.h), which the CPU
// backend and constant folding run. GlobalNormSq repeats its CPU reference's arithmetic
// (kernels/cpu/optim.cc) operation for operation; the comments name where a choice is not the
// obvious one.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/common/float_to_int.h"
#include "kernels/common/sum_order.h"
#include "kernels/common/unary_math.h"
#include "kernels/device/launch.h"
#include "kernels/device/reduce.h"
#include "kernels/device/reduce_axis.h"

namespace a8::A8_DEV_NS {
namespace reduce_detail {

// Integer sums and products wrap, as ONNX's integer arithmetic does; unsigned
// arithmetic makes that defined.
template <typename A>
A8_HD A Add(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    return a + b;
  } else {
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
}
template <typename A>
A8_HD A Mul(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    return a * b;
  } else {
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
}

// Row-major walk over a (rank <= kMaxRank) index space with element strides: `off` is the
// offset of the current element. The last axis is the fast path (no array access).
struct Cursor {
  int64_t off = 0;
  int64_t k = 0;
  int64_t idx[kMaxRank] = {};

  A8_HD void Next(const Shape& s) {
    if (s.rank == 0) return;
    const int last = s.rank - 1;
    off += s.strides[last];
    if (++k < s.dims[last]) return;
    off -= k * s.strides[last];
    k = 0;
    for (int d = last - 1; d >= 0; --d) {
      off += s.strides[d];
      if (++idx[d] < s.dims[d]) return;
      off -= idx[d] * s.strides[d];
      idx[d] = 0;
    }
  }
};

// A Cursor at the r-th element (row-major over s.dims) of the space starting at `base`.
A8_HD Cursor CursorAt(const Shape& s, int64_t base, int64_t r) {
  Cursor c{base};
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t q = r / s.dims[d];
    const int64_t i = r - q * s.dims[d];
    if (d == s.rank - 1) {
      c.k = i;
    } else {
      c.idx[d] = i;
    }
    c.off += i * s.strides[d];
    r = q;
  }
  return c;
}

// Offset of the `o`-th element (row-major over s.dims) through s.strides.
A8_HD int64_t OffsetOf(const Shape& s, int64_t o) {
  int64_t off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t q = o / s.dims[d];
    off += (o - q * s.dims[d]) * s.strides[d];
    o = q;
  }
  return off;
}

// One output of a reduction; A is the accumulator: the float compute type for float T, int64
// for integers, double for integer L2/LogSumExp (stored truncated, like the CPU's Cast).
template <typename T, typename A>
struct ReduceKernel {
  DevReduceOp op;
  Shape out;
  Shape red;
  int64_t red_count;
  const T* x;
  T* y;

  A8_HD A Val(int64_t at) const { return static_cast<A>(Ld(x, at)); }

  A8_HD A MaxMin(int64_t base, bool is_max) const {
    A best;
    if constexpr (std::is_floating_point_v<A>) {
      best = is_max ? -Infinity<A>() : Infinity<A>();
    } else {
      best = is_max ? static_cast<A>(std::numeric_limits<T>::lowest())
                    : static_cast<A>(std::numeric_limits<T>::max());
    }
    Cursor c{base};
    for (int64_t r = 0; r < red_count; ++r, c.Next(red)) {
      const A v = Val(c.off);
      if (v != v) return v;  // NaN propagates
      if (is_max ? v > best : v < best) best = v;
    }
    return best;
  }

  A8_HD A Prod(int64_t base) const {
    A p = 1;
    Cursor c{base};
    for (int64_t r = 0; r < red_count; ++r, c.Next(red)) p = Mul(p, Val(c.off));
    return p;
  }

  A8_HD A LogSumExp(int64_t base) const {
    if constexpr (std::is_floating_point_v<A>) {
      A m = -Infinity<A>();
      Cursor c{base};
      for (int64_t r = 0; r < red_count; ++r, c.Next(red)) m = MMax(m, Val(c.off));
      if (m == Infinity<A>() || m == -Infinity<A>()) return m;
      A s = 0;
      Cursor d{base};
      for (int64_t r = 0; r < red_count; ++r, d.Next(red)) s += MExp(Val(d.off) - m);
      return m + MLog(s);
    } else {
      return A(0);  // integers go through double (host setup)
    }
  }

  // The term of the sum-like ops for the element at `at`.
  A8_HD A Term(int64_t at) const {
    A v = Val(at);
    if (op == DevReduceOp::kSumSquare || op == DevReduceOp::kL2) v = Mul(v, v);
    if constexpr (std::is_signed_v<A>) {  // floats too; |v| is v for unsigned integers
      if (op == DevReduceOp::kL1 && v < A(0)) v = static_cast<A>(-v);
    }
    return v;
  }

  // The sum of chunk `chunk` (kernels/common/sum_order.h) of the output at `base`.
  A8_HD A ChunkSum(int64_t base, int64_t chunk) const {
    const int64_t r0 = chunk * kSumChunk;
    const int64_t r1 = red_count < r0 + kSumChunk ? red_count : r0 + kSumChunk;
    A s = 0;
    if (r0 >= r1) return s;  // an empty reduction (a zero-sized axis): CursorAt would divide by 0
    Cursor c = CursorAt(red, base, r0);
    for (int64_t r = r0; r < r1; ++r, c.Next(red)) s = Add(s, Term(c.off));
    return s;
  }

  // Chunk `chunk`'s sums of n outputs at offsets base[0, n). Outputs that are neighbours in
  // memory advance together, rows outermost (vector adds on the host: a bias gradient sums the
  // rows of a [rows, features] matrix); others one at a time, each along its own run of terms
  // (a channel's bias gradient over [N, C, H, W]). Each output adds its terms in ChunkSum's order
  // either way.
  A8_HD void ChunkSums(int64_t chunk, const int64_t* base, int64_t n, A* acc) const {
    bool contiguous = true;
    for (int64_t i = 1; i < n; ++i) contiguous = contiguous && base[i] == base[0] + i;
    if (!contiguous) {
      for (int64_t i = 0; i < n; ++i) acc[i] = ChunkSum(base[i], chunk);
      return;
    }
    const int64_t r0 = chunk * kSumChunk;
    const int64_t r1 = red_count < r0 + kSumChunk ? red_count : r0 + kSumChunk;
    for (int64_t i = 0; i < n; ++i) acc[i] = 0;
    if (r0 >= r1) return;  // as ChunkSum
    Cursor c = CursorAt(red, base[0], r0);
    for (int64_t r = r0; r < r1; ++r, c.Next(red)) {
      for (int64_t i = 0; i < n; ++i) acc[i] = Add(acc[i], Term(c.off + i));
    }
  }

  // Every chunk of one output by one thread (the order of SumChunksFn + FinishSumsFn).
  A8_HD A SumLike(int64_t base) const {
    A s = 0;
    const int64_t chunks = SumChunks(red_count);
    for (int64_t k = 0; k < chunks; ++k) s = Add(s, ChunkSum(base, k));
    return Finish(s);
  }

  // Mean's division and L2's root of a finished sum.
  A8_HD A Finish(A s) const {
    if (op == DevReduceOp::kMean) {
      if constexpr (std::is_floating_point_v<A>) {
        return s / static_cast<A>(red_count);
      } else {
        return red_count > 0 ? static_cast<A>(s / red_count) : A(0);
      }
    }
    if constexpr (std::is_floating_point_v<A>) {
      if (op == DevReduceOp::kL2) return MSqrt(s);
    }
    return s;
  }

  A8_HD void operator()(int64_t o) const {
    const int64_t base = OffsetOf(out, o);
    A v;
    switch (op) {
      case DevReduceOp::kMax:
        v = MaxMin(base, true);
        break;
      case DevReduceOp::kMin:
        v = MaxMin(base, false);
        break;
      case DevReduceOp::kProd:
        v = Prod(base);
        break;
      case DevReduceOp::kLogSumExp:
        v = LogSumExp(base);
        break;
      default:
        v = SumLike(base);
        break;
    }
    Store(o, v);
  }

  A8_HD void Store(int64_t o, A v) const {
    if constexpr (std::is_integral_v<T> && std::is_floating_point_v<A>) {
      y[o] = TruncDoubleTo<T>(static_cast<double>(v));  // as the CPU's Cast
    } else {
      St(y, o, static_cast<Acc<T>>(v));
    }
  }
};

// The sum-like ops of long reductions in two passes (the order of ReduceKernel::SumLike): a
// row-shaped kernel over (chunk, output), outputs fastest, so that neighbouring threads read
// neighbouring elements when the kept axes are the inner ones (bias gradients), then one thread
// per output. The host takes a row piece kSumTile outputs at a time (ChunkSums), the GPU one
// output a thread. With one chunk (`partial` null) the first pass stores the outputs themselves.
#if defined(__CUDA_ARCH__)
constexpr int64_t kSumTile = 1;
#else
constexpr int64_t kSumTile = 64;
#endif

template <typename T, typename A>
struct SumChunksFn {
  ReduceKernel<T, A> r;
  A* partial;  // [chunks][out_count], or null
  int64_t out_count;
  A8_HD void Span(int64_t chunk, int64_t o0, int64_t o1) const {
    for (int64_t t = o0; t < o1; t += kSumTile) {
      const int64_t n = o1 - t < kSumTile ? o1 - t : kSumTile;
      int64_t base[kSumTile];
      A acc[kSumTile];
      for (int64_t i = 0; i < n; ++i) base[i] = OffsetOf(r.out, t + i);
      r.ChunkSums(chunk, base, n, acc);
      for (int64_t i = 0; i < n; ++i) {
        if (partial != nullptr) {
          partial[chunk * out_count + t + i] = acc[i];
        } else {
          r.Store(t + i, r.Finish(Add(A(0), acc[i])));
        }
      }
    }
  }
};

// The second pass: each output adds its chunks' sums in order; on the host a tile of
// neighbouring outputs at a time (vector adds), on the GPU one output a thread.
template <typename T, typename A>
struct FinishSumsFn {
  ReduceKernel<T, A> r;
  const A* partial;  // [chunks][out_count]
  int64_t out_count;
  A8_HD void Span(int64_t, int64_t o0, int64_t o1) const {
    const int64_t chunks = SumChunks(r.red_count);
    for (int64_t t = o0; t < o1; t += kSumTile) {
      const int64_t n = o1 - t < kSumTile ? o1 - t : kSumTile;
      A acc[kSumTile];
      for (int64_t i = 0; i < n; ++i) acc[i] = 0;
      for (int64_t k = 0; k < chunks; ++k) {
        const A* part = partial + k * out_count + t;
        for (int64_t i = 0; i < n; ++i) acc[i] = Add(acc[i], part[i]);
      }
      for (int64_t i = 0; i < n; ++i) r.Store(t + i, r.Finish(acc[i]));
    }
  }
};

// A float sum-like reduction: in two passes when it has more than one chunk.
template <typename T>
DevStatus FloatReduce(DevCtx& ctx, const ReduceParams& p, const T* x, T* y) {
  using A = Acc<T>;
  const ReduceKernel<T, A> r{p.op, p.out, p.red, p.red_count, x, y};
  const bool sum_like = p.op == DevReduceOp::kSum || p.op == DevReduceOp::kMean ||
                        p.op == DevReduceOp::kSumSquare || p.op == DevReduceOp::kL1 ||
                        p.op == DevReduceOp::kL2;
  const int64_t chunks = SumChunks(p.red_count);
  if (!sum_like) return ForEach(ctx, p.out_count, r, p.red_count);
  if (chunks <= 1)
    return ForEachRow(ctx, 1, p.out_count, SumChunksFn<T, A>{r, nullptr, p.out_count}, p.red_count);
  void* mem = nullptr;
  A8_DEV_RETURN_IF_ERROR(Scratch(ctx, static_cast<size_t>(chunks * p.out_count) * sizeof(A), &mem));
  A* partial = static_cast<A*>(mem);
  A8_DEV_RETURN_IF_ERROR(
      ForEachRow(ctx, chunks, p.out_count, SumChunksFn<T, A>{r, partial, p.out_count}, kSumChunk));
  return ForEachRow(ctx, 1, p.out_count, FinishSumsFn<T, A>{r, partial, p.out_count}, chunks);
}

template <typename T>
struct ArgReduceKernel {
  bool is_max;
  bool select_last;
  ReduceAxisView view;
  const T* x;
  int64_t* y;

  A8_HD void operator()(int64_t i) const {
    const T* p = x + LineBase(view, i);
    Acc<T> best = Ld(p, 0);
    int64_t best_k = 0;
    for (int64_t k = 1; k < view.len; ++k) {
      const Acc<T> v = Ld(p, k * view.inner);
      const bool better = is_max ? v > best : v < best;
      if (better || (select_last && v == best)) best = v, best_k = k;
    }
    y[i] = best_k;
  }
};

// A: the float compute type, or uint64 for integers (the CPU's wrapping running sum).
template <typename T, typename A>
struct CumSumKernel {
  bool exclusive;
  bool reverse;
  ReduceAxisView view;
  const T* x;
  T* y;

  A8_HD void operator()(int64_t r) const { Line(view, r); }

  A8_HD void Line(const ReduceAxisView& view, int64_t r) const {
    const int64_t base = LineBase(view, r);
    A acc = 0;
    for (int64_t j = 0; j < view.len; ++j) {
      const int64_t k = reverse ? view.len - 1 - j : j;
      const int64_t at = base + k * view.inner;
      const A v = static_cast<A>(Ld(x, at));
      if (!exclusive) acc = static_cast<A>(acc + v);
      St(y, at, static_cast<Acc<T>>(acc));
      if (exclusive) acc = static_cast<A>(acc + v);
    }
  }
};

// CumSum with its axis read from device memory: thread r runs line r of the view that the axis
// gives (count >= outer * inner threads; the rest return). An axis out of range raises the
// kernel's error and zeroes y, element r by thread r.
template <typename T, typename A>
struct CumSumRuntimeAxisKernel {
  CumSumKernel<T, A> line;
  CumSumParams p;

  A8_HD void operator()(int64_t r) const {
    const int64_t raw = p.axis_i32 ? static_cast<const int32_t*>(p.axis)[0]
                                   : static_cast<const int64_t*>(p.axis)[0];
    if (raw < -p.rank || raw >= p.rank) {
      p.err.Raise();
      line.y[r] = T{};
      return;
    }
    const int64_t ax = raw < 0 ? raw + p.rank : raw;
    ReduceAxisView v;
    for (int64_t i = 0; i < ax; ++i) v.outer *= p.dims[i];
    v.len = p.dims[ax];
    for (int64_t i = ax + 1; i < p.rank; ++i) v.inner *= p.dims[i];
    if (r < v.outer * v.inner) line.Line(v, r);
  }
};

// Pass 1 of GlobalNormSq: partial[c] = the double sum of squares of chunk c of one tensor.
template <typename T>
struct NormSqPartialKernel {
  int64_t n;
  const T* x;
  double* partial;

  A8_HD void operator()(int64_t c) const {
    const int64_t b = c * kNormSqChunk, e = n < b + kNormSqChunk ? n : b + kNormSqChunk;
    double s = 0.0;
    for (int64_t i = b; i < e; ++i) {
      const double v = static_cast<double>(Ld(x, i));
      s += v * v;
    }
    partial[c] = s;
  }
};

// Pass 2: the partials of every tensor added in order, rounded once to f32.
struct NormSqTotalKernel {
  int64_t count;
  const double* partial;
  float* out;

  A8_HD void operator()(int64_t) const {
    double total = 0.0;
    for (int64_t c = 0; c < count; ++c) total += partial[c];
    *out = static_cast<float>(total);
  }
};

}  // namespace reduce_detail

DevStatus Reduce(DevCtx& ctx, const ReduceParams& p) {
  using namespace reduce_detail;
  return DispatchAll(p.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      // ReduceMax is "any", ReduceMin "all": MaxMin over 0/1 in int64 (an empty set gives
      // false for Max, true for Min, bool's lowest and max, as ONNX defines).
      if (p.op != DevReduceOp::kMax && p.op != DevReduceOp::kMin)
        return DevError("Reduce: bool only for ReduceMax and ReduceMin");
      return ForEach(
          ctx, p.out_count,
          ReduceKernel<bool, int64_t>{p.op, p.out, p.red, p.red_count,
                                      static_cast<const bool*>(p.x), static_cast<bool*>(p.y)});
    } else if constexpr (std::is_integral_v<T>) {
      const T* x = static_cast<const T*>(p.x);
      T* y = static_cast<T*>(p.y);
      if (p.op == DevReduceOp::kL2 || p.op == DevReduceOp::kLogSumExp)
        return ForEach(ctx, p.out_count,
                       ReduceKernel<T, double>{p.op, p.out, p.red, p.red_count, x, y});
      return ForEach(ctx, p.out_count,
                     ReduceKernel<T, int64_t>{p.op, p.out, p.red, p.red_count, x, y});
    } else {
      return FloatReduce<T>(ctx, p, static_cast<const T*>(p.x), static_cast<T*>(p.y));
    }
  });
}

DevStatus ArgReduce(DevCtx& ctx, const ArgReduceParams& p) {
  using namespace reduce_detail;
  return DispatchAll(p.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    return ForEach(
        ctx, p.view.outer * p.view.inner,
        ArgReduceKernel<T>{p.is_max, p.select_last, p.view, static_cast<const T*>(p.x), p.y});
  });
}

DevStatus CumSum(DevCtx& ctx, const CumSumParams& p) {
  using namespace reduce_detail;
  return DispatchNumeric(p.dtype, "CumSum: bool is not supported", [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_integral_v<T>, uint64_t, Acc<T>>;
    const CumSumKernel<T, A> line{p.exclusive, p.reverse, p.view, static_cast<const T*>(p.x),
                                  static_cast<T*>(p.y)};
    if (p.axis != nullptr) return ForEach(ctx, p.count, CumSumRuntimeAxisKernel<T, A>{line, p});
    return ForEach(ctx, p.view.outer * p.view.inner, line);
  });
}

DevStatus GlobalNormSq(DevCtx& ctx, int num, const DType* dtypes, const int64_t* counts,
                       const void* const* data, float* out) {
  using namespace reduce_detail;
  int64_t chunks = 0;
  for (int t = 0; t < num; ++t) chunks += (counts[t] + kNormSqChunk - 1) / kNormSqChunk;
  void* scratch = nullptr;
  A8_DEV_RETURN_IF_ERROR(
      Scratch(ctx, static_cast<size_t>(chunks > 0 ? chunks : 1) * sizeof(double), &scratch));
  double* partial = static_cast<double*>(scratch);
  int64_t at = 0;
  for (int t = 0; t < num; ++t) {
    const int64_t n = counts[t], tc = (n + kNormSqChunk - 1) / kNormSqChunk;
    A8_DEV_RETURN_IF_ERROR(DispatchFloat(dtypes[t], [&](auto tag) -> DevStatus {
      using T = decltype(tag);
      return ForEach(ctx, tc,
                     NormSqPartialKernel<T>{n, static_cast<const T*>(data[t]), partial + at});
    }));
    at += tc;
  }
  return ForEach(ctx, 1, NormSqTotalKernel{chunks, partial, out});
}

}  // namespace a8::A8_DEV_NS

// ForEach and the element types, for kernels/device/*_impl.h only (see device.h).
//
// A kernel is a functor with `A8_HD void operator()(int64_t i) const` over [0, n): every index
// independent of the others (no two indices write the same element; use a two-pass reduction
// instead of atomics, so results are deterministic and graph replay is bit-identical).
//
// On the host (namespace a8::emu: the cuda-emu backend, and the CPU backend, which runs these
// bodies for every family it has no hand-tuned kernel for) ForEach is the host launcher: it
// splits [0, n) into contiguous chunks over the CPU thread pool (kernels/cpu/parallel.h). The
// contract above makes the result independent of the split. `cost_per_item` (about how many
// element operations one index does: a row's length for a thread per row) lets small index
// spaces of heavy items go parallel; the GPU launch ignores it.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/common/index_div.h"
#include "kernels/device/device.h"

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#include "kernels/cpu/parallel.h"
#endif

namespace a8::A8_DEV_NS {

constexpr int kThreadsPerBlock = 256;

// A memory-bound functor may split operator() in two: `In Load(int64_t i) const` reads index i's
// operands and returns them, `void Store(int64_t i, const In&) const` computes and writes, and
// operator()(i) is Store(i, Load(i)). The GPU launch then gives a thread kLoadsInFlight indices a
// block's width apart and issues all their loads before the first store (a store may alias a
// later index's operand, so the compiler could not hoist those loads itself): that many loads in
// flight a thread instead of one, which 2-byte elements need to keep HBM busy. The host calls
// operator() as before; every index runs the same arithmetic on the same values either way.
constexpr int kLoadsInFlight = 4;

template <typename F, typename = void>
struct HasLoadStore : std::false_type {};
template <typename F>
struct HasLoadStore<F, std::void_t<decltype(std::declval<const F&>().Load(int64_t{}))>>
    : std::true_type {};

// A row-shaped kernel, over `rows` rows of `cols` elements (element i = r * cols + j), is a
// functor with `A8_HD void Span(int64_t r, int64_t j0, int64_t j1) const` that computes elements
// [j0, j1) of row r, loading what the row shares (its statistics, a channel's parameters) once
// before its loop. ForEachRow launches it: on the GPU one thread an element (SpanPerElement:
// Span(r, j, j + 1)); on the host one call per row piece, so the index division and the row's
// loads leave the inner loop. Every element runs the same arithmetic either way, so the results
// are bit-identical.
//
// A row-shaped functor may also split an element in two, as HasLoadStore functors do:
// `In LoadAt(int64_t r, int64_t j) const` and `void StoreAt(int64_t r, int64_t j, const In&)
// const`, with Span's arithmetic; the GPU launch then issues its loads first (HasLoadAt).
template <typename F, typename = void>
struct HasLoadAt : std::false_type {};
template <typename F>
struct HasLoadAt<F, std::void_t<decltype(std::declval<const F&>().LoadAt(int64_t{}, int64_t{}))>>
    : std::true_type {};

template <typename F, bool kLoadAt = HasLoadAt<F>::value>
struct SpanPerElement {
  F f;
  IndexDiv cols;
  A8_HD void operator()(int64_t i) const {
    int64_t j = 0;
    const int64_t r = cols.DivMod(i, &j);
    f.Span(r, j, j + 1);
  }
};
template <typename F>
struct SpanPerElement<F, true> {
  F f;
  IndexDiv cols;
  struct In {
    decltype(std::declval<const F&>().LoadAt(int64_t{}, int64_t{})) v;
    int64_t r, j;
  };
  A8_HD In Load(int64_t i) const {
    int64_t j = 0;
    const int64_t r = cols.DivMod(i, &j);
    return {f.LoadAt(r, j), r, j};
  }
  A8_HD void Store(int64_t, const In& in) const { f.StoreAt(in.r, in.j, in.v); }
  A8_HD void operator()(int64_t i) const { Store(i, Load(i)); }
};

// Row sums in interleaved lanes, for rows too long for one thread (LayerNorm's 768): for each
// of `rows` rows of `n` terms and each of K sums, lane l of kRowLanes adds terms l, l + kRowLanes,
// l + 2 kRowLanes, ... in order, from 0, into part[(k * rows + r) * kRowLanes + l]. `f` has
// `A8_HD void Terms(int64_t r, int64_t i, C* acc) const`, adding term i of row r's K sums into
// acc[0, K). ForEachRowLanes launches it: on the GPU one thread a (row, lane), so neighbouring
// threads read neighbouring elements and a row has kRowLanes threads; on the host one call a
// row, its lanes advancing together (vector adds). Each lane adds the same terms in the same
// order either way, so the bits are the same; SumRowLanes then adds a row's lanes in a fixed tree.
constexpr int64_t kRowLanes = 32;

template <int K, typename C, typename F>
struct RowLanesFn {
  F f;
  int64_t rows, n;
  C* part;
  A8_HD void operator()(int64_t idx) const {
    const int64_t r = idx / kRowLanes, l = idx - r * kRowLanes;
    C acc[K] = {};
    for (int64_t i = l; i < n; i += kRowLanes) f.Terms(r, i, acc);
    for (int k = 0; k < K; ++k) part[(k * rows + r) * kRowLanes + l] = acc[k];
  }
};

// Sum k of row r: its lanes added pairwise, lane l + w into lane l for w = 16, 8, 4, 2, 1 (a
// fixed tree: vector adds on the host, five dependent adds instead of 31).
template <typename C>
A8_HD C SumRowLanes(const C* part, int64_t rows, int64_t r, int k = 0) {
  const C* p = part + (k * rows + r) * kRowLanes;
  C v[kRowLanes];
  for (int64_t l = 0; l < kRowLanes; ++l) v[l] = p[l];
  for (int64_t w = kRowLanes / 2; w >= 1; w /= 2) {
    for (int64_t l = 0; l < w; ++l) v[l] = v[l] + v[l + w];
  }
  return v[0];
}

#if defined(__CUDACC__)
template <typename F>
__global__ void ForEachKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    f(i);
}

// HasLoadStore functors: kLoadsInFlight indices a thread, loads first (see above).
template <typename F>
__global__ void ForEachLoadsFirstKernel(int64_t n, F f) {
  using In = decltype(f.Load(int64_t{}));
  const int64_t width = blockDim.x, tile = width * kLoadsInFlight;
  for (int64_t base = blockIdx.x * tile + threadIdx.x; base < n;
       base += static_cast<int64_t>(gridDim.x) * tile) {
    In v[kLoadsInFlight];
#pragma unroll
    for (int k = 0; k < kLoadsInFlight; ++k) {
      if (base + k * width < n) v[k] = f.Load(base + k * width);
    }
#pragma unroll
    for (int k = 0; k < kLoadsInFlight; ++k) {
      if (base + k * width < n) f.Store(base + k * width, v[k]);
    }
  }
}

inline DevStatus CheckLaunch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return DevOk();
  return DevError(std::string(what) + ": " + cudaGetErrorString(e));
}

template <typename F>
DevStatus ForEach(const DevCtx& ctx, int64_t n, const F& f, int64_t /*cost_per_item*/ = 1) {
  if (n <= 0) return DevOk();
  constexpr int64_t per_block =
      HasLoadStore<F>::value ? kThreadsPerBlock * kLoadsInFlight : kThreadsPerBlock;
  int64_t blocks = (n + per_block - 1) / per_block;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  if constexpr (HasLoadStore<F>::value) {
    ForEachLoadsFirstKernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(n, f);
  } else {
    ForEachKernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(n, f);
  }
  return CheckLaunch("kernel launch");
}

template <typename F>
DevStatus ForEachRow(const DevCtx& ctx, int64_t rows, int64_t cols, const F& f,
                     int64_t /*cost_per_item*/ = 1) {
  if (rows <= 0 || cols <= 0) return DevOk();
  return ForEach(ctx, rows * cols, SpanPerElement<F>{f, IndexDiv(cols)});
}

template <int K, typename C, typename F>
DevStatus ForEachRowLanes(const DevCtx& ctx, int64_t rows, int64_t n, const F& f, C* part) {
  if (rows <= 0) return DevOk();
  return ForEach(ctx, rows * kRowLanes, RowLanesFn<K, C, F>{f, rows, n, part});
}
#else
template <typename F>
DevStatus ForEach(const DevCtx&, int64_t n, const F& f, int64_t cost_per_item = 1) {
  cpu::ParallelFor(n, cost_per_item, [&f](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) f(i);
  });
  return DevOk();
}

// The host launch of a row-shaped kernel: the pool's chunks of the flat index space are cut at
// row ends, one Span call per piece of a row.
template <typename F>
DevStatus ForEachRow(const DevCtx&, int64_t rows, int64_t cols, const F& f,
                     int64_t cost_per_item = 1) {
  if (rows <= 0 || cols <= 0) return DevOk();
  cpu::ParallelFor(rows * cols, cost_per_item, [&f, cols](int64_t begin, int64_t end) {
    int64_t r = begin / cols, j = begin - r * cols;
    while (begin < end) {
      const int64_t piece = end - begin < cols - j ? end - begin : cols - j;
      f.Span(r, j, j + piece);
      begin += piece;
      ++r;
      j = 0;
    }
  });
  return DevOk();
}

// Row r's lanes on the host (RowLanesFn's arithmetic): the lanes advance together, lane l's
// terms still in order. acc[l][k]: lane l of sum k.
template <int K, typename C, typename F>
void RowLanesOnHost(const F& f, int64_t r, int64_t n, C (&out)[kRowLanes][K]) {
  C acc[kRowLanes][K] = {};  // a local: no store to it can alias the row (vector adds)
  int64_t i0 = 0;
  for (; i0 + kRowLanes <= n; i0 += kRowLanes) {  // whole rounds: a constant trip count
    for (int64_t l = 0; l < kRowLanes; ++l) f.Terms(r, i0 + l, acc[l]);
  }
  for (int64_t l = 0; i0 + l < n; ++l) f.Terms(r, i0 + l, acc[l]);
  for (int64_t l = 0; l < kRowLanes; ++l) {
    for (int k = 0; k < K; ++k) out[l][k] = acc[l][k];
  }
}

// The host launch of a lane sum (RowLanesFn): a row at a time.
template <int K, typename C, typename F>
DevStatus ForEachRowLanes(const DevCtx&, int64_t rows, int64_t n, const F& f, C* part) {
  if (rows <= 0) return DevOk();
  cpu::ParallelFor(rows, K * (n > 0 ? n : 1), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      C acc[kRowLanes][K];
      RowLanesOnHost<K>(f, r, n, acc);
      for (int k = 0; k < K; ++k) {
        for (int64_t l = 0; l < kRowLanes; ++l) part[(k * rows + r) * kRowLanes + l] = acc[l][k];
      }
    }
  });
  return DevOk();
}
#endif

// ---- element types: f16/bf16 are stored as bit patterns and computed in float (rounded once
// on store, to nearest even, kernels/common/float16.h), f64 in double, integers in themselves.
struct Half {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

template <typename T>
struct Elem {
  using Acc = T;
  static A8_HD Acc Load(T v) { return v; }
  static A8_HD T Store(Acc v) { return v; }
};
template <>
struct Elem<float> {
  using Acc = float;
  static A8_HD float Load(float v) { return v; }
  static A8_HD float Store(float v) { return v; }
};
template <>
struct Elem<Half> {
  using Acc = float;
  static A8_HD float Load(Half v) { return HalfBitsToFloat(v.bits); }
  static A8_HD Half Store(float v) { return Half{FloatToHalfBits(v)}; }
};
template <>
struct Elem<BF16> {
  using Acc = float;
  static A8_HD float Load(BF16 v) { return BFloat16BitsToFloat(v.bits); }
  static A8_HD BF16 Store(float v) { return BF16{FloatToBFloat16Bits(v)}; }
};
template <typename T>
using Acc = typename Elem<T>::Acc;
template <typename T>
A8_HD Acc<T> Ld(const T* p, int64_t i) {
  return Elem<T>::Load(p[i]);
}
template <typename T>
A8_HD void St(T* p, int64_t i, Acc<T> v) {
  p[i] = Elem<T>::Store(v);
}
// Any element as double / from double (casts between any two dtypes; bool is 0/1).
template <typename T>
A8_HD double ToDouble(T v) {
  return static_cast<double>(Elem<T>::Load(v));
}
template <typename T>
A8_HD T FromDouble(double v) {
  return Elem<T>::Store(static_cast<Acc<T>>(v));
}

// Dispatch on a runtime dtype: fn(T{}) with T the storage type. Host code only.
template <typename Fn>
DevStatus DispatchFloat(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32:
      return fn(float{});
    case DType::kF16:
      return fn(Half{});
    case DType::kBF16:
      return fn(BF16{});
    case DType::kF64:
      return fn(double{});
    default:
      return DevError("unsupported dtype for a float kernel");
  }
}
// DispatchFloat, and the integer and bool types. Every dtype has its case (no default): a new
// dtype is a compile error here until it has one.
template <typename Fn>
DevStatus DispatchAll(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF64:
      return DispatchFloat(t, fn);
    case DType::kI64:
      return fn(int64_t{});
    case DType::kI32:
      return fn(int32_t{});
    case DType::kI8:
      return fn(int8_t{});
    case DType::kU8:
      return fn(uint8_t{});
    case DType::kBool:
      return fn(bool{});
    case DType::kI16:
      return fn(int16_t{});
    case DType::kU16:
      return fn(uint16_t{});
    case DType::kU32:
      return fn(uint32_t{});
    case DType::kU64:
      return fn(uint64_t{});
  }
  return DevError("unknown dtype");
}
// DispatchAll for the float and integer types; bool gives the error `bool_error`.
template <typename Fn>
DevStatus DispatchNumeric(DType t, const char* bool_error, Fn&& fn) {
  return DispatchAll(t, [&](auto tag) -> DevStatus {
    if constexpr (std::is_same_v<decltype(tag), bool>) {
      return DevError(bool_error);
    } else {
      return fn(tag);
    }
  });
}

// The unsigned integer of `kBytes` bytes (1, 2, 4 or 8). The kernels that only move elements
// (movement, GatherND, Where) move them as these, so every dtype of a size takes one path and the
// bits are kept exactly (NaN payloads, -0).
template <int kBytes>
struct UintOfSize {
  static_assert(kBytes == 1 || kBytes == 2 || kBytes == 4 || kBytes == 8,
                "an element is 1, 2, 4 or 8 bytes");
  using Type =
      std::conditional_t<kBytes == 1, uint8_t,
                         std::conditional_t<kBytes == 2, uint16_t,
                                            std::conditional_t<kBytes == 4, uint32_t, uint64_t>>>;
};
// The unsigned integer of storage type T's size.
template <typename T>
using UintOf = typename UintOfSize<static_cast<int>(sizeof(T))>::Type;

// fn(U{}) with U the unsigned integer of `size` bytes; another size is the error "`op`: element
// size must be 1, 2, 4 or 8 bytes". Host code only.
template <typename Fn>
DevStatus DispatchBySize(int size, const char* op, Fn&& fn) {
  switch (size) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
    default:
      return DevError(std::string(op) + ": element size must be 1, 2, 4 or 8 bytes");
  }
}

// The bytes of `n` values of T in scratch memory (device.h Scratch): at least one value, so that
// an empty launch still gets a valid pointer.
template <typename T>
size_t ScratchBytes(int64_t n) {
  return static_cast<size_t>(n > 0 ? n : 1) * sizeof(T);
}

// `n` values of T of scratch memory.
template <typename T>
DevStatus ScratchOf(DevCtx& ctx, int64_t n, T** out) {
  void* p = nullptr;
  A8_DEV_RETURN_IF_ERROR(Scratch(ctx, ScratchBytes<T>(n), &p));
  *out = static_cast<T*>(p);
  return DevOk();
}

// `bytes` rounded up to a multiple of 256, so that a second array carved out of one scratch
// allocation starts aligned as the allocation does.
inline size_t AlignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Element i of an index tensor of i32 (`i32`) or i64.
A8_HD int64_t LoadIndex(bool i32, const void* p, int64_t i) {
  return i32 ? static_cast<int64_t>(static_cast<const int32_t*>(p)[i])
             : static_cast<const int64_t*>(p)[i];
}

// An index in [-len, len) made non-negative; -1 for one out of range.
A8_HD int64_t NormalizeIndex(int64_t v, int64_t len) {
  if (v < -len || v >= len) return -1;
  return v < 0 ? v + len : v;
}

// Row-major strides and index arithmetic on small fixed-size arrays (rank <= kMaxRank), passed
// to kernels by value.
constexpr int kMaxRank = 8;
struct Shape {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};  // element strides of the operand (0 where broadcast)
};

}  // namespace a8::A8_DEV_NS

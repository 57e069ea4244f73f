// The pooling kernels of kernels/device/nn.h, mirroring kernels/cpu/pool.cc and the pool parts of
// grad_conv_pool.cc: windows visited in row-major order, taps in row-major order, sums in the
// compute type, the first maximum winning (a NaN first tap stays, a later NaN never wins).
// The gradients gather: one thread per input element walks, in increasing order, the output
// windows that contain it, so each dX element is the CPU's sum in the CPU's order, no atomics;
// MaxPoolGrad first finds each window's maximum once (WindowArgMaxFn).
#pragma once

#include <limits>
#include <type_traits>

#include "kernels/common/index_div.h"
#include "kernels/common/pool_window.h"
#include "kernels/device/launch.h"
#include "kernels/device/nn.h"

namespace a8::A8_DEV_NS {
namespace nn_detail {

// The divisions the pooling kernels' index arithmetic does, by multiplication
// (kernels/common/index_div.h): by a plane's outputs, the output dims 1 and 2, the lines (dims 0
// and 1) of an input plane, input dim 1 and the strides.
struct PoolDivs {
  IndexDiv out_size, out1, out2, lines, in1, s[3];
  explicit PoolDivs(const PoolArgs& a)
      : out_size(Positive(a.out_size)),
        out1(Positive(a.out[1])),
        out2(Positive(a.out[2])),
        lines(Positive(a.in[0] * a.in[1])),
        in1(Positive(a.in[1])),
        s{IndexDiv(Positive(a.s[0])), IndexDiv(Positive(a.s[1])), IndexDiv(Positive(a.s[2]))} {}
  static int64_t Positive(int64_t v) { return v > 0 ? v : 1; }
};

// The spatial coordinates (3 dims) of flat output position o of a plane.
A8_HD void UnflattenOut(const PoolDivs& dv, int64_t o, int64_t out[3]) {
  const int64_t q = dv.out2.DivMod(o, &out[2]);
  out[0] = dv.out1.DivMod(q, &out[1]);
}

// Flat in-plane index of the first maximum of the window starting at `start` (-1 if no tap is
// inside the input), and that maximum.
template <typename T, typename C = Acc<T>>
A8_HD int64_t WindowArgMax(const PoolArgs& a, const T* src, const int64_t start[3], C* best_out) {
  C best;
  if constexpr (std::is_floating_point_v<C>) {
    best = -std::numeric_limits<C>::infinity();
  } else {
    best = std::numeric_limits<C>::lowest();
  }
  int64_t best_i = -1;
  ForEachTapInside(a, start, [&](int64_t i) {
    const C v = Ld(src, i);
    if (best_i < 0 || v > best) {
      best = v;
      best_i = i;
    }
  });
  *best_out = best;
  return best_i;
}

A8_HD void WindowStart(const PoolArgs& a, const int64_t o[3], int64_t start[3]) {
  for (int d = 0; d < 3; ++d) start[d] = o[d] * a.s[d] - a.pb[d];
}

// The plane of output idx (of planes * out_size), and its window's first tap in `start`.
A8_HD int64_t WindowOf(const PoolArgs& a, const PoolDivs& dv, int64_t idx, int64_t start[3]) {
  int64_t o = 0, oc[3];
  const int64_t plane = dv.out_size.DivMod(idx, &o);
  UnflattenOut(dv, o, oc);
  WindowStart(a, oc, start);
  return plane;
}

// WindowArgMax of output idx's window (of planes * out_size outputs), its plane in `plane`.
template <typename T, typename C = Acc<T>>
A8_HD int64_t OutputArgMax(const PoolArgs& a, const PoolDivs& dv, int64_t idx, int64_t* plane,
                           C* best) {
  int64_t start[3];
  *plane = WindowOf(a, dv, idx, start);
  return WindowArgMax<T>(a, static_cast<const T*>(a.x) + *plane * a.in_size, start, best);
}

// The outputs along one dim whose window has a tap at input position i: [lo, hi], those with
// (i + pb - o * s) a multiple of the dilation.
A8_HD void CoveringRange(const PoolArgs& a, const PoolDivs& dv, int d, int64_t i, int64_t* lo,
                         int64_t* hi) {
  const int64_t first = i + a.pb[d] - (a.k[d] - 1) * a.d[d];
  *lo = first <= 0 ? 0 : dv.s[d].Div(first + a.s[d] - 1);
  const int64_t last = dv.s[d].Div(i + a.pb[d]);
  *hi = last < a.out[d] - 1 ? last : a.out[d] - 1;
}
A8_HD bool IsTap(const PoolArgs& a, int d, int64_t i, int64_t o) {
  return a.d[d] == 1 || (i + a.pb[d] - o * a.s[d]) % a.d[d] == 0;
}

// AverageCount's factor of dim d for the window of output position o along it.
A8_HD int64_t AverageCountAlong(const PoolArgs& a, int d, int64_t o) {
  const int64_t lo = a.count_include_pad ? -a.pb[d] : 0;
  const int64_t hi = a.count_include_pad ? a.in[d] + a.pe[d] : a.in[d];
  return CountTaps(o * a.s[d] - a.pb[d], a.k[d], a.d[d], lo, hi);
}

template <typename T>
struct MaxPoolFn {
  using C = Acc<T>;
  PoolArgs a;
  PoolDivs dv;
  A8_HD void operator()(int64_t idx) const {
    int64_t plane = 0;
    C best;
    const int64_t best_i = OutputArgMax<T>(a, dv, idx, &plane, &best);
    St(static_cast<T*>(a.y), idx, best);
    if (a.indices == nullptr) return;
    int64_t at = best_i;
    if (a.column_major_indices) {
      const int64_t i2 = best_i % a.in[2], i1 = (best_i / a.in[2]) % a.in[1];
      const int64_t i0 = best_i / (a.in[2] * a.in[1]);
      at = i0 + i1 * a.in[0] + i2 * a.in[0] * a.in[1];
    }
    a.indices[idx] = plane * a.in_size + at;
  }
};

template <typename T>
struct AveragePoolFn {
  using C = Acc<T>;
  PoolArgs a;
  PoolDivs dv;
  A8_HD void operator()(int64_t idx) const {
    int64_t start[3];
    const T* src = static_cast<const T*>(a.x) + WindowOf(a, dv, idx, start) * a.in_size;
    C sum = 0;
    ForEachTapInside(a, start, [&](int64_t i) { sum += Ld(src, i); });
    const int64_t count = AverageCount(a, start, a.count_include_pad);
    St(static_cast<T*>(a.y), idx, count > 0 ? sum / static_cast<C>(count) : C(0));
  }
};

// The in-plane index of each output window's first maximum (-1: no tap inside the input):
// MaxPoolGrad's first pass, so each window's maximum is found once, not again for every input
// element it covers. I: int32_t where a plane has fewer than 2^31 elements (half the bytes the
// gradient pass reads up to prod(k / s) times an element), else int64_t.
template <typename T, typename I>
struct WindowArgMaxFn {
  PoolArgs a;
  I* argmax;  // [planes * out_size]
  PoolDivs dv;
  A8_HD void operator()(int64_t idx) const {
    int64_t plane = 0;
    Acc<T> best;
    argmax[idx] = static_cast<I>(OutputArgMax<T>(a, dv, idx, &plane, &best));
  }
};

// dX of MaxPool (max = true: each covering window's dY goes to its first maximum, `argmax`) or
// AveragePool (each covering window's dY / its divisor). Row-shaped (launch.h, ForEachRow): a row
// is a line of in[2] elements of a plane, so the covering ranges of dims 0 and 1 are found once.
template <typename T, bool kMax, typename I = int64_t>
struct PoolGradFn {
  using C = Acc<T>;
  PoolArgs a;
  const I* argmax;  // kMax: WindowArgMaxFn's
  PoolDivs dv;
  A8_HD void Span(int64_t r, int64_t j0, int64_t j1) const {
    int64_t line = 0, i1 = 0;
    const int64_t plane = dv.lines.DivMod(r, &line);
    const int64_t i0 = dv.in1.DivMod(line, &i1);
    const T* g = static_cast<const T*>(a.dy) + plane * a.out_size;
    const I* best = kMax ? argmax + plane * a.out_size : nullptr;
    T* dx = static_cast<T*>(a.dx) + r * a.in[2];
    int64_t lo[3], hi[3];
    CoveringRange(a, dv, 0, i0, &lo[0], &hi[0]);
    CoveringRange(a, dv, 1, i1, &lo[1], &hi[1]);
    for (int64_t i2 = j0; i2 < j1; ++i2) {
      const int64_t p = line * a.in[2] + i2;
      CoveringRange(a, dv, 2, i2, &lo[2], &hi[2]);
      C acc = 0;
      int64_t oc[3];
      for (oc[0] = lo[0]; oc[0] <= hi[0]; ++oc[0]) {
        if (!IsTap(a, 0, i0, oc[0])) continue;
        // AveragePool's divisor, dim by dim (AverageCount's product; integers, so exact).
        const int64_t count0 = kMax ? 1 : AverageCountAlong(a, 0, oc[0]);
        for (oc[1] = lo[1]; oc[1] <= hi[1]; ++oc[1]) {
          if (!IsTap(a, 1, i1, oc[1])) continue;
          const int64_t count1 = kMax ? 1 : count0 * AverageCountAlong(a, 1, oc[1]);
          for (oc[2] = lo[2]; oc[2] <= hi[2]; ++oc[2]) {
            if (!IsTap(a, 2, i2, oc[2])) continue;
            const int64_t o = (oc[0] * a.out[1] + oc[1]) * a.out[2] + oc[2];
            if constexpr (kMax) {
              if (best[o] == p) acc += Ld(g, o);
            } else {
              const int64_t count = count1 * AverageCountAlong(a, 2, oc[2]);
              acc += Ld(g, o) * (count > 0 ? C(1) / static_cast<C>(count) : C(0));
            }
          }
        }
      }
      St(dx, i2, acc);
    }
  }
};

template <typename T>
struct GlobalPoolFn {
  using C = Acc<T>;
  const T* x;
  T* y;
  int64_t spatial;
  bool max;
  A8_HD void operator()(int64_t plane) const {
    const T* src = x + plane * spatial;
    if (max) {
      C best = -std::numeric_limits<C>::infinity();
      for (int64_t i = 0; i < spatial; ++i) {
        const C v = Ld(src, i);
        best = best < v ? v : best;  // std::max: a NaN never replaces the running maximum
      }
      St(y, plane, best);
      return;
    }
    C sum = 0;
    for (int64_t i = 0; i < spatial; ++i) sum += Ld(src, i);
    St(y, plane, spatial > 0 ? sum / static_cast<C>(spatial) : C(0));
  }
};

// GlobalMaxPool (max) or GlobalAveragePool: one thread a plane.
inline DevStatus GlobalPool(DevCtx& ctx, DType dtype, int64_t planes, int64_t spatial,
                            const void* x, void* y, bool max) {
  return DispatchFloat(dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    const GlobalPoolFn<T> f{static_cast<const T*>(x), static_cast<T*>(y), spatial, max};
    return ForEach(ctx, planes, f);
  });
}

}  // namespace nn_detail

DevStatus MaxPool(DevCtx& ctx, const PoolArgs& a) {
  using namespace nn_detail;
  return DispatchAll(a.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, bool>) {
      return DevError("MaxPool: unsupported dtype");
    } else {
      return ForEach(ctx, a.planes * a.out_size, MaxPoolFn<T>{a, PoolDivs(a)});
    }
  });
}

DevStatus AveragePool(DevCtx& ctx, const PoolArgs& a) {
  using namespace nn_detail;
  return DispatchFloat(a.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    return ForEach(ctx, a.planes * a.out_size, AveragePoolFn<T>{a, PoolDivs(a)});
  });
}

DevStatus MaxPoolGrad(DevCtx& ctx, const PoolArgs& a) {
  using namespace nn_detail;
  return DispatchFloat(a.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    auto run = [&](auto index_tag) -> DevStatus {
      using I = decltype(index_tag);
      I* argmax = nullptr;
      const int64_t windows = a.planes * a.out_size;
      A8_DEV_RETURN_IF_ERROR(ScratchOf(ctx, windows, &argmax));
      const int64_t taps = a.k[0] * a.k[1] * a.k[2];
      A8_DEV_RETURN_IF_ERROR(
          ForEach(ctx, windows, WindowArgMaxFn<T, I>{a, argmax, PoolDivs(a)}, taps));
      return ForEachRow(ctx, a.planes * a.in[0] * a.in[1], a.in[2],
                        PoolGradFn<T, true, I>{a, argmax, PoolDivs(a)});
    };
    return a.in_size < (int64_t{1} << 31) ? run(int32_t{}) : run(int64_t{});
  });
}

DevStatus AveragePoolGrad(DevCtx& ctx, const PoolArgs& a) {
  using namespace nn_detail;
  return DispatchFloat(a.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    return ForEachRow(ctx, a.planes * a.in[0] * a.in[1], a.in[2],
                      PoolGradFn<T, false>{a, nullptr, PoolDivs(a)});
  });
}

DevStatus GlobalAveragePool(DevCtx& ctx, DType dtype, int64_t planes, int64_t spatial,
                            const void* x, void* y) {
  return nn_detail::GlobalPool(ctx, dtype, planes, spatial, x, y, false);
}

DevStatus GlobalMaxPool(DevCtx& ctx, DType dtype, int64_t planes, int64_t spatial, const void* x,
                        void* y) {
  return nn_detail::GlobalPool(ctx, dtype, planes, spatial, x, y, true);
}

}  // namespace a8::A8_DEV_NS

// The GridSample kernel and its gradient (declared in grid_sample.h).
#include "kernels/device/grid_sample.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS::grid_sample {
namespace {

A8_HD float Floor(float v) { return ::floorf(v); }
A8_HD double Floor(double v) { return ::floor(v); }
A8_HD float Rint(float v) { return ::rintf(v); }  // half to even, as numpy's rint
A8_HD double Rint(double v) { return ::rint(v); }
A8_HD float Fmod(float a, float b) { return ::fmodf(a, b); }
A8_HD double Fmod(double a, double b) { return ::fmod(a, b); }

// A coordinate as an index, truncated toward zero (onnx's int()); NaN gives -1 and values far
// outside any image saturate, so no conversion overflows.
template <typename A>
A8_HD int64_t ToIndex(A v) {
  if (v != v) return -1;
  if (v < A(-1e9)) return -1000000000;
  if (v > A(1e9)) return 1000000000;
  return static_cast<int64_t>(v);
}

A8_HD int64_t Clamp(int64_t i, int64_t lo, int64_t hi) { return i < lo ? lo : (i > hi ? hi : i); }

// A distance `dx` past a border of a range `rng` wide, folded back into the range: the distance
// in from the border it lands at, which is the near border (`*near`) after an even number of
// whole widths and the far one after an odd number.
template <typename A>
A8_HD A FoldBack(A dx, A rng, bool* near) {
  const A n = Floor(dx / rng);
  *near = Fmod(n, A(2)) == A(0);
  return dx - n * rng;
}

// x reflected by the near border until within [lo, hi] (onnx's _gs_reflect); `sign` gets the
// derivative of the result along x (+1 or -1).
template <typename A>
A8_HD A Reflect(A x, A lo, A hi, A* sign) {
  *sign = A(1);
  const A rng = hi - lo;
  if (!(rng > A(0))) return lo;  // one pixel with align_corners: the only place
  bool near = false;
  if (x < lo) {
    const A r = FoldBack(lo - x, rng, &near);
    if (near) *sign = A(-1);
    return near ? lo + r : hi - r;
  }
  if (x > hi) {
    const A r = FoldBack(x - hi, rng, &near);
    if (near) *sign = A(-1);
    return near ? hi - r : lo + r;
  }
  return x;
}

// The index a tap at integer position i reads along a dim of length d, or -1 for a zero.
template <typename A>
A8_HD int64_t TapIndex(int padding, int64_t i, int64_t d, A lo, A hi) {
  if (padding == kZeros) return i >= 0 && i < d ? i : -1;
  if (padding == kBorder) return Clamp(i, 0, d - 1);
  A sign;
  return Clamp(ToIndex(Reflect(static_cast<A>(i), lo, hi, &sign)), 0, d - 1);
}

// Keys' cubic convolution weights (a = -0.75) of the taps x0-1 .. x0+2 at t = x - x0 in [0, 1),
// and their derivatives along t.
template <typename A>
A8_HD void CubicWeights(A t, A* w, A* dw) {
  const A a = A(-0.75);
  const A s = t + A(1), u = A(1) - t, v = A(2) - t;
  w[0] = ((a * s - A(5) * a) * s + A(8) * a) * s - A(4) * a;
  w[1] = ((a + A(2)) * t - (a + A(3))) * t * t + A(1);
  w[2] = ((a + A(2)) * u - (a + A(3))) * u * u + A(1);
  w[3] = ((a * v - A(5) * a) * v + A(8) * a) * v - A(4) * a;
  dw[0] = (A(3) * a * s - A(10) * a) * s + A(8) * a;
  dw[1] = (A(3) * (a + A(2)) * t - A(2) * (a + A(3))) * t;
  dw[2] = -((A(3) * (a + A(2)) * u - A(2) * (a + A(3))) * u);
  dw[3] = -((A(3) * a * v - A(10) * a) * v + A(8) * a);
}

// The taps of one grid point: per spatial dim, `nt` indices (-1: reads zero), weights and the
// weights' derivatives along the dim's (clamped/reflected) coordinate, and `chain`, the
// derivative of that coordinate along the grid value.
template <typename A>
struct Taps {
  int nt = 1;
  int64_t idx[kMaxSpatial][4];
  A w[kMaxSpatial][4];
  A dw[kMaxSpatial][4];
  A chain[kMaxSpatial];
};

// The taps a point reads along each spatial dim.
A8_HD int TapsPerDim(int mode) { return mode == kNearest ? 1 : (mode == kLinear ? 2 : 4); }

// The taps of grid point `point` (= n * points + the point's index in the grid's spatial dims).
template <typename T, typename A = Acc<T>>
A8_HD void MakeTaps(const GridSampleParams& p, int64_t point, Taps<A>* tp) {
  const T* g = static_cast<const T*>(p.grid) + point * p.rank;
  tp->nt = TapsPerDim(p.mode);
  for (int k = 0; k < p.rank; ++k) {
    const int64_t d = p.in_dims[k];
    const A len = static_cast<A>(d);
    const A gv = Ld(g, p.rank - 1 - k);
    A x, scale;
    if (p.align_corners) {
      scale = (len - A(1)) / A(2);
      x = (gv + A(1)) / A(2) * (len - A(1));
    } else {
      scale = len / A(2);
      x = ((gv + A(1)) * len - A(1)) / A(2);
    }
    if (p.mode == kNearest) x = Rint(x);
    const A lo = p.align_corners ? A(0) : A(-0.5);
    const A hi = p.align_corners ? len - A(1) : len - A(0.5);
    A dcoord = A(1);
    if (x < lo || x > hi) {
      if (p.padding == kBorder && p.mode != kCubic) {
        x = x < A(0) ? A(0) : (x > len - A(1) ? len - A(1) : x);
        dcoord = A(0);
      } else if (p.padding == kReflection) {
        x = Reflect(x, lo, hi, &dcoord);
      }
    }
    tp->chain[k] = p.mode == kNearest ? A(0) : dcoord * scale;
    if (p.mode == kNearest) {
      tp->idx[k][0] = TapIndex(p.padding, ToIndex(x), d, lo, hi);
      tp->w[k][0] = A(1);
      tp->dw[k][0] = A(0);
      continue;
    }
    const A x0 = Floor(x);
    const A t = x - x0;
    const int64_t i0 = ToIndex(x0);
    if (p.mode == kLinear) {
      tp->w[k][0] = A(1) - t;
      tp->w[k][1] = t;
      tp->dw[k][0] = A(-1);
      tp->dw[k][1] = A(1);
      for (int j = 0; j < 2; ++j) tp->idx[k][j] = TapIndex(p.padding, i0 + j, d, lo, hi);
    } else {
      CubicWeights(t, tp->w[k], tp->dw[k]);
      for (int j = 0; j < 4; ++j) tp->idx[k][j] = TapIndex(p.padding, i0 - 1 + j, d, lo, hi);
    }
  }
}

// Tap combination q (dim 0 outermost): its offset in an X plane (-1 if any tap reads zero), and
// its tap number along each dim in `t`.
template <typename A>
A8_HD int64_t ComboOffset(const GridSampleParams& p, const Taps<A>& tp, int64_t q, int* t) {
  int64_t off = 0;
  bool zero = false;
  for (int k = p.rank - 1; k >= 0; --k) {
    t[k] = static_cast<int>(q % tp.nt);
    q /= tp.nt;
  }
  for (int k = 0; k < p.rank; ++k) {
    const int64_t i = tp.idx[k][t[k]];
    if (i < 0) zero = true;
    off = off * p.in_dims[k] + (i < 0 ? 0 : i);
  }
  return zero ? -1 : off;
}

// The interpolation weight of the combination whose taps ComboOffset put in `t`.
template <typename A>
A8_HD A ComboWeight(const GridSampleParams& p, const Taps<A>& tp, const int* t) {
  A w = tp.w[0][t[0]];
  for (int k = 1; k < p.rank; ++k) w *= tp.w[k][t[k]];
  return w;
}

// fn(off, t) for each of a point's `combos` tap combinations that reads inside the image, in
// combination order: its offset in an X plane and its taps (ComboOffset).
template <typename A, typename Fn>
A8_HD void ForEachCombo(const GridSampleParams& p, const Taps<A>& tp, int64_t combos, Fn&& fn) {
  int t[kMaxSpatial] = {};
  for (int64_t q = 0; q < combos; ++q) {
    const int64_t off = ComboOffset(p, tp, q, t);
    if (off >= 0) fn(off, t);
  }
}

struct Geometry {
  int64_t plane = 1;   // X's spatial size
  int64_t points = 1;  // grid's spatial size
  int64_t combos = 1;  // tap combinations a point
};

inline Geometry GeometryOf(const GridSampleParams& p) {
  Geometry g;
  const int nt = TapsPerDim(p.mode);
  for (int k = 0; k < p.rank; ++k) {
    g.plane *= p.in_dims[k];
    g.points *= p.out_dims[k];
    g.combos *= nt;
  }
  return g;
}

// One output element (n, c, point).
template <typename T>
struct ForwardFn {
  GridSampleParams p;
  Geometry geo;
  A8_HD void operator()(int64_t i) const {
    using A = Acc<T>;
    const int64_t pt = i % geo.points;
    const int64_t nc = i / geo.points;
    const int64_t n = nc / p.c;
    Taps<A> tp;
    MakeTaps<T>(p, n * geo.points + pt, &tp);
    const T* x = static_cast<const T*>(p.x) + nc * geo.plane;
    A sum = A(0);
    ForEachCombo(p, tp, geo.combos,
                 [&](int64_t off, const int* t) { sum += ComboWeight(p, tp, t) * Ld(x, off); });
    St(static_cast<T*>(p.y), i, sum);
  }
};

// dX of one (n, c) plane: zeroed, then every output point's taps add weight * dy in point order.
template <typename T>
struct GradXFn {
  GridSampleGradParams gp;
  Geometry geo;
  A8_HD void operator()(int64_t nc) const {
    using A = Acc<T>;
    const GridSampleParams& p = gp.fwd;
    const int64_t n = nc / p.c;
    T* dx = static_cast<T*>(gp.dx) + nc * geo.plane;
    const T* dy = static_cast<const T*>(gp.dy) + nc * geo.points;
    for (int64_t j = 0; j < geo.plane; ++j) St(dx, j, A(0));
    for (int64_t pt = 0; pt < geo.points; ++pt) {
      const A g = Ld(dy, pt);
      Taps<A> tp;
      MakeTaps<T>(p, n * geo.points + pt, &tp);
      ForEachCombo(p, tp, geo.combos, [&](int64_t off, const int* t) {
        St(dx, off, Ld(dx, off) + ComboWeight(p, tp, t) * g);
      });
    }
  }
};

// dgrid of one (n, point): per coordinate, the sum over channels of dy times the interpolation's
// derivative along it, times the coordinate's chain factor.
template <typename T>
struct GradGridFn {
  GridSampleGradParams gp;
  Geometry geo;
  A8_HD void operator()(int64_t i) const {
    using A = Acc<T>;
    const GridSampleParams& p = gp.fwd;
    const int64_t n = i / geo.points, pt = i % geo.points;
    Taps<A> tp;
    MakeTaps<T>(p, i, &tp);
    A acc[kMaxSpatial] = {};
    if (p.mode != kNearest) {
      for (int64_t c = 0; c < p.c; ++c) {
        const int64_t nc = n * p.c + c;
        const A g = Ld(static_cast<const T*>(gp.dy), nc * geo.points + pt);
        const T* x = static_cast<const T*>(p.x) + nc * geo.plane;
        ForEachCombo(p, tp, geo.combos, [&](int64_t off, const int* t) {
          const A v = g * Ld(x, off);
          for (int k = 0; k < p.rank; ++k) {
            A w = tp.dw[k][t[k]];
            for (int j = 0; j < p.rank; ++j) {
              if (j != k) w *= tp.w[j][t[j]];
            }
            acc[k] += w * v;
          }
        });
      }
    }
    T* dg = static_cast<T*>(gp.dgrid) + i * p.rank;
    for (int k = 0; k < p.rank; ++k) St(dg, p.rank - 1 - k, acc[k] * tp.chain[k]);
  }
};

DevStatus Check(const GridSampleParams& p, const char* op) {
  if (p.rank < 1 || p.rank > kMaxSpatial) return DevError(std::string(op) + ": rank out of range");
  if (p.mode < kLinear || p.mode > kCubic) return DevError(std::string(op) + ": unknown mode");
  if (p.padding < kZeros || p.padding > kReflection)
    return DevError(std::string(op) + ": unknown padding mode");
  return DevOk();
}

}  // namespace

DevStatus GridSample(DevCtx& ctx, const GridSampleParams& p) {
  A8_DEV_RETURN_IF_ERROR(Check(p, "GridSample"));
  const Geometry geo = GeometryOf(p);
  return DispatchFloat(p.dtype, [&](auto t) {
    return ForEach(ctx, p.n * p.c * geo.points, ForwardFn<decltype(t)>{p, geo},
                   geo.combos * (p.rank + 1));
  });
}

DevStatus GridSampleGrad(DevCtx& ctx, const GridSampleGradParams& gp) {
  const GridSampleParams& p = gp.fwd;
  A8_DEV_RETURN_IF_ERROR(Check(p, "GridSampleGrad"));
  const Geometry geo = GeometryOf(p);
  return DispatchFloat(p.dtype, [&](auto t) {
    using T = decltype(t);
    if (gp.dx != nullptr) {
      A8_DEV_RETURN_IF_ERROR(ForEach(ctx, p.n * p.c, GradXFn<T>{gp, geo},
                                     geo.plane + geo.points * geo.combos * (p.rank + 4)));
    }
    if (gp.dgrid == nullptr) return DevOk();
    return ForEach(ctx, p.n * geo.points, GradGridFn<T>{gp, geo},
                   p.c * geo.combos * (p.rank * p.rank + 2));
  });
}

}  // namespace a8::A8_DEV_NS::grid_sample

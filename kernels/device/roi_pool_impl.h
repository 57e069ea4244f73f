// The MaxUnpool and RoiAlign kernels (declared in roi_pool.h).
#include "kernels/device/launch.h"
#include "kernels/device/roi_pool.h"

namespace a8::A8_DEV_NS::roi_pool {
namespace {

// The offset in Y's plane of index `idx` of plane `plane`, or -1 (error raised) when it lies
// outside that plane of the inferred tensor.
A8_HD int64_t UnpoolTarget(const MaxUnpoolParams& p, int64_t plane, int64_t idx) {
  int64_t inferred_plane = 1;
  for (int d = 0; d < p.spatial; ++d) inferred_plane *= p.inferred[d];
  if (idx < plane * inferred_plane || idx >= (plane + 1) * inferred_plane) {
    p.err.Raise();
    return -1;
  }
  int64_t rest = idx - plane * inferred_plane, off = 0, stride = 1;
  for (int d = p.spatial - 1; d >= 0; --d) {
    off += (rest % p.inferred[d]) * stride;
    rest /= p.inferred[d];
    stride *= p.out_dims[d];
  }
  return off;
}

template <typename T>
struct MaxUnpoolFn {
  MaxUnpoolParams p;
  A8_HD void operator()(int64_t plane) const {
    T* y = static_cast<T*>(p.dst) + plane * p.out_plane;
    const T* x = static_cast<const T*>(p.src) + plane * p.in_plane;
    const int64_t* idx = p.indices + plane * p.in_plane;
    for (int64_t o = 0; o < p.out_plane; ++o) y[o] = FromDouble<T>(0);
    for (int64_t i = 0; i < p.in_plane; ++i) {
      const int64_t o = UnpoolTarget(p, plane, idx[i]);
      if (o >= 0) y[o] = x[i];
    }
  }
};

template <typename T>
struct MaxUnpoolGradFn {
  MaxUnpoolParams p;
  int64_t* winners;  // scratch: out_plane per plane
  A8_HD void operator()(int64_t plane) const {
    int64_t* w = winners + plane * p.out_plane;
    const T* dy = static_cast<const T*>(p.src) + plane * p.out_plane;
    T* dx = static_cast<T*>(p.dst) + plane * p.in_plane;
    const int64_t* idx = p.indices + plane * p.in_plane;
    for (int64_t o = 0; o < p.out_plane; ++o) w[o] = -1;
    for (int64_t i = 0; i < p.in_plane; ++i) {
      const int64_t o = UnpoolTarget(p, plane, idx[i]);
      if (o >= 0) w[o] = i;
    }
    for (int64_t i = 0; i < p.in_plane; ++i) {
      const int64_t o = UnpoolTarget(p, plane, idx[i]);
      dx[i] = o >= 0 && w[o] == i ? dy[o] : FromDouble<T>(0);
    }
  }
};

// The bins of roi `r`: start, bin size and sample grid per axis (onnx's roi_align_forward).
template <typename A>
struct RoiBins {
  A start_h, start_w, bin_h, bin_w;
  int64_t grid_h, grid_w;
  int64_t count;  // samples a bin averages: max(grid_h * grid_w, 1)
};

template <typename T>
A8_HD RoiBins<Acc<T>> BinsOf(const RoiAlignParams& p, int64_t r) {
  using A = Acc<T>;
  const T* box = static_cast<const T*>(p.boxes) + 4 * r;
  const A scale = static_cast<A>(p.spatial_scale), offset = p.half_pixel ? A(0.5) : A(0);
  RoiBins<A> g;
  g.start_w = Elem<T>::Load(box[0]) * scale - offset;
  g.start_h = Elem<T>::Load(box[1]) * scale - offset;
  A roi_w = Elem<T>::Load(box[2]) * scale - offset - g.start_w;
  A roi_h = Elem<T>::Load(box[3]) * scale - offset - g.start_h;
  if (!p.half_pixel) {
    roi_w = roi_w > A(1) ? roi_w : A(1);
    roi_h = roi_h > A(1) ? roi_h : A(1);
  }
  g.bin_h = roi_h / static_cast<A>(p.out_h);
  g.bin_w = roi_w / static_cast<A>(p.out_w);
  g.grid_h = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(ceil(g.bin_h));
  g.grid_w = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(ceil(g.bin_w));
  g.count = g.grid_h * g.grid_w > 1 ? g.grid_h * g.grid_w : 1;
  return g;
}

// The four pixels (offsets in a plane) and weights of sample (iy, ix) of bin (ph, pw); false when
// the point lies beyond [-1, size] (it reads nothing).
template <typename A>
A8_HD bool SampleAt(const RoiAlignParams& p, const RoiBins<A>& g, int64_t ph, int64_t pw,
                    int64_t iy, int64_t ix, int64_t pos[4], A w[4]) {
  A y = g.start_h + static_cast<A>(ph) * g.bin_h +
        (static_cast<A>(iy) + A(0.5)) * g.bin_h / static_cast<A>(g.grid_h);
  A x = g.start_w + static_cast<A>(pw) * g.bin_w +
        (static_cast<A>(ix) + A(0.5)) * g.bin_w / static_cast<A>(g.grid_w);
  if (y < A(-1) || y > static_cast<A>(p.height) || x < A(-1) || x > static_cast<A>(p.width)) {
    return false;
  }
  y = y > A(0) ? y : A(0);
  x = x > A(0) ? x : A(0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= p.height - 1) {
    y_high = y_low = p.height - 1;
    y = static_cast<A>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= p.width - 1) {
    x_high = x_low = p.width - 1;
    x = static_cast<A>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const A ly = y - static_cast<A>(y_low), lx = x - static_cast<A>(x_low);
  const A hy = A(1) - ly, hx = A(1) - lx;
  pos[0] = y_low * p.width + x_low;
  pos[1] = y_low * p.width + x_high;
  pos[2] = y_high * p.width + x_low;
  pos[3] = y_high * p.width + x_high;
  w[0] = hy * hx;
  w[1] = hy * lx;
  w[2] = ly * hx;
  w[3] = ly * lx;
  return true;
}

// The batch image of roi `r`, or -1 (error raised) when out of range.
A8_HD int64_t RoiImage(const RoiAlignParams& p, int64_t r) {
  const int64_t b = p.batch_indices[r];
  if (b < 0 || b >= p.batch) {
    p.err.Raise();
    return -1;
  }
  return b;
}

template <typename T>
struct RoiAlignFn {
  RoiAlignParams p;
  A8_HD void operator()(int64_t i) const {
    using A = Acc<T>;
    const int64_t pw = i % p.out_w, ph = (i / p.out_w) % p.out_h;
    const int64_t c = (i / (p.out_w * p.out_h)) % p.channels,
                  r = i / (p.out_w * p.out_h * p.channels);
    const int64_t b = RoiImage(p, r);
    T* y = static_cast<T*>(p.dst);
    if (b < 0) {
      y[i] = FromDouble<T>(0);
      return;
    }
    const T* x = static_cast<const T*>(p.x) + (b * p.channels + c) * p.height * p.width;
    const RoiBins<A> g = BinsOf<T>(p, r);
    A out = A(0);
    bool first = true;
    for (int64_t iy = 0; iy < g.grid_h; ++iy) {
      for (int64_t ix = 0; ix < g.grid_w; ++ix) {
        int64_t pos[4] = {0, 0, 0, 0};
        A w[4] = {A(0), A(0), A(0), A(0)};
        SampleAt(p, g, ph, pw, iy, ix, pos, w);  // outside: zero weights at pixel 0
        if (!p.max_mode) {
          for (int k = 0; k < 4; ++k) out += w[k] * Elem<T>::Load(x[pos[k]]);
          continue;
        }
        A v = w[0] * Elem<T>::Load(x[pos[0]]);
        for (int k = 1; k < 4; ++k) {
          const A t = w[k] * Elem<T>::Load(x[pos[k]]);
          v = t > v ? t : v;
        }
        out = first || v > out ? v : out;
        first = false;
      }
    }
    if (!p.max_mode) out /= static_cast<A>(g.count);
    St(y, i, out);
  }
};

template <typename T>
struct RoiAlignGradFn {
  RoiAlignParams p;
  double* sums;  // scratch: one plane of doubles per (image, channel)
  A8_HD void operator()(int64_t plane) const {
    using A = Acc<T>;
    const int64_t b = plane / p.channels, c = plane % p.channels, hw = p.height * p.width;
    double* s = sums + plane * hw;
    for (int64_t k = 0; k < hw; ++k) s[k] = 0;
    const T* dy = static_cast<const T*>(p.dy);
    for (int64_t r = 0; r < p.rois; ++r) {
      if (RoiImage(p, r) != b) continue;
      const RoiBins<A> g = BinsOf<T>(p, r);
      for (int64_t ph = 0; ph < p.out_h; ++ph) {
        for (int64_t pw = 0; pw < p.out_w; ++pw) {
          const double d = ToDouble(dy[((r * p.channels + c) * p.out_h + ph) * p.out_w + pw]) /
                           static_cast<double>(g.count);
          for (int64_t iy = 0; iy < g.grid_h; ++iy) {
            for (int64_t ix = 0; ix < g.grid_w; ++ix) {
              int64_t pos[4];
              A w[4];
              if (!SampleAt(p, g, ph, pw, iy, ix, pos, w)) continue;
              for (int k = 0; k < 4; ++k) s[pos[k]] += d * static_cast<double>(w[k]);
            }
          }
        }
      }
    }
    T* dx = static_cast<T*>(p.dst) + plane * hw;
    for (int64_t k = 0; k < hw; ++k) dx[k] = FromDouble<T>(s[k]);
  }
};

DevStatus CheckRoi(const RoiAlignParams& p, const char* op) {
  if (p.height < 1 || p.width < 1 || p.out_h < 1 || p.out_w < 1 || p.sampling_ratio < 0) {
    return DevError(op);
  }
  return DevOk();
}

DevStatus CheckUnpool(const MaxUnpoolParams& p, const char* op) {
  if (p.spatial < 1 || p.spatial > kMaxUnpoolDims) return DevError(op);
  for (int d = 0; d < p.spatial; ++d) {
    if (p.inferred[d] < 1 || p.out_dims[d] < p.inferred[d]) return DevError(op);
  }
  return DevOk();
}

}  // namespace

DevStatus MaxUnpool(DevCtx& ctx, const MaxUnpoolParams& p) {
  A8_DEV_RETURN_IF_ERROR(CheckUnpool(p, "MaxUnpool: bad spatial dims"));
  return DispatchFloat(p.dtype,
                       [&](auto t) { return ForEach(ctx, p.planes, MaxUnpoolFn<decltype(t)>{p}); });
}

DevStatus MaxUnpoolGrad(DevCtx& ctx, const MaxUnpoolParams& p) {
  A8_DEV_RETURN_IF_ERROR(CheckUnpool(p, "a8.MaxUnpoolGrad: bad spatial dims"));
  void* mem = nullptr;
  if (p.planes > 0) {
    A8_DEV_RETURN_IF_ERROR(Scratch(ctx, sizeof(int64_t) * p.planes * p.out_plane, &mem));
  }
  return DispatchFloat(p.dtype, [&](auto t) {
    return ForEach(ctx, p.planes, MaxUnpoolGradFn<decltype(t)>{p, static_cast<int64_t*>(mem)});
  });
}

DevStatus RoiAlign(DevCtx& ctx, const RoiAlignParams& p) {
  A8_DEV_RETURN_IF_ERROR(CheckRoi(p, "RoiAlign: bad sizes"));
  return DispatchFloat(p.dtype, [&](auto t) {
    return ForEach(ctx, p.rois * p.channels * p.out_h * p.out_w, RoiAlignFn<decltype(t)>{p});
  });
}

DevStatus RoiAlignGrad(DevCtx& ctx, const RoiAlignParams& p) {
  A8_DEV_RETURN_IF_ERROR(CheckRoi(p, "a8.RoiAlignGrad: bad sizes"));
  if (p.max_mode) return DevError("a8.RoiAlignGrad: mode max is not differentiable");
  const int64_t planes = p.batch * p.channels;
  void* mem = nullptr;
  if (planes > 0) {
    A8_DEV_RETURN_IF_ERROR(Scratch(ctx, sizeof(double) * planes * p.height * p.width, &mem));
  }
  return DispatchFloat(p.dtype, [&](auto t) {
    return ForEach(ctx, planes, RoiAlignGradFn<decltype(t)>{p, static_cast<double*>(mem)});
  });
}

}  // namespace a8::A8_DEV_NS::roi_pool

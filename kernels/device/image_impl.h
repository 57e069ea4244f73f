// The Col2Im and DeformConv kernels (declared in grid_sample.h).
#include "kernels/device/grid_sample.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS::grid_sample {
namespace {

A8_HD float FloorOf(float v) { return ::floorf(v); }
A8_HD double FloorOf(double v) { return ::floor(v); }

// One output pixel (n, c, image position): every block offset k whose sliding position lands
// on it, in block order.
template <typename T>
struct Col2ImFn {
  Col2ImParams p;
  int64_t image_size, block_size, positions;
  A8_HD void operator()(int64_t i) const {
    using A = Acc<T>;
    const int64_t nc = i / image_size;
    int64_t rest = i % image_size;
    int64_t at[kMaxSpatial];
    for (int d = p.rank - 1; d >= 0; --d) {
      at[d] = rest % p.image[d];
      rest /= p.image[d];
    }
    const T* x = static_cast<const T*>(p.x) + nc * block_size * positions;
    A sum = A(0);
    for (int64_t k = 0; k < block_size; ++k) {
      int64_t kr = k, l = 0, lstride = 1;
      bool hit = true;
      for (int d = p.rank - 1; d >= 0; --d) {
        const int64_t kd = kr % p.block[d];
        kr /= p.block[d];
        const int64_t pos = at[d] + p.pads_begin[d] - kd * p.dilations[d];
        if (pos < 0 || pos % p.strides[d] != 0 || pos / p.strides[d] >= p.blocks_out[d]) {
          hit = false;
          break;
        }
        l += (pos / p.strides[d]) * lstride;
        lstride *= p.blocks_out[d];
      }
      if (hit) sum += Ld(x, k * positions + l);
    }
    St(static_cast<T*>(p.y), i, sum);
  }
};

// One column entry (n, c * block + k, l) of Col2Im's gradient: dy at the pixel it sums into.
template <typename T>
struct Im2ColFn {
  Col2ImParams p;
  int64_t image_size, block_size, positions;
  A8_HD void operator()(int64_t i) const {
    const int64_t l = i % positions;
    const int64_t k = (i / positions) % block_size;
    const int64_t nc = i / (positions * block_size);
    int64_t kr = k, lr = l, at = 0, stride = 1;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t kd = kr % p.block[d], ld = lr % p.blocks_out[d];
      kr /= p.block[d];
      lr /= p.blocks_out[d];
      const int64_t pos = ld * p.strides[d] - p.pads_begin[d] + kd * p.dilations[d];
      if (pos < 0 || pos >= p.image[d]) {
        static_cast<T*>(p.y)[i] = T{};
        return;
      }
      at += pos * stride;
      stride *= p.image[d];
    }
    static_cast<T*>(p.y)[i] = static_cast<const T*>(p.x)[nc * image_size + at];
  }
};

// fn(at, a, b, wh, ww) for each of the up to four pixels that bilinear sampling at (h, w) of an
// [hs, ws] plane reads inside it, rows then columns: its offset in the plane, its corner (a, b)
// (0: the floor, 1: the one past it) and its weights along h and w. Nothing outside the image.
template <typename A, typename Fn>
A8_HD void ForEachBilinearCorner(int64_t hs, int64_t ws, A h, A w, Fn&& fn) {
  if (!(h > A(-1) && h < static_cast<A>(hs) && w > A(-1) && w < static_cast<A>(ws))) return;
  const A h0 = FloorOf(h), w0 = FloorOf(w);
  const A th = h - h0, tw = w - w0;
  const int64_t ih = static_cast<int64_t>(h0), iw = static_cast<int64_t>(w0);
  for (int a = 0; a < 2; ++a) {
    const int64_t y = ih + a;
    if (y < 0 || y >= hs) continue;
    const A wh = a == 0 ? A(1) - th : th;
    for (int b = 0; b < 2; ++b) {
      const int64_t x = iw + b;
      if (x < 0 || x >= ws) continue;
      fn(y * ws + x, a, b, wh, b == 0 ? A(1) - tw : tw);
    }
  }
}

// Bilinear's value at (h, w) and its derivatives along h and w (all 0 outside the image).
template <typename T, typename A = Acc<T>>
A8_HD A BilinearGrad(const T* plane, int64_t hs, int64_t ws, A h, A w, A* dh, A* dw) {
  *dh = A(0);
  *dw = A(0);
  A sum = A(0);
  ForEachBilinearCorner(hs, ws, h, w, [&](int64_t at, int a, int b, A wh, A ww) {
    const A dwh = a == 0 ? A(-1) : A(1), dww = b == 0 ? A(-1) : A(1);
    const A v = Ld(plane, at);
    sum += wh * ww * v;
    *dh += dwh * ww * v;
    *dw += wh * dww * v;
  });
  return sum;
}

// x[n, c] at (h, w), bilinear with zeros outside the image.
template <typename T, typename A = Acc<T>>
A8_HD A Bilinear(const T* plane, int64_t hs, int64_t ws, A h, A w) {
  A dh, dw;  // unused: their sums are dropped once this is inlined
  return BilinearGrad(plane, hs, ws, h, w, &dh, &dw);
}

// The sampling position of tap k at output pixel (oh, ow) for offset-group channel row `oc`
// (= (n * G + og) * taps + k).
template <typename T, typename A = Acc<T>>
A8_HD void TapPosition(const DeformConvParams& p, int64_t oc, int64_t k, int64_t oh, int64_t ow,
                       A* h, A* w) {
  const T* off = static_cast<const T*>(p.offset);
  const int64_t out = p.oh * p.ow, pix = oh * p.ow + ow;
  *h = static_cast<A>(oh * p.stride[0] - p.pad[0] + (k / p.kw) * p.dilation[0]) +
       Ld(off, (oc * 2) * out + pix);
  *w = static_cast<A>(ow * p.stride[1] - p.pad[1] + (k % p.kw) * p.dilation[1]) +
       Ld(off, (oc * 2 + 1) * out + pix);
}

// The sizes every DeformConv kernel derives: input channels a group (cpg), output channels a
// group (mpg), input channels an offset group (cpo), taps a kernel window and output pixels a
// plane.
struct DeformSizes {
  int64_t cpg, mpg, cpo, taps, out;
  A8_HD explicit DeformSizes(const DeformConvParams& p)
      : cpg(p.c / p.group),
        mpg(p.m / p.group),
        cpo(p.c / p.offset_group),
        taps(p.kh * p.kw),
        out(p.oh * p.ow) {}
};

template <typename T, typename A = Acc<T>>
A8_HD A MaskAt(const DeformConvParams& p, int64_t oc, int64_t pix) {
  return p.mask != nullptr ? Ld(static_cast<const T*>(p.mask), oc * p.oh * p.ow + pix) : A(1);
}

// dx of one (n, c) plane: zeroed, then every (output channel of c's group, pixel, tap) adds
// w * mask * dy times the bilinear weights at the taps it read.
template <typename T>
struct DeformConvGradXFn {
  DeformConvGradParams gp;
  A8_HD void operator()(int64_t nc) const {
    using A = Acc<T>;
    const DeformConvParams& p = gp.fwd;
    const int64_t n = nc / p.c, c = nc % p.c;
    const auto [cpg, mpg, cpo, taps, out] = DeformSizes(p);
    const int64_t g = c / cpg, ci = c % cpg, og = c / cpo;
    T* dx = static_cast<T*>(gp.dx) + nc * p.h * p.w;
    for (int64_t j = 0; j < p.h * p.w; ++j) St(dx, j, A(0));
    const T* dy = static_cast<const T*>(gp.dy);
    const T* wt = static_cast<const T*>(p.weight);
    for (int64_t m = g * mpg; m < (g + 1) * mpg; ++m) {
      for (int64_t pix = 0; pix < out; ++pix) {
        const A g0 = Ld(dy, (n * p.m + m) * out + pix);
        for (int64_t k = 0; k < taps; ++k) {
          const int64_t oc = (n * p.offset_group + og) * taps + k;
          const A coef = g0 * Ld(wt, (m * cpg + ci) * taps + k) * MaskAt<T>(p, oc, pix);
          A h, w;
          TapPosition<T>(p, oc, k, pix / p.ow, pix % p.ow, &h, &w);
          ForEachBilinearCorner(p.h, p.w, h, w, [&](int64_t at, int, int, A wh, A ww) {
            St(dx, at, Ld(dx, at) + coef * wh * ww);
          });
        }
      }
    }
  }
};

// dw of one weight (m, ci, k): the sum over images and pixels of dy * mask * the sampled value.
template <typename T>
struct DeformConvGradWFn {
  DeformConvGradParams gp;
  A8_HD void operator()(int64_t i) const {
    using A = Acc<T>;
    const DeformConvParams& p = gp.fwd;
    const auto [cpg, mpg, cpo, taps, out] = DeformSizes(p);
    const int64_t k = i % taps, ci = (i / taps) % cpg, m = i / (taps * cpg);
    const int64_t c = (m / mpg) * cpg + ci, og = c / cpo;
    const T* dy = static_cast<const T*>(gp.dy);
    A sum = A(0);
    for (int64_t n = 0; n < p.n; ++n) {
      const T* plane = static_cast<const T*>(p.x) + (n * p.c + c) * p.h * p.w;
      const int64_t oc = (n * p.offset_group + og) * taps + k;
      for (int64_t pix = 0; pix < out; ++pix) {
        A h, w;
        TapPosition<T>(p, oc, k, pix / p.ow, pix % p.ow, &h, &w);
        sum += Ld(dy, (n * p.m + m) * out + pix) * MaskAt<T>(p, oc, pix) *
               Bilinear<T>(plane, p.h, p.w, h, w);
      }
    }
    St(static_cast<T*>(gp.dw), i, sum);
  }
};

// doffset (dh, dw) and dmask of one (n, offset group, tap, pixel): sums over the group's input
// channels and, for each, the output channels that read it.
template <typename T>
struct DeformConvGradOffsetFn {
  DeformConvGradParams gp;
  A8_HD void operator()(int64_t i) const {
    using A = Acc<T>;
    const DeformConvParams& p = gp.fwd;
    const auto [cpg, mpg, cpo, taps, out] = DeformSizes(p);
    const int64_t pix = i % out, oc = i / out;  // oc = (n * G + og) * taps + k
    const int64_t k = oc % taps, og = (oc / taps) % p.offset_group,
                  n = oc / (taps * p.offset_group);
    const T* dy = static_cast<const T*>(gp.dy);
    const T* wt = static_cast<const T*>(p.weight);
    A h, w;
    TapPosition<T>(p, oc, k, pix / p.ow, pix % p.ow, &h, &w);
    const A mask = MaskAt<T>(p, oc, pix);
    A gh = A(0), gw = A(0), gm = A(0);
    for (int64_t c = og * cpo; c < (og + 1) * cpo; ++c) {
      const int64_t g = c / cpg, ci = c % cpg;
      A s = A(0);
      for (int64_t m = g * mpg; m < (g + 1) * mpg; ++m)
        s += Ld(dy, (n * p.m + m) * out + pix) * Ld(wt, (m * cpg + ci) * taps + k);
      A dvh, dvw;
      const A v = BilinearGrad<T>(static_cast<const T*>(p.x) + (n * p.c + c) * p.h * p.w, p.h, p.w,
                                  h, w, &dvh, &dvw);
      gm += s * v;
      gh += s * mask * dvh;
      gw += s * mask * dvw;
    }
    T* doff = static_cast<T*>(gp.doffset);
    St(doff, (oc * 2) * out + pix, gh);
    St(doff, (oc * 2 + 1) * out + pix, gw);
    if (gp.dmask != nullptr) St(static_cast<T*>(gp.dmask), oc * out + pix, gm);
  }
};

// One output element (n, m, oh, ow): bias, then the group's channels, each over its taps.
template <typename T>
struct DeformConvFn {
  DeformConvParams p;
  A8_HD void operator()(int64_t i) const {
    using A = Acc<T>;
    const int64_t ow = i % p.ow, oh = (i / p.ow) % p.oh;
    const int64_t m = (i / (p.ow * p.oh)) % p.m, n = i / (p.ow * p.oh * p.m);
    const auto [cpg, mpg, cpo, taps, out] = DeformSizes(p);
    const int64_t pix = oh * p.ow + ow;
    const T* x = static_cast<const T*>(p.x);
    const T* wt = static_cast<const T*>(p.weight);
    const T* mask = static_cast<const T*>(p.mask);
    A sum = p.bias != nullptr ? Ld(static_cast<const T*>(p.bias), m) : A(0);
    const int64_t g = m / mpg;
    for (int64_t ci = 0; ci < cpg; ++ci) {
      const int64_t c = g * cpg + ci;
      const int64_t og = c / cpo;
      const T* plane = x + (n * p.c + c) * p.h * p.w;
      for (int64_t k = 0; k < taps; ++k) {
        const int64_t oc = (n * p.offset_group + og) * taps + k;  // (n, og, tap k)
        A h, w;
        TapPosition<T>(p, oc, k, oh, ow, &h, &w);
        A v = Bilinear<T>(plane, p.h, p.w, h, w);
        if (mask != nullptr) v *= Ld(mask, oc * out + pix);
        sum += Ld(wt, (m * cpg + ci) * taps + k) * v;
      }
    }
    St(static_cast<T*>(p.y), i, sum);
  }
};

}  // namespace

// Checks Col2Im's geometry (rank, strides, dilations) and returns the image, block and
// block-position counts of one (n, c) plane; `op` names the kernel in the error.
inline DevStatus Col2ImSizes(const Col2ImParams& p, const char* op, int64_t* image_size,
                             int64_t* block_size, int64_t* positions) {
  if (p.rank < 1 || p.rank > kMaxSpatial) return DevError(std::string(op) + ": rank out of range");
  for (int d = 0; d < p.rank; ++d) {
    if (p.strides[d] < 1 || p.dilations[d] < 1)
      return DevError(std::string(op) + ": bad stride/dilation");
    *image_size *= p.image[d];
    *block_size *= p.block[d];
    *positions *= p.blocks_out[d];
  }
  return DevOk();
}

DevStatus Col2Im(DevCtx& ctx, const Col2ImParams& p) {
  int64_t image_size = 1, block_size = 1, positions = 1;
  A8_DEV_RETURN_IF_ERROR(Col2ImSizes(p, "Col2Im", &image_size, &block_size, &positions));
  return DispatchFloat(p.dtype, [&](auto t) {
    return ForEach(ctx, p.n * p.c * image_size,
                   Col2ImFn<decltype(t)>{p, image_size, block_size, positions},
                   block_size * p.rank);
  });
}

DevStatus Col2ImGrad(DevCtx& ctx, const Col2ImParams& p) {
  int64_t image_size = 1, block_size = 1, positions = 1;
  A8_DEV_RETURN_IF_ERROR(Col2ImSizes(p, "Col2ImGrad", &image_size, &block_size, &positions));
  return DispatchFloat(p.dtype, [&](auto t) {
    return ForEach(ctx, p.n * p.c * block_size * positions,
                   Im2ColFn<decltype(t)>{p, image_size, block_size, positions}, p.rank * 4);
  });
}

// Checks DeformConv's groups: both at least 1, and the channels divisible by them; `op` names
// the kernel in the error.
inline DevStatus CheckDeformGroups(const DeformConvParams& p, const char* op) {
  if (p.group < 1 || p.offset_group < 1 || p.c % p.group != 0 || p.m % p.group != 0 ||
      p.c % p.offset_group != 0)
    return DevError(std::string(op) + ": channels not divisible by the groups");
  return DevOk();
}

DevStatus DeformConv(DevCtx& ctx, const DeformConvParams& p) {
  A8_DEV_RETURN_IF_ERROR(CheckDeformGroups(p, "DeformConv"));
  const DeformSizes z(p);
  return DispatchFloat(p.dtype, [&](auto t) {
    return ForEach(ctx, p.n * p.m * z.out, DeformConvFn<decltype(t)>{p}, z.cpg * z.taps * 8);
  });
}

DevStatus DeformConvGrad(DevCtx& ctx, const DeformConvGradParams& gp) {
  const DeformConvParams& p = gp.fwd;
  A8_DEV_RETURN_IF_ERROR(CheckDeformGroups(p, "DeformConvGrad"));
  if ((gp.dmask != nullptr) != (p.mask != nullptr))
    return DevError("DeformConvGrad: dmask needs the mask and the mask dmask");
  const DeformSizes z(p);
  return DispatchFloat(p.dtype, [&](auto t) {
    using T = decltype(t);
    A8_DEV_RETURN_IF_ERROR(
        ForEach(ctx, p.n * p.c, DeformConvGradXFn<T>{gp}, p.h * p.w + z.mpg * z.out * z.taps * 12));
    A8_DEV_RETURN_IF_ERROR(
        ForEach(ctx, p.m * z.cpg * z.taps, DeformConvGradWFn<T>{gp}, p.n * z.out * 12));
    return ForEach(ctx, p.n * p.offset_group * z.taps * z.out, DeformConvGradOffsetFn<T>{gp},
                   z.cpo * (z.mpg + 16));
  });
}

}  // namespace a8::A8_DEV_NS::grid_sample

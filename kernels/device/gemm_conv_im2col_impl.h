// Convolution by im2col / col2im + engine GEMMs (ConvByGemm, gemm_conv.h): every ConvDesc the
// GPU libraries do not take (1-D / 3-D, f64, pads that cuDNN's symmetric padding cannot express)
// and, in the host emulation, all of them. The same algorithm as the CPU reference
// (kernels/cpu/conv.cc, grad_conv_pool.cc): f16/bf16 products accumulate in float and round once,
// a bias is added to the unrounded sum, the filter gradient sums over the whole batch unrounded.
//
// Samples are processed in chunks whose column matrix stays under kConvMaxColElems elements
// (kernels/common/conv_batch_chunk.h, shared with the CPU reference's filter gradient).
#pragma once

#include "kernels/common/conv_batch_chunk.h"
#include "kernels/device/gemm_conv.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS {
namespace gemm_conv {

// Spatial geometry padded to 3 dims (leading 1s): the image is x, the grid is y; grid position
// o reads image position o * s - pb + t * d for tap t.
struct ConvGeom {
  int64_t img[3], grid[3], k[3], s[3], d[3], pb[3];
  int64_t img_size, grid_size, k_size;
};

inline ConvGeom MakeConvGeom(const ConvDesc& c) {
  ConvGeom g;
  for (int i = 0; i < 3; ++i) {
    const int j = i - (3 - c.rank);  // index into the descriptor's dims; < 0 for padding dims
    g.img[i] = j >= 0 ? c.in_spatial[j] : 1;
    g.grid[i] = j >= 0 ? c.out_spatial[j] : 1;
    g.k[i] = j >= 0 ? c.kernel[j] : 1;
    g.s[i] = j >= 0 ? c.strides[j] : 1;
    g.d[i] = j >= 0 ? c.dilations[j] : 1;
    g.pb[i] = j >= 0 ? c.pads[j] : 0;
  }
  g.img_size = g.img[0] * g.img[1] * g.img[2];
  g.grid_size = g.grid[0] * g.grid[1] * g.grid[2];
  g.k_size = g.k[0] * g.k[1] * g.k[2];
  return g;
}

inline bool IsPointwise(const ConvGeom& g) {
  for (int i = 0; i < 3; ++i) {
    if (g.k[i] != 1 || g.s[i] != 1 || g.pb[i] != 0 || g.img[i] != g.grid[i]) return false;
  }
  return true;
}

// col[gi * sg + j * sj + r * sr + p] = x of sample j (of the chunk), channel gi * cg + r / k_size,
// at the image position tap r % k_size of grid position p reads (0 in the padding).
template <typename T>
struct Im2ColFn {
  ConvGeom g;
  int64_t cg, nb, in_channels;
  int64_t sg, sj, sr;
  const T* x;  // the chunk's first sample
  T* col;
  A8_HD void operator()(int64_t idx) const {
    const int64_t rows = cg * g.k_size;
    const int64_t p = idx % g.grid_size;
    int64_t rest = idx / g.grid_size;
    const int64_t r = rest % rows;
    rest /= rows;
    const int64_t j = rest % nb, gi = rest / nb;
    const int64_t c = gi * cg + r / g.k_size, kk = r % g.k_size;
    const int64_t t2 = kk % g.k[2], t1 = (kk / g.k[2]) % g.k[1], t0 = kk / (g.k[2] * g.k[1]);
    const int64_t o2 = p % g.grid[2], o1 = (p / g.grid[2]) % g.grid[1],
                  o0 = p / (g.grid[2] * g.grid[1]);
    const int64_t i0 = o0 * g.s[0] - g.pb[0] + t0 * g.d[0];
    const int64_t i1 = o1 * g.s[1] - g.pb[1] + t1 * g.d[1];
    const int64_t i2 = o2 * g.s[2] - g.pb[2] + t2 * g.d[2];
    const bool inside =
        i0 >= 0 && i0 < g.img[0] && i1 >= 0 && i1 < g.img[1] && i2 >= 0 && i2 < g.img[2];
    T v = Elem<T>::Store(Acc<T>(0));
    if (inside) v = x[(j * in_channels + c) * g.img_size + (i0 * g.img[1] + i1) * g.img[2] + i2];
    col[gi * sg + j * sj + r * sr + p] = v;
  }
};

// x[j, c, i] = bias[c] + the sum over taps of the column entries that land on image position i:
// col[gi][j][r][p] (compute type A) with r = (c % cg) * k_size + tap, taps in order (the CPU's
// col2im adds them in the same order, starting from the bias).
template <typename T, typename A>
struct Col2ImFn {
  ConvGeom g;
  int64_t cg, nb, in_channels;
  const A* col;
  const T* bias;
  T* x;  // the chunk's first sample
  A8_HD void operator()(int64_t idx) const {
    const int64_t i = idx % g.img_size;
    const int64_t c = (idx / g.img_size) % in_channels, j = idx / (g.img_size * in_channels);
    const int64_t gi = c / cg, rows = cg * g.k_size;
    const int64_t i2 = i % g.img[2], i1 = (i / g.img[2]) % g.img[1], i0 = i / (g.img[2] * g.img[1]);
    const A* base = col + ((gi * nb + j) * rows + (c % cg) * g.k_size) * g.grid_size;
    A v = bias != nullptr ? static_cast<A>(Ld(bias, c)) : A(0);
    for (int64_t t0 = 0; t0 < g.k[0]; ++t0) {
      const int64_t q0 = i0 + g.pb[0] - t0 * g.d[0];
      if (q0 < 0 || q0 % g.s[0] != 0 || q0 / g.s[0] >= g.grid[0]) continue;
      for (int64_t t1 = 0; t1 < g.k[1]; ++t1) {
        const int64_t q1 = i1 + g.pb[1] - t1 * g.d[1];
        if (q1 < 0 || q1 % g.s[1] != 0 || q1 / g.s[1] >= g.grid[1]) continue;
        for (int64_t t2 = 0; t2 < g.k[2]; ++t2) {
          const int64_t q2 = i2 + g.pb[2] - t2 * g.d[2];
          if (q2 < 0 || q2 % g.s[2] != 0 || q2 / g.s[2] >= g.grid[2]) continue;
          const int64_t o = ((q0 / g.s[0]) * g.grid[1] + q1 / g.s[1]) * g.grid[2] + q2 / g.s[2];
          v += base[((t0 * g.k[1] + t1) * g.k[2] + t2) * g.grid_size + o];
        }
      }
    }
    St(x, idx, static_cast<Acc<T>>(v));
  }
};

// dyt[ch][j * spatial + p] = dy[j][ch][p] for the chunk's nb samples: the filter gradient's GEMM
// then sums over samples and positions in one k dimension.
template <typename T>
struct ChannelsFirstFn {
  int64_t nb, channels, spatial;
  const T* dy;
  T* dyt;
  A8_HD void operator()(int64_t idx) const {
    const int64_t p = idx % spatial, j = (idx / spatial) % nb, ch = idx / (spatial * nb);
    dyt[idx] = dy[(j * channels + ch) * spatial + p];
  }
};

template <typename T, typename A>
struct StoreAccFn {
  const A* acc;
  T* out;
  A8_HD void operator()(int64_t i) const { St(out, i, static_cast<Acc<T>>(acc[i])); }
};

inline DevStatus CheckConvDesc(const ConvDesc& c) {
  if (c.rank < 1 || c.rank > 3) return DevError("convolution: 1 to 3 spatial dims");
  if (c.group < 1 || c.in_channels % c.group != 0 || c.out_channels % c.group != 0 || c.batch < 0)
    return DevError("convolution: group does not divide the channels");
  for (int i = 0; i < c.rank; ++i) {
    if (c.kernel[i] < 1 || c.strides[i] < 1 || c.dilations[i] < 1 || c.in_spatial[i] < 0 ||
        c.out_spatial[i] < 1)
      return DevError("convolution: bad spatial geometry");
  }
  return DevOk();
}

template <typename T>
DevStatus ConvByGemmTyped(DevCtx& ctx, BlasEngine& engine, const ConvDesc& c) {
  using A = Acc<T>;
  const ConvGeom g = MakeConvGeom(c);
  const int64_t grp = c.group, cg = c.in_channels / grp, mg = c.out_channels / grp;
  const int64_t rows = cg * g.k_size;  // K of the forward GEMM
  const int64_t x_sample = c.in_channels * g.img_size, y_sample = c.out_channels * g.grid_size;
  const int64_t per_sample = c.in_channels * g.k_size * g.grid_size;
  const int64_t nb_max = ConvBatchChunk(c.batch, per_sample);
  const bool pointwise = IsPointwise(g);
  const DType acc_type = c.dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  T* x = static_cast<T*>(c.x);
  T* w = static_cast<T*>(c.w);
  T* y = static_cast<T*>(c.y);

  GemmDesc gd;
  gd.a_type = gd.b_type = c.dtype;
  if (c.kind == ConvKind::kBackwardFilter) {
    void* acc = nullptr;
    A8_DEV_RETURN_IF_ERROR(engine.Buffer(
        ctx, BlasEngine::kConvAcc, static_cast<size_t>(c.out_channels * rows) * sizeof(A), &acc));
    if (c.batch == 0 || g.grid_size == 0)
      A8_DEV_RETURN_IF_ERROR(
          Fill(acc, 0, static_cast<size_t>(c.out_channels * rows) * sizeof(A), ctx.stream));
    for (int64_t n0 = 0; n0 < c.batch; n0 += nb_max) {
      const int64_t nb = c.batch - n0 < nb_max ? c.batch - n0 : nb_max, np = nb * g.grid_size;
      void *cols = nullptr, *dyt = nullptr;
      A8_DEV_RETURN_IF_ERROR(engine.Buffer(
          ctx, BlasEngine::kConvCols, static_cast<size_t>(grp * rows * np) * sizeof(T), &cols));
      A8_DEV_RETURN_IF_ERROR(engine.Buffer(
          ctx, BlasEngine::kConvGrad, static_cast<size_t>(c.out_channels * np) * sizeof(T), &dyt));
      A8_DEV_RETURN_IF_ERROR(ForEach(ctx, grp * rows * np,
                                     Im2ColFn<T>{g, cg, nb, c.in_channels, rows * np, g.grid_size,
                                                 np, x + n0 * x_sample, static_cast<T*>(cols)}));
      A8_DEV_RETURN_IF_ERROR(ForEach(ctx, c.out_channels * np,
                                     ChannelsFirstFn<T>{nb, c.out_channels, g.grid_size,
                                                        y + n0 * y_sample, static_cast<T*>(dyt)}));
      // dW_g [mg, rows] (+)= dY_g [mg, np] col_g^T, every group in one batched GEMM.
      gd.c_type = acc_type;
      gd.trans_a = false;
      gd.trans_b = true;
      gd.m = mg;
      gd.n = rows;
      gd.k = np;
      gd.lda = np;
      gd.ldb = np;
      gd.ldc = rows;
      gd.batch = grp;
      gd.stride_a = mg * np;
      gd.stride_b = rows * np;
      gd.stride_c = mg * rows;
      gd.beta = n0 > 0 ? 1.0 : 0.0;
      gd.a = dyt;
      gd.b = cols;
      gd.c = acc;
      A8_DEV_RETURN_IF_ERROR(engine.Gemm(ctx, gd));
    }
    return ForEach(ctx, c.out_channels * rows, StoreAccFn<T, A>{static_cast<const A*>(acc), w});
  }

  if (c.kind == ConvKind::kForward) {
    if (c.bias != nullptr)
      A8_DEV_RETURN_IF_ERROR(
          FillChannelBias(ctx, c.dtype, c.batch, c.out_channels, g.grid_size, c.bias, y));
    gd.c_type = c.dtype;
    gd.m = mg;
    gd.n = g.grid_size;
    gd.k = rows;
    gd.lda = rows;
    gd.ldb = g.grid_size;
    gd.ldc = g.grid_size;
    gd.stride_a = 0;
    gd.stride_c = y_sample;
    gd.beta = c.bias != nullptr ? 1.0 : 0.0;
    for (int64_t n0 = 0; n0 < c.batch; n0 += nb_max) {
      const int64_t nb = c.batch - n0 < nb_max ? c.batch - n0 : nb_max;
      const T* cols = x + n0 * x_sample;
      int64_t group_stride = cg * g.img_size;  // pointwise: x itself is the column matrix
      gd.stride_b = x_sample;
      if (!pointwise) {
        void* buf = nullptr;
        A8_DEV_RETURN_IF_ERROR(
            engine.Buffer(ctx, BlasEngine::kConvCols,
                          static_cast<size_t>(grp * nb * rows * g.grid_size) * sizeof(T), &buf));
        A8_DEV_RETURN_IF_ERROR(ForEach(
            ctx, grp * nb * rows * g.grid_size,
            Im2ColFn<T>{g, cg, nb, c.in_channels, nb * rows * g.grid_size, rows * g.grid_size,
                        g.grid_size, x + n0 * x_sample, static_cast<T*>(buf)}));
        cols = static_cast<const T*>(buf);
        group_stride = nb * rows * g.grid_size;
        gd.stride_b = rows * g.grid_size;
      }
      // Y_g[n] [mg, P] = W_g [mg, rows] col_g[n] [rows, P], batched over the chunk's samples.
      for (int64_t gi = 0; gi < grp; ++gi) {
        gd.batch = nb;
        gd.a = w + gi * mg * rows;
        gd.b = cols + gi * group_stride;
        gd.c = y + n0 * y_sample + gi * mg * g.grid_size;
        A8_DEV_RETURN_IF_ERROR(engine.Gemm(ctx, gd));
      }
    }
    return DevOk();
  }

  // kBackwardData: col_g[n] [rows, P] = W_g^T dY_g[n], then col2im (+ bias) into x.
  gd.trans_a = true;
  gd.m = rows;
  gd.n = g.grid_size;
  gd.k = mg;
  gd.lda = rows;
  gd.ldb = g.grid_size;
  gd.stride_a = 0;
  gd.stride_b = y_sample;
  if (pointwise) {
    // x [cg, P] per group is the column matrix itself.
    if (c.bias != nullptr)
      A8_DEV_RETURN_IF_ERROR(
          FillChannelBias(ctx, c.dtype, c.batch, c.in_channels, g.img_size, c.bias, x));
    gd.c_type = c.dtype;
    gd.ldc = g.grid_size;
    gd.stride_c = x_sample;
    gd.beta = c.bias != nullptr ? 1.0 : 0.0;
    gd.batch = c.batch;
    for (int64_t gi = 0; gi < grp && c.batch > 0; ++gi) {
      gd.a = w + gi * mg * rows;
      gd.b = y + gi * mg * g.grid_size;
      gd.c = x + gi * cg * g.img_size;
      A8_DEV_RETURN_IF_ERROR(engine.Gemm(ctx, gd));
    }
    return DevOk();
  }
  gd.c_type = acc_type;
  gd.ldc = g.grid_size;
  gd.stride_c = rows * g.grid_size;
  gd.beta = 0.0;
  for (int64_t n0 = 0; n0 < c.batch; n0 += nb_max) {
    const int64_t nb = c.batch - n0 < nb_max ? c.batch - n0 : nb_max;
    void* acc = nullptr;
    A8_DEV_RETURN_IF_ERROR(
        engine.Buffer(ctx, BlasEngine::kConvAcc,
                      static_cast<size_t>(grp * nb * rows * g.grid_size) * sizeof(A), &acc));
    gd.batch = nb;
    for (int64_t gi = 0; gi < grp; ++gi) {
      gd.a = w + gi * mg * rows;
      gd.b = y + n0 * y_sample + gi * mg * g.grid_size;
      gd.c = static_cast<A*>(acc) + gi * nb * rows * g.grid_size;
      A8_DEV_RETURN_IF_ERROR(engine.Gemm(ctx, gd));
    }
    A8_DEV_RETURN_IF_ERROR(
        ForEach(ctx, nb * x_sample,
                Col2ImFn<T, A>{g, cg, nb, c.in_channels, static_cast<const A*>(acc),
                               static_cast<const T*>(c.bias), x + n0 * x_sample}));
  }
  return DevOk();
}

}  // namespace gemm_conv

DevStatus ConvByGemm(DevCtx& ctx, BlasEngine& engine, const ConvDesc& d) {
  A8_DEV_RETURN_IF_ERROR(gemm_conv::CheckConvDesc(d));
  return DispatchFloat(d.dtype, [&](auto tag) -> DevStatus {
    return gemm_conv::ConvByGemmTyped<decltype(tag)>(ctx, engine, d);
  });
}

}  // namespace a8::A8_DEV_NS

#include "kernels/cpu/conv.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "kernels/common/unary_math.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/conv_direct.h"
#include "kernels/cpu/fused.h"
#include "kernels/cpu/in_f32.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

using internal::BlasGemm;
using internal::ComputeOutput;
using internal::ComputeView;
using internal::InF32;
using internal::IsHalfType;

// Spatial geometry padded to 3 dims (leading 1s). The "image" is X for Conv and Y for
// ConvTranspose; the "grid" is the other side. image position = grid * s - pad + k * d.
struct Geometry {
  int64_t img[3], grid[3], k[3], s[3], d[3], pb[3];
  int64_t img_size = 1, grid_size = 1, k_size = 1;
};

StatusOr<Geometry> MakeGeometry(const ConvParams& p, bool transpose, Dims* out_spatial) {
  const char* op = transpose ? "ConvTranspose" : "Conv";
  const size_t r = p.in_spatial.size();
  if (r < 1 || r > 3) return Unsupported("{}: {} spatial dims (1 to 3 are supported)", op, r);
  auto check_len = [&](const Dims& v, size_t want, const char* what) -> Status {
    if (!v.empty() && v.size() != want) {
      return InvalidInput("{}: {} has {} values, expected {}", op, what, v.size(), want);
    }
    return Status::Ok();
  };
  if (p.kernel.size() != r) {
    return InvalidInput("{}: kernel rank {} differs from spatial rank {}", op, p.kernel.size(), r);
  }
  A8_RETURN_IF_ERROR(check_len(p.strides, r, "strides"));
  A8_RETURN_IF_ERROR(check_len(p.dilations, r, "dilations"));
  A8_RETURN_IF_ERROR(check_len(p.pads, 2 * r, "pads"));
  A8_RETURN_IF_ERROR(check_len(p.output_padding, r, "output_padding"));
  if (p.group < 1 || p.in_channels % p.group != 0 || p.out_channels % p.group != 0) {
    return InvalidInput("{}: group {} does not divide channels {} -> {}", op, p.group,
                        p.in_channels, p.out_channels);
  }
  Geometry g;
  Dims out(r);
  for (size_t i = 0; i < 3; ++i) {
    g.img[i] = g.grid[i] = g.k[i] = g.s[i] = g.d[i] = 1;
    g.pb[i] = 0;
  }
  for (size_t i = 0; i < r; ++i) {
    const size_t j = 3 - r + i;
    int64_t s = p.strides.empty() ? 1 : p.strides[i];
    int64_t d = p.dilations.empty() ? 1 : p.dilations[i];
    int64_t pb = p.pads.empty() ? 0 : p.pads[i];
    int64_t pe = p.pads.empty() ? 0 : p.pads[r + i];
    int64_t op_pad = p.output_padding.empty() ? 0 : p.output_padding[i];
    int64_t k = p.kernel[i], in = p.in_spatial[i];
    if (s < 1 || d < 1 || k < 1 || in < 0) {
      return InvalidInput("{}: spatial dim {}: stride {}, dilation {}, kernel {}, input {}", op, i,
                          s, d, k, in);
    }
    int64_t span = (k - 1) * d + 1;
    out[i] = transpose ? s * (in - 1) + op_pad + span - pb - pe : (in + pb + pe - span) / s + 1;
    if (out[i] < 1 || (!transpose && in + pb + pe < span)) {
      return InvalidInput("{}: spatial dim {} has no output (input {}, kernel span {}, pads {}+{})",
                          op, i, in, span, pb, pe);
    }
    g.img[j] = transpose ? out[i] : in;
    g.grid[j] = transpose ? in : out[i];
    g.k[j] = k;
    g.s[j] = s;
    g.d[j] = d;
    g.pb[j] = pb;
  }
  for (int i = 0; i < 3; ++i) {
    g.img_size *= g.img[i];
    g.grid_size *= g.grid[i];
    g.k_size *= g.k[i];
  }
  if (out_spatial != nullptr) *out_spatial = out;
  return g;
}

// Calls f(grid_index, image_index) for every grid position whose tap `kk` lands in the image.
template <typename F>
void ForEachTap(const Geometry& g, int64_t kk, F&& f) {
  const int64_t k2 = kk % g.k[2], k1 = (kk / g.k[2]) % g.k[1], k0 = kk / (g.k[2] * g.k[1]);
  int64_t o = 0;
  for (int64_t o0 = 0; o0 < g.grid[0]; ++o0) {
    const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
    const bool in0 = i0 >= 0 && i0 < g.img[0];
    for (int64_t o1 = 0; o1 < g.grid[1]; ++o1) {
      const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
      const bool in01 = in0 && i1 >= 0 && i1 < g.img[1];
      const int64_t base = (i0 * g.img[1] + i1) * g.img[2];
      for (int64_t o2 = 0; o2 < g.grid[2]; ++o2, ++o) {
        const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
        if (in01 && i2 >= 0 && i2 < g.img[2]) f(o, base + i2);
      }
    }
  }
}

// One col row: tap `kk` of one image channel `src` [img_size] into `dst` [grid_size]; zeros
// outside the image. Filled per innermost grid line: the in-image span of the line is a
// contiguous copy when the innermost stride is 1, zeros either side.
template <typename C>
void Im2ColRow(const Geometry& g, int64_t kk, const C* src, C* dst) {
  const int64_t k2 = kk % g.k[2], k1 = (kk / g.k[2]) % g.k[1], k0 = kk / (g.k[2] * g.k[1]);
  if (g.img[0] == 1 && g.grid[0] == 1 && g.s[1] == 1 && g.s[2] == 1 && g.grid[1] == g.img[1] &&
      g.grid[2] == g.img[2]) {
    // A "same" 1-D/2-D conv with unit strides: the row is the image shifted by `delta`, one
    // contiguous copy, then the wrapped-around columns and out-of-image lines set to zero.
    const int64_t h = g.img[1], w = g.img[2], hw = h * w;
    const int64_t dr = k1 * g.d[1] - g.pb[1], dc = k2 * g.d[2] - g.pb[2], delta = dr * w + dc;
    const int64_t b0 = std::clamp<int64_t>(-delta, 0, hw);
    const int64_t e0 = std::clamp<int64_t>(hw - delta, b0, hw);
    std::fill(dst, dst + b0, C(0));
    std::copy(src + b0 + delta, src + e0 + delta, dst + b0);
    std::fill(dst + e0, dst + hw, C(0));
    const int64_t c_lo = std::clamp<int64_t>(-dc, 0, w);
    const int64_t c_hi = std::clamp<int64_t>(w - dc, c_lo, w);
    for (int64_t o1 = 0; o1 < h; ++o1) {
      C* line = dst + o1 * w;
      if (o1 + dr < 0 || o1 + dr >= h) {
        std::fill(line, line + w, C(0));
        continue;
      }
      for (int64_t o2 = 0; o2 < c_lo; ++o2) line[o2] = C(0);
      for (int64_t o2 = c_hi; o2 < w; ++o2) line[o2] = C(0);
    }
    return;
  }
  // Image index along dim 2 is o2 * s - pb + k2 * d = o2 * s + off2; for o2 in [lo, hi) inside.
  const int64_t s2 = g.s[2], n2 = g.grid[2], off2 = k2 * g.d[2] - g.pb[2];
  int64_t lo = off2 >= 0 ? 0 : (-off2 + s2 - 1) / s2;
  int64_t hi = g.img[2] - off2 <= 0 ? 0 : (g.img[2] - off2 + s2 - 1) / s2;
  lo = std::min(lo, n2);
  hi = std::clamp(hi, lo, n2);
  for (int64_t o0 = 0; o0 < g.grid[0]; ++o0) {
    const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
    const bool in0 = i0 >= 0 && i0 < g.img[0];
    for (int64_t o1 = 0; o1 < g.grid[1]; ++o1) {
      C* d = dst + (o0 * g.grid[1] + o1) * n2;
      const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
      if (!in0 || i1 < 0 || i1 >= g.img[1]) {
        std::fill(d, d + n2, C(0));
        continue;
      }
      const int64_t base = (i0 * g.img[1] + i1) * g.img[2] + off2;
      if (n2 <= 32 && lo < hi) {
        // Short lines: one branch-free select loop (the load index is clamped into the line's
        // in-image span) beats three library calls.
        for (int64_t o2 = 0; o2 < n2; ++o2) {
          const int64_t at = o2 < lo ? lo : (o2 >= hi ? hi - 1 : o2);
          const C v = src[base + at * s2];
          d[o2] = o2 >= lo && o2 < hi ? v : C(0);
        }
        continue;
      }
      std::fill(d, d + lo, C(0));
      if (s2 == 1) {
        std::copy(src + base + lo, src + base + hi, d + lo);
      } else {
        for (int64_t o2 = lo; o2 < hi; ++o2) d[o2] = src[base + o2 * s2];
      }
      std::fill(d + hi, d + n2, C(0));
    }
  }
}

// col [channels * k_size, samples * grid_size] (leading dim ld) from `samples` images
// [channels, img_size], `sample_stride` apart: sample j fills columns [j * grid_size, ...).
template <typename C>
void Im2Col(const Geometry& g, int64_t channels, int64_t samples, const C* img,
            int64_t sample_stride, C* col, int64_t ld) {
  const int64_t rows = channels * g.k_size;
  ParallelFor(rows * samples, g.grid_size, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t j = t / rows, row = t % rows;
      Im2ColRow(g, row % g.k_size, img + j * sample_stride + (row / g.k_size) * g.img_size,
                col + row * ld + j * g.grid_size);
    }
  });
}

// image [channels, img_size] += col [channels * k_size, grid_size] scattered back.
template <typename C>
void Col2Im(const Geometry& g, int64_t channels, const C* col, C* img) {
  ParallelFor(channels, g.k_size * g.grid_size, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      C* dst = img + c * g.img_size;
      for (int64_t kk = 0; kk < g.k_size; ++kk) {
        const C* src = col + (c * g.k_size + kk) * g.grid_size;
        ForEachTap(g, kk, [&](int64_t o, int64_t i) { dst[i] += src[o]; });
      }
    }
  });
}

bool IsPointwise(const Geometry& g) {
  for (int i = 0; i < 3; ++i) {
    if (g.k[i] != 1 || g.s[i] != 1 || g.pb[i] != 0 || g.img[i] != g.grid[i]) return false;
  }
  return true;
}

// A convolution's operands in the compute type of T, for Conv (`transpose` false) and
// ConvTranspose: X [batch, in_channels, x_size], W (out_channels * in_channels / group * k_size
// elements in either layout) and Y [batch, out_channels, y_size], where x_size is the image and
// y_size the grid for Conv, the reverse for ConvTranspose.
template <typename T>
struct ConvOperands {
  ConvOperands(const ConvParams& p, const Geometry& g, bool transpose, const void* x, const void* w,
               void* y)
      : cg(p.in_channels / p.group),
        mg(p.out_channels / p.group),
        x_sample(p.in_channels * (transpose ? g.grid_size : g.img_size)),
        y_sample(p.out_channels * (transpose ? g.img_size : g.grid_size)),
        xv(x, p.batch * x_sample),
        wv(w, p.out_channels * cg * g.k_size),
        out(y, p.batch * y_sample) {}

  const int64_t cg, mg;  // input and output channels per group
  const int64_t x_sample, y_sample;
  ComputeView<T> xv, wv;
  ComputeOutput<T> out;
};

// Conv or ConvTranspose (`transpose`) of f16/bf16 operands through `conv`, the same op's f32
// kernel, on float copies (InF32), the operands sized as in ConvOperands.
using ConvFn = Status (*)(const ConvParams&, const void*, const void*, const void*, void*);
Status ConvInF32(const ConvParams& p, const Geometry& g, bool transpose, const void* x,
                 const void* w, const void* bias, void* y, ConvFn conv) {
  const int64_t x_size = transpose ? g.grid_size : g.img_size;
  const int64_t y_size = transpose ? g.img_size : g.grid_size;
  return InF32(p,
               {{x, p.batch * p.in_channels * x_size},
                {w, p.out_channels * (p.in_channels / p.group) * g.k_size},
                {bias, p.out_channels}},
               p.batch * p.out_channels * y_size, y,
               [&](const ConvParams& p32, const float* const* in, float* y32) {
                 return conv(p32, in[0], in[1], in[2], y32);
               });
}

// The bias of `channels` channels in the compute type of T, zeros where there is none.
template <typename T>
std::vector<Compute<T>> BiasOrZeros(const void* bias, int64_t channels) {
  std::vector<Compute<T>> bias_c(static_cast<size_t>(channels), Compute<T>(0));
  if (bias != nullptr) {
    ComputeView<T> bv(bias, channels);
    std::copy(bv.data(), bv.data() + channels, bias_c.begin());
  }
  return bias_c;
}

}  // namespace

StatusOr<Dims> ConvOutputSpatial(const ConvParams& p, bool transpose) {
  Dims out;
  A8_ASSIGN_OR_RETURN(Geometry g, MakeGeometry(p, transpose, &out));
  (void)g;
  return out;
}

namespace {

// Conv, and where `epilogue` is not null and the f32 direct path or oneDNN (its post-ops, see
// onednn_conv.h) runs, a8.FusedConv's epilogue applied as it stores Y: returns whether it was.
StatusOr<bool> ConvWith(const ConvParams& p, const void* x, const void* w, const void* bias,
                        void* y, const internal::DirectEpilogue* epilogue) {
  Dims out_spatial;
  A8_ASSIGN_OR_RETURN(Geometry g, MakeGeometry(p, false, &out_spatial));
  internal::DirectConv direct;
  const bool has_direct = internal::MakeDirectConv(p, out_spatial, &direct);
  if (internal::FastGemmEnabled()) {  // the fast mode (kernel_mode.h): oneDNN where it wins
    // The direct path in row mode wins over oneDNN in f32 and f16 (computed in f32); bf16 keeps
    // oneDNN's bf16 kernels where the CPU has them (else it is computed in f32 as f16 is).
    const bool native_bf16 = p.dtype == DType::kBF16 && internal::OneDnnConvolvesBf16();
    if (native_bf16 || !has_direct || !internal::DirectConvRowMode(direct)) {
      bool fused = false;
      A8_ASSIGN_OR_RETURN(bool fast, epilogue == nullptr
                                         ? internal::FastConv(p, out_spatial, x, w, bias, y)
                                         : internal::FastConv(p, out_spatial, x, w, bias, y,
                                                              epilogue->relu, epilogue->z, &fused));
      if (fast) return fused;
    }
    if (IsHalfType(p.dtype)) {
      A8_RETURN_IF_ERROR(ConvInF32(p, g, false, x, w, bias, y, Conv));
      return false;
    }
  }
  bool applied = false;
  const Status s = Dispatch<TypeSet::kFloat>(p.dtype, "Conv", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    ConvOperands<T> o(p, g, false, x, w, y);
    const bool pointwise = IsPointwise(g);
    if constexpr (std::is_same_v<C, float>) {
      if (has_direct) {
        const std::vector<float> bias_c = BiasOrZeros<T>(bias, p.out_channels);
        // The epilogue in the store only where Y is stored as computed (f32).
        const bool fuse = epilogue != nullptr && std::is_same_v<T, float>;
        internal::DirectConvF32(direct, p.batch, o.xv.data(), o.wv.data(),
                                bias ? bias_c.data() : nullptr, o.out.data(),
                                fuse ? *epilogue : internal::DirectEpilogue{});
        o.out.Flush();
        applied = fuse;
        return Status::Ok();
      }
    }
    if (p.group == 1 && p.batch > 1) {
      // Several samples per GEMM: col [cg * k_size, nb * grid] -> tmp [M, nb * grid], then
      // each sample's [M, grid] block (plus bias) is copied to its place in Y. Small images
      // would otherwise make one tiny GEMM per sample.
      constexpr int64_t kMaxColElems = int64_t{1} << 22;
      const int64_t per_sample = std::max<int64_t>(o.cg * g.k_size, o.mg) * g.grid_size;
      const int64_t nb =
          std::clamp<int64_t>(kMaxColElems / std::max<int64_t>(per_sample, 1), 1, p.batch);
      std::vector<C> col(static_cast<size_t>(o.cg * g.k_size * nb * g.grid_size));
      std::vector<C> tmp(static_cast<size_t>(o.mg * nb * g.grid_size));
      const std::vector<C> bias_c = BiasOrZeros<T>(bias, p.out_channels);
      for (int64_t n0 = 0; n0 < p.batch; n0 += nb) {
        const int64_t cnt = std::min(nb, p.batch - n0), ld = cnt * g.grid_size;
        Im2Col(g, o.cg, cnt, o.xv.data() + n0 * o.x_sample, o.x_sample, col.data(), ld);
        BlasGemm(false, false, o.mg, ld, o.cg * g.k_size, C(1), o.wv.data(), o.cg * g.k_size,
                 col.data(), ld, C(0), tmp.data(), ld);
        ParallelFor(cnt * o.mg, g.grid_size, [&](int64_t b, int64_t e) {
          for (int64_t t = b; t < e; ++t) {
            const int64_t j = t / o.mg, m = t % o.mg;
            const C* src = tmp.data() + m * ld + j * g.grid_size;
            C* dst = o.out.data() + (n0 + j) * o.y_sample + m * g.grid_size;
            const C bm = bias_c[m];
            if (bias != nullptr) {
              for (int64_t i = 0; i < g.grid_size; ++i) dst[i] = src[i] + bm;
            } else {
              std::copy(src, src + g.grid_size, dst);
            }
          }
        });
      }
      o.out.Flush();
      return Status::Ok();
    }
    std::vector<C> col(pointwise ? 0 : static_cast<size_t>(o.cg * g.k_size * g.grid_size));
    for (int64_t n = 0; n < p.batch; ++n) {
      for (int64_t gi = 0; gi < p.group; ++gi) {
        const C* img = o.xv.data() + n * o.x_sample + gi * o.cg * g.img_size;
        const C* cols = img;
        if (!pointwise) {
          Im2Col(g, o.cg, 1, img, 0, col.data(), g.grid_size);
          cols = col.data();
        }
        BlasGemm(false, false, o.mg, g.grid_size, o.cg * g.k_size, C(1),
                 o.wv.data() + gi * o.mg * o.cg * g.k_size, o.cg * g.k_size, cols, g.grid_size,
                 C(0), o.out.data() + n * o.y_sample + gi * o.mg * g.grid_size, g.grid_size);
      }
      if (bias != nullptr) {
        ComputeView<T> bv(bias, p.out_channels);
        for (int64_t m = 0; m < p.out_channels; ++m) {
          C* row = o.out.data() + n * o.y_sample + m * g.grid_size;
          for (int64_t i = 0; i < g.grid_size; ++i) row[i] += bv.data()[m];
        }
      }
    }
    o.out.Flush();
    return Status::Ok();
  });
  A8_RETURN_IF_ERROR(s);
  return applied;
}

}  // namespace

Status Conv(const ConvParams& p, const void* x, const void* w, const void* bias, void* y) {
  return ConvWith(p, x, w, bias, y, nullptr).status();
}

Status FusedConv(const ConvParams& p, bool relu, const void* x, const void* w, const void* bias,
                 const void* z, void* y) {
  const internal::DirectEpilogue epilogue{static_cast<const float*>(z), relu};
  A8_ASSIGN_OR_RETURN(const bool applied, ConvWith(p, x, w, bias, y, &epilogue));
  if (applied || (z == nullptr && !relu)) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Dims out_spatial, ConvOutputSpatial(p, false));
  const int64_t n = p.batch * p.out_channels * NumElements(out_spatial);
  // Y (rounded to T by the convolution) + Z, then Relu, as one program over Y in place: float
  // math rounded once to T, the unfused Add and Relu's bits (Relu commutes with the rounding).
  FusedProgram program;
  FusedConvEpilogue(z != nullptr, relu, &program);
  const void* inputs[2] = {y, z};
  const int64_t counts[2] = {n, n};
  return FusedElementwise(program, p.dtype, inputs, counts, p.dtype, n, y);
}

bool FusedConvChannelsLastTakes(const ConvParams& p, internal::ConvLayouts layouts, bool bias,
                                bool relu, bool z) {
  if (p.dtype != DType::kF32) return false;
  StatusOr<Dims> out_spatial = ConvOutputSpatial(p, false);
  if (!out_spatial.ok()) return false;
  // Only where the NCHW call goes to oneDNN too (ConvWith): the direct kernel's row mode beats
  // oneDNN with its reorders, and it has no NHWC form.
  internal::DirectConv direct;
  if (internal::MakeDirectConv(p, *out_spatial, &direct) && internal::DirectConvRowMode(direct))
    return false;
  return internal::FastConvTakesChannelsLast(p, *out_spatial, layouts, bias, relu, z);
}

Status FusedConvChannelsLast(const ConvParams& p, internal::ConvLayouts layouts, bool relu,
                             const void* x, const void* w, const void* bias, const void* z,
                             void* y) {
  A8_ASSIGN_OR_RETURN(Dims out_spatial, ConvOutputSpatial(p, false));
  bool applied = false;
  A8_ASSIGN_OR_RETURN(const bool ran, internal::FastConv(p, out_spatial, x, w, bias, y, relu, z,
                                                         &applied, layouts));
  if (!ran || !applied)
    return Internal("FusedConv: oneDNN declined a convolution planned with NHWC operands");
  return Status::Ok();
}

Status ConvTranspose(const ConvParams& p, const void* x, const void* w, const void* bias, void* y) {
  A8_ASSIGN_OR_RETURN(Geometry g, MakeGeometry(p, true, nullptr));
  if (internal::FastGemmEnabled()) {  // the fast mode (kernel_mode.h): oneDNN where it wins
    A8_ASSIGN_OR_RETURN(Dims out_spatial, ConvOutputSpatial(p, true));
    A8_ASSIGN_OR_RETURN(bool fast, internal::FastConvTranspose(p, out_spatial, x, w, bias, y));
    if (fast) return Status::Ok();
    if (IsHalfType(p.dtype)) return ConvInF32(p, g, true, x, w, bias, y, ConvTranspose);
  }
  return Dispatch<TypeSet::kFloat>(p.dtype, "ConvTranspose", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    ConvOperands<T> o(p, g, true, x, w, y);
    std::vector<C> col(static_cast<size_t>(o.mg * g.k_size * g.grid_size));
    const std::vector<C> bias_c = BiasOrZeros<T>(bias, p.out_channels);
    for (int64_t n = 0; n < p.batch; ++n) {
      C* y_n = o.out.data() + n * o.y_sample;
      for (int64_t m = 0; m < p.out_channels; ++m) {
        std::fill(y_n + m * g.img_size, y_n + (m + 1) * g.img_size, bias_c[m]);
      }
      for (int64_t gi = 0; gi < p.group; ++gi) {
        BlasGemm(true, false, o.mg * g.k_size, g.grid_size, o.cg, C(1),
                 o.wv.data() + gi * o.cg * o.mg * g.k_size, o.mg * g.k_size,
                 o.xv.data() + n * o.x_sample + gi * o.cg * g.grid_size, g.grid_size, C(0),
                 col.data(), g.grid_size);
        Col2Im(g, o.mg, col.data(), y_n + gi * o.mg * g.img_size);
      }
    }
    o.out.Flush();
    return Status::Ok();
  });
}

}  // namespace a8::cpu

// Backward kernels of Conv (the filter gradient) and of MaxPool / AveragePool (see
// grad_conv_pool.h).
#include "kernels/cpu/grad_conv_pool.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/common/conv_batch_chunk.h"
#include "kernels/common/pool_window.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/in_f32.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

using internal::BlasGemm;
using internal::ComputeOutput;
using internal::ComputeView;

using internal::MakeWindow;
using Window3 = internal::PoolGeometry;

// Calls f(output index, input index) for every tap of every window that lies inside the input,
// windows in row-major order, taps in row-major order within a window.
template <typename F>
void ForEachWindowTap(const Window3& w, F&& f) {
  ForEachWindow(w, [&](int64_t o, const int64_t start[3]) {
    ForEachTapInside(w, start, [&](int64_t i) { f(o, i); });
  });
}

// col [channels * k_size, out_size], rows `ld` apart: row (c, tap) holds, per output position,
// the input element that tap reads (0 in the padding). Rows are independent, so they are split
// over the pool.
template <typename C>
void Im2Col(const Window3& w, int64_t channels, const C* img, C* col, int64_t ld) {
  ParallelFor(channels * w.k_size, w.out_size, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t c = row / w.k_size, kk = row % w.k_size;
      const int64_t t2 = kk % w.k[2], t1 = (kk / w.k[2]) % w.k[1], t0 = kk / (w.k[2] * w.k[1]);
      const C* src = img + c * w.in_size;
      C* dst = col + row * ld;
      int64_t o = 0;
      for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
        const int64_t i0 = o0 * w.s[0] - w.pb[0] + t0 * w.d[0];
        for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
          const int64_t i1 = o1 * w.s[1] - w.pb[1] + t1 * w.d[1];
          const bool inside = i0 >= 0 && i0 < w.in[0] && i1 >= 0 && i1 < w.in[1];
          for (int64_t o2 = 0; o2 < w.out[2]; ++o2, ++o) {
            const int64_t i2 = o2 * w.s[2] - w.pb[2] + t2 * w.d[2];
            dst[o] =
                inside && i2 >= 0 && i2 < w.in[2] ? src[(i0 * w.in[1] + i1) * w.in[2] + i2] : C(0);
          }
        }
      }
    }
  });
}

}  // namespace

Status ConvGradFilter(const ConvParams& p, const void* dy, const void* x, void* dw) {
  A8_ASSIGN_OR_RETURN(Dims out, ConvOutputSpatial(p, /*transpose=*/false));
  if (internal::FastGemmEnabled()) {  // the fast mode (kernel_mode.h): oneDNN where it wins
    A8_ASSIGN_OR_RETURN(bool fast, internal::FastConvGradFilter(p, out, dy, x, dw));
    if (fast) return Status::Ok();
  }
  const Window3 w = MakeWindow(p.in_spatial, out, p.kernel, p.strides, p.dilations, p.pads);
  if (internal::HalfInF32(p.dtype)) {
    const int64_t cg = p.in_channels / p.group;
    return internal::InF32(
        p, {{dy, p.batch * p.out_channels * w.out_size}, {x, p.batch * p.in_channels * w.in_size}},
        p.out_channels * cg * w.k_size, dw,
        [&](const ConvParams& p32, const float* const* in, float* dw32) {
          return ConvGradFilter(p32, in[0], in[1], dw32);
        });
  }
  return Dispatch<TypeSet::kFloat>(p.dtype, "a8.ConvGradFilter", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const int64_t cg = p.in_channels / p.group, mg = p.out_channels / p.group;
    const int64_t x_sample = p.in_channels * w.in_size, y_sample = p.out_channels * w.out_size;
    const int64_t rows = cg * w.k_size;  // columns of one group's filter matrix
    ComputeView<T> xv(x, p.batch * x_sample);
    ComputeView<T> dyv(dy, p.batch * y_sample);
    ComputeOutput<T> out(dw, p.out_channels * rows);
    std::fill(out.data(), out.data() + p.out_channels * rows, C(0));
    // The reference mode takes the samples in the device's chunks (conv_batch_chunk.h): one GEMM
    // per group and chunk sums over its samples x output positions, the same float operations
    // in the same order as cuda-emu. The fast mode takes one sample at a time (smaller columns).
    const int64_t nb_max = CurrentKernelMode() == KernelMode::kReference
                               ? ConvBatchChunk(p.batch, p.in_channels * w.k_size * w.out_size)
                               : 1;
    std::vector<C> col(static_cast<size_t>(rows * nb_max * w.out_size));
    std::vector<C> dyt(nb_max > 1 ? static_cast<size_t>(mg * nb_max * w.out_size) : 0);
    for (int64_t n0 = 0; n0 < p.batch; n0 += nb_max) {
      const int64_t nb = std::min(nb_max, p.batch - n0), np = nb * w.out_size;
      for (int64_t gi = 0; gi < p.group; ++gi) {
        // col_g [rows, np] and dY_g [mg, np]: column j * out_size + o is sample n0 + j's o.
        for (int64_t j = 0; j < nb; ++j) {
          Im2Col(w, cg, xv.data() + (n0 + j) * x_sample + gi * cg * w.in_size,
                 col.data() + j * w.out_size, np);
        }
        const C* dyg = dyv.data() + n0 * y_sample + gi * mg * w.out_size;
        if (nb > 1) {
          for (int64_t m = 0; m < mg; ++m) {
            for (int64_t j = 0; j < nb; ++j) {
              const C* src = dyg + j * y_sample + m * w.out_size;
              std::copy(src, src + w.out_size, dyt.data() + m * np + j * w.out_size);
            }
          }
          dyg = dyt.data();
        }
        // dW_g [mg, rows] (+)= dY_g [mg, np] col_g^T.
        BlasGemm(false, true, mg, rows, np, C(1), dyg, np, col.data(), np, C(n0 > 0 ? 1 : 0),
                 out.data() + gi * mg * rows, rows);
      }
    }
    out.Flush();
    return Status::Ok();
  });
}

Status MaxPoolGrad(const PoolParams& p, const void* dy, const void* x, void* dx) {
  A8_ASSIGN_OR_RETURN(Dims out, PoolOutputSpatial(p));
  const Window3 w = MakeWindow(p.in_spatial, out, p.kernel, p.strides, p.dilations, p.pads);
  if (internal::HalfInF32(p.dtype)) {
    return internal::PlanesInF32(
        p.dtype, p.batch * p.channels, {{dy, w.out_size}, {x, w.in_size}}, w.in_size, dx,
        [&](int64_t, int64_t k, const float* const* in, float* dx32) {
          return MaxPoolGrad(internal::PlanesAsF32(p, k), in[0], in[1], dx32);
        });
  }
  return Dispatch<TypeSet::kFloat>(p.dtype, "a8.MaxPoolGrad", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* in = static_cast<const T*>(x);
    const T* g = static_cast<const T*>(dy);
    T* res = static_cast<T*>(dx);
    if (internal::AllTapsInside(w)) {
      // The same first maxima and the same sums in the same order as the loop below, without
      // its bounds checks and branches (12% of the example CNN's training step before).
      const std::vector<int64_t> bases = internal::WindowBases(w), taps = internal::TapOffsets(w);
      ParallelFor(p.batch * p.channels, w.out_size * w.k_size, [&](int64_t b, int64_t e) {
        std::vector<C> acc(static_cast<size_t>(w.in_size));
        for (int64_t plane = b; plane < e; ++plane) {
          const T* src = in + plane * w.in_size;
          const T* gp = g + plane * w.out_size;
          std::fill(acc.begin(), acc.end(), C(0));
          for (int64_t o = 0; o < w.out_size; ++o) {
            const int64_t at = internal::FirstMaxTap<C>(src + bases[o], taps.data(), w.k_size);
            acc[bases[o] + at] += Load(gp[o]);
          }
          for (int64_t i = 0; i < w.in_size; ++i) res[plane * w.in_size + i] = Store<T>(acc[i]);
        }
      });
      return Status::Ok();
    }
    ParallelFor(p.batch * p.channels, w.out_size * w.k_size, [&](int64_t b, int64_t e) {
      std::vector<C> acc(static_cast<size_t>(w.in_size));
      std::vector<int64_t> best_at(static_cast<size_t>(w.out_size), -1);
      std::vector<C> best(static_cast<size_t>(w.out_size));
      for (int64_t plane = b; plane < e; ++plane) {
        const T* src = in + plane * w.in_size;
        std::fill(best_at.begin(), best_at.end(), -1);
        // The first maximum of each window, compared as MaxPool compares (in the compute type).
        ForEachWindowTap(w, [&](int64_t o, int64_t i) {
          const C v = Load(src[i]);
          if (best_at[o] < 0 || v > best[o]) {
            best[o] = v;
            best_at[o] = i;
          }
        });
        std::fill(acc.begin(), acc.end(), C(0));
        for (int64_t o = 0; o < w.out_size; ++o) {
          if (best_at[o] >= 0) acc[best_at[o]] += Load(g[plane * w.out_size + o]);
        }
        for (int64_t i = 0; i < w.in_size; ++i) res[plane * w.in_size + i] = Store<T>(acc[i]);
      }
    });
    return Status::Ok();
  });
}

Status AveragePoolGrad(const PoolParams& p, const void* dy, void* dx) {
  A8_ASSIGN_OR_RETURN(Dims out, PoolOutputSpatial(p));
  const Window3 w = MakeWindow(p.in_spatial, out, p.kernel, p.strides, p.dilations, p.pads);
  if (internal::HalfInF32(p.dtype)) {
    return internal::PlanesInF32(p.dtype, p.batch * p.channels, {{dy, w.out_size}}, w.in_size, dx,
                                 [&](int64_t, int64_t k, const float* const* in, float* dx32) {
                                   return AveragePoolGrad(internal::PlanesAsF32(p, k), in[0], dx32);
                                 });
  }
  return Dispatch<TypeSet::kFloat>(p.dtype, "a8.AveragePoolGrad", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* g = static_cast<const T*>(dy);
    T* res = static_cast<T*>(dx);
    // The divisor of each window, as AveragePool counts it.
    std::vector<C> inv_count(static_cast<size_t>(w.out_size));
    ForEachWindow(w, [&](int64_t o, const int64_t start[3]) {
      const int64_t count = AverageCount(w, start, p.count_include_pad);
      inv_count[o] = count > 0 ? C(1) / static_cast<C>(count) : C(0);
    });
    const bool inside = internal::AllTapsInside(w);
    const std::vector<int64_t> bases = inside ? internal::WindowBases(w) : std::vector<int64_t>();
    const std::vector<int64_t> taps = inside ? internal::TapOffsets(w) : std::vector<int64_t>();
    ParallelFor(p.batch * p.channels, w.out_size * w.k_size, [&](int64_t b, int64_t e) {
      std::vector<C> acc(static_cast<size_t>(w.in_size));
      for (int64_t plane = b; plane < e; ++plane) {
        std::fill(acc.begin(), acc.end(), C(0));
        const T* gp = g + plane * w.out_size;
        if (inside) {  // the same sums in the same order as the walk below, unchecked
          for (int64_t o = 0; o < w.out_size; ++o) {
            const C v = Load(gp[o]) * inv_count[o];
            C* a = acc.data() + bases[o];
            for (int64_t t = 0; t < w.k_size; ++t) a[taps[t]] += v;
          }
        } else {
          ForEachWindowTap(w, [&](int64_t o, int64_t i) { acc[i] += Load(gp[o]) * inv_count[o]; });
        }
        for (int64_t i = 0; i < w.in_size; ++i) res[plane * w.in_size + i] = Store<T>(acc[i]);
      }
    });
    return Status::Ok();
  });
}

}  // namespace a8::cpu

// Softmax and LogSoftmax and their gradients (reduce.h), compiled once for the GPU and once for
// its host emulation (kernels/device/device.h): a thread a row on the host, a warp a row on a GPU
// for rows of up to kSoftmaxWarpMaxLen, with the same arithmetic in the same order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/unary_math.h"
#include "kernels/device/launch.h"
#include "kernels/device/reduce.h"
#include "kernels/device/reduce_axis.h"

namespace a8::A8_DEV_NS {
namespace reduce_detail {

// Element d = x - max of a row, e = ExpOrZero(d), from the row's log(sum) or 1 / sum.
template <typename C>
A8_HD C SoftmaxOut(bool log, C d, C e, C log_sum, C inv_sum) {
  return log ? d - log_sum : e * inv_sum;
}
template <typename C>
A8_HD C MaxOf(C m, C v) {
  return m < v ? v : m;  // std::max(m, v): a NaN never becomes the max
}

// A thread a row (the host's launch; on a GPU for rows too long for SoftmaxWarpKernel).
template <typename T>
struct SoftmaxKernel {
  bool log;
  ReduceAxisView view;
  const T* x;
  T* y;

  A8_HD void operator()(int64_t r) const {
    using C = Acc<T>;
    const int64_t base = LineBase(view, r), step = view.inner;
    C m = -Infinity<C>();
    for (int64_t k = 0; k < view.len; ++k) m = MaxOf(m, Ld(x, base + k * step));
    C sum = 0;
    for (int64_t k = 0; k < view.len; ++k) sum += ExpOrZero(Ld(x, base + k * step) - m);
    const C log_sum = log ? MLog(sum) : C(0), inv_sum = C(1) / sum;
    for (int64_t k = 0; k < view.len; ++k) {
      const int64_t j = base + k * step;
      const C d = Ld(x, j) - m;
      // exp is recomputed rather than kept in y: y may be x, and f16 y would round it.
      St(y, j, SoftmaxOut(log, d, log ? C(0) : ExpOrZero(d), log_sum, inv_sum));
    }
  }
};

template <typename C>
A8_HD C SoftmaxGradTerm(bool log, C dy, C y) {
  return log ? dy : dy * y;
}
template <typename C>
A8_HD C SoftmaxGradOut(bool log, C dy, C y, C sum) {
  return log ? dy - MExp(y) * sum : y * (dy - sum);
}

template <typename T>
struct SoftmaxGradKernel {
  bool log;
  ReduceAxisView view;
  const T* dy;
  const T* y;
  T* dx;

  A8_HD void operator()(int64_t r) const {
    using C = Acc<T>;
    const int64_t base = LineBase(view, r), step = view.inner;
    C sum = 0;
    for (int64_t k = 0; k < view.len; ++k) {
      const int64_t j = base + k * step;
      sum += SoftmaxGradTerm(log, Ld(dy, j), Ld(y, j));
    }
    for (int64_t k = 0; k < view.len; ++k) {
      const int64_t j = base + k * step;
      St(dx, j, SoftmaxGradOut(log, Ld(dy, j), Ld(y, j), sum));
    }
  }
};

#if defined(__CUDACC__)
// On a GPU a thread a row reads rows a row apart in each step (a 128-float row: 32 cache lines
// for one warp load) and leaves most of the machine idle (BERT-base's attention: 49,152 rows).
// SoftmaxWarpKernel and SoftmaxGradWarpKernel take a warp a row instead, for rows of up to
// kSoftmaxWarpMaxLen elements: the lanes load the row and compute every element's terms into
// shared memory, one lane folds them (the max, the sum) in the host's order, k = 0, 1, ..., and
// the lanes write the outputs: each element's arithmetic is SoftmaxKernel's, and so are the bits.
constexpr int kSoftmaxWarpMaxLen = 512;  // 8 warps' two rows of floats: 32 KiB of shared memory
constexpr int kSoftmaxWarps = 8;         // a block's warps, a row each

// This warp's row r of `view` (the elements base + k * step, k < len), its lane, and its part of
// the shared memory: two arrays of the row's length (a, b) and the folded value (stat).
template <typename C>
struct WarpRow {
  int lane;
  int64_t r, len, base, step;
  C* a;
  C* b;
  C* stat;
};
template <typename C>
__device__ WarpRow<C> ThisWarpRow(const ReduceAxisView& view) {
  extern __shared__ __align__(16) unsigned char softmax_smem[];
  const int w = threadIdx.x / 32;
  const int64_t r = blockIdx.x * static_cast<int64_t>(kSoftmaxWarps) + w, len = view.len;
  C* a = reinterpret_cast<C*>(softmax_smem) + w * (2 * len + 1);
  return {static_cast<int>(threadIdx.x % 32),
          r,
          len,
          LineBase(view, r),
          view.inner,
          a,
          a + len,
          a + 2 * len};
}

template <typename T>
__global__ void SoftmaxWarpKernel(SoftmaxKernel<T> s, int64_t rows) {
  using C = Acc<T>;
  const WarpRow<C> row = ThisWarpRow<C>(s.view);
  if (row.r >= rows) return;  // a whole warp: only __syncwarp below
  const int lane = row.lane;
  const int64_t len = row.len, base = row.base, step = row.step;
  C *d = row.a, *e = row.b, &stat = *row.stat;
  for (int64_t k = lane; k < len; k += 32) d[k] = Ld(s.x, base + k * step);
  __syncwarp();
  if (lane == 0) {
    C m = -Infinity<C>();
    for (int64_t k = 0; k < len; ++k) m = MaxOf(m, d[k]);
    stat = m;
  }
  __syncwarp();
  const C m = stat;
  for (int64_t k = lane; k < len; k += 32) {
    d[k] = d[k] - m;
    e[k] = ExpOrZero(d[k]);
  }
  __syncwarp();
  if (lane == 0) {
    C sum = 0;
    for (int64_t k = 0; k < len; ++k) sum += e[k];
    stat = sum;
  }
  __syncwarp();
  const C sum = stat;
  const C log_sum = s.log ? MLog(sum) : C(0), inv_sum = C(1) / sum;
  for (int64_t k = lane; k < len; k += 32)
    St(s.y, base + k * step, SoftmaxOut(s.log, d[k], e[k], log_sum, inv_sum));
}

template <typename T>
__global__ void SoftmaxGradWarpKernel(SoftmaxGradKernel<T> s, int64_t rows) {
  using C = Acc<T>;
  const WarpRow<C> row = ThisWarpRow<C>(s.view);
  if (row.r >= rows) return;
  const int lane = row.lane;
  const int64_t len = row.len, base = row.base, step = row.step;
  C *g = row.a, *y = row.b, &stat = *row.stat;
  for (int64_t k = lane; k < len; k += 32) {
    g[k] = Ld(s.dy, base + k * step);
    y[k] = Ld(s.y, base + k * step);
  }
  __syncwarp();
  if (lane == 0) {
    C sum = 0;
    for (int64_t k = 0; k < len; ++k) sum += SoftmaxGradTerm(s.log, g[k], y[k]);
    stat = sum;
  }
  __syncwarp();
  const C sum = stat;
  for (int64_t k = lane; k < len; k += 32)
    St(s.dx, base + k * step, SoftmaxGradOut(s.log, g[k], y[k], sum));
}

// Launches K (a row functor) as SoftmaxWarpKernel / SoftmaxGradWarpKernel when its rows fit,
// else a thread a row.
template <typename T, typename K>
DevStatus LaunchSoftmaxRows(const DevCtx& ctx, const K& k, void (*warp_kernel)(K, int64_t)) {
  using C = Acc<T>;
  const int64_t rows = k.view.outer * k.view.inner, len = k.view.len;
  if (rows <= 0) return DevOk();
  if (len < 1 || len > kSoftmaxWarpMaxLen || !std::is_same_v<C, float>) {
    return ForEach(ctx, rows, k);
  }
  const int64_t blocks = (rows + kSoftmaxWarps - 1) / kSoftmaxWarps;
  if (blocks > 0x7fffffff) return ForEach(ctx, rows, k);
  const size_t smem = sizeof(C) * kSoftmaxWarps * static_cast<size_t>(2 * len + 1);
  warp_kernel<<<static_cast<unsigned>(blocks), kSoftmaxWarps * 32, smem,
                static_cast<cudaStream_t>(ctx.stream)>>>(k, rows);
  return CheckLaunch("softmax launch");
}
#endif

}  // namespace reduce_detail

DevStatus Softmax(DevCtx& ctx, const SoftmaxParams& p) {
  using namespace reduce_detail;
  return DispatchFloat(p.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    const SoftmaxKernel<T> k{p.log, p.view, static_cast<const T*>(p.x), static_cast<T*>(p.y)};
#if defined(__CUDACC__)
    return LaunchSoftmaxRows<T>(ctx, k, &SoftmaxWarpKernel<T>);
#else
    return ForEach(ctx, p.view.outer * p.view.inner, k, p.view.len * kTranscendentalCost);
#endif
  });
}

DevStatus SoftmaxGrad(DevCtx& ctx, const SoftmaxGradParams& p) {
  using namespace reduce_detail;
  return DispatchFloat(p.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    const SoftmaxGradKernel<T> k{p.log, p.view, static_cast<const T*>(p.dy),
                                 static_cast<const T*>(p.y), static_cast<T*>(p.dx)};
#if defined(__CUDACC__)
    return LaunchSoftmaxRows<T>(ctx, k, &SoftmaxGradWarpKernel<T>);
#else
    return ForEach(ctx, p.view.outer * p.view.inner, k, p.view.len * kTranscendentalCost);
#endif
  });
}

}  // namespace a8::A8_DEV_NS

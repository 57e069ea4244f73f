// The normalization kernels of kernels/device/nn.h: BatchNormalization, InstanceNormalization
// and their gradients (LayerNormalization: nn_layer_norm_impl.h). This is their only math: the CPU
// backend runs these bodies on the host (runtime/cpu/cpu_backend.h), the CUDA backend on the GPU.
// Every sum runs in a fixed order in the compute type C (float, or double for f64), so results do
// not depend on the thread count or the launch. Per-row/channel/plane statistics go to scratch
// memory in C, never rounded to a narrower stash before they are applied.
#pragma once

#include <type_traits>

#include "kernels/device/launch.h"
#include "kernels/device/nn.h"
#include "kernels/device/nn_common.h"

namespace a8::A8_DEV_NS {
namespace nn_detail {

// ---- BatchNormalization. stats: [channels] means, [channels] inv stds.
template <typename T>
struct BatchNormInferStats {
  using C = Acc<T>;
  BatchNormArgs a;
  C* stats;
  A8_HD void operator()(int64_t c) const {
    stats[c] = Param<C>(a.stat_dtype, a.mean, c);
    const C v = Param<C>(a.stat_dtype, a.var, c);
    stats[a.channels + c] = C(1) / Sqrt(v + static_cast<C>(a.epsilon));
  }
};

// Channel sums over [batch, spatial] in two levels: one thread per (n, c) plane sums its plane
// into `part`, then one thread per channel adds the planes' sums in n order. Planes of NCHW data
// are contiguous, so the first level has batch * channels threads instead of one per channel.
enum class PlaneSum { kX, kSquaredDeviation, kDyAndDyXhat };

template <typename T>
struct PlanePartials {
  using C = Acc<T>;
  const T* x;
  const T* dy;
  int64_t channels, spatial, planes;
  PlaneSum what;
  const C* stats;  // [channels] means, [channels] inv stds (as `what` needs)
  C* part;         // [planes] (kDyAndDyXhat: [2 * planes])
  A8_HD void operator()(int64_t p) const {
    const int64_t c = p % channels;
    const T* xp = x + p * spatial;
    C s = 0, s2 = 0;
    if (what == PlaneSum::kX) {
      for (int64_t i = 0; i < spatial; ++i) s += Ld(xp, i);
    } else if (what == PlaneSum::kSquaredDeviation) {
      const C m = stats[c];
      for (int64_t i = 0; i < spatial; ++i) {
        const C d = Ld(xp, i) - m;
        s += d * d;
      }
    } else {
      const T* gp = dy + p * spatial;
      const C m = stats[c], inv = stats[channels + c];
      for (int64_t i = 0; i < spatial; ++i) {
        const C g = Ld(gp, i);
        s += g;
        s2 += g * (Ld(xp, i) - m) * inv;
      }
      part[planes + p] = s2;
    }
    part[p] = s;
  }
};

// Sum over n of part[n * channels + c] (n in order).
template <typename C>
A8_HD C SumPlanes(const C* part, int64_t batch, int64_t channels, int64_t c) {
  C s = 0;
  for (int64_t n = 0; n < batch; ++n) s += part[n * channels + c];
  return s;
}

// stats[c] = the batch mean of channel c.
template <typename C>
struct ChannelMean {
  const C* part;
  int64_t batch, channels, count;
  C* stats;
  A8_HD void operator()(int64_t c) const {
    const C sum = SumPlanes(part, batch, channels, c);
    stats[c] = count > 0 ? sum / static_cast<C>(count) : C(0);
  }
};

// stats[channels + c] = the inverse standard deviation, and BatchNorm's running update from `a`
// when `running`.
template <typename T>
struct ChannelInvStd {
  using C = Acc<T>;
  const C* part;
  int64_t batch, channels, count;
  float epsilon;
  bool running;
  BatchNormArgs a;
  C* stats;
  A8_HD void operator()(int64_t c) const {
    const C sq = SumPlanes(part, batch, channels, c);
    const C var = count > 0 ? sq / static_cast<C>(count) : C(0);
    stats[channels + c] = C(1) / Sqrt(var + static_cast<C>(epsilon));
    if (!running) return;
    // Read before written: running_*_out may alias the input, and only this thread touches c.
    const C m = stats[c];
    const C mom = static_cast<C>(a.momentum);
    if (a.running_mean_out != nullptr) {
      const C rm = Param<C>(a.stat_dtype, a.mean, c);
      StoreParam(a.stat_dtype, a.running_mean_out, c, mom * rm + (C(1) - mom) * m);
    }
    if (a.running_var_out != nullptr) {
      const C rv = Param<C>(a.stat_dtype, a.var, c);
      StoreParam(a.stat_dtype, a.running_var_out, c, mom * rv + (C(1) - mom) * var);
    }
  }
};

// Row-shaped: a row is an (n, c) plane of `spatial`, P the storage type of scale and bias.
template <typename T, typename P>
struct BatchNormApply {
  using C = Acc<T>;
  BatchNormArgs a;
  const C* stats;
  A8_HD void Span(int64_t plane, int64_t j0, int64_t j1) const {
    const int64_t c = plane % a.channels;
    const T* x = static_cast<const T*>(a.x) + plane * a.spatial;
    T* y = static_cast<T*>(a.y) + plane * a.spatial;
    const C m = stats[c];
    const C k = stats[a.channels + c] * ParamOf<C>(static_cast<const P*>(a.scale), c);
    const C shift = ParamOf<C>(static_cast<const P*>(a.bias), c);
    for (int64_t j = j0; j < j1; ++j) St(y, j, (Ld(x, j) - m) * k + shift);
  }
};

// ---- backward of BatchNormalization (channels) and InstanceNormalization (planes: a batch of
// one with batch * channels channels). stats: [n] means, inv stds, sum(dY), sum(dY * xhat).
struct ChannelSumsArgs {
  const void* x;
  const void* dy;
  int64_t batch, channels, spatial;
  float epsilon;
  bool batch_stats;  // else the means and variances below
  DType stat_dtype;
  const void* mean;
  const void* var;
};

// The statistics from given means and variances (inference-mode backward).
template <typename T>
struct GivenStats {
  using C = Acc<T>;
  ChannelSumsArgs a;
  C* stats;
  A8_HD void operator()(int64_t c) const {
    stats[c] = Param<C>(a.stat_dtype, a.mean, c);
    stats[a.channels + c] =
        C(1) / Sqrt(Param<C>(a.stat_dtype, a.var, c) + static_cast<C>(a.epsilon));
  }
};

// stats[2 * channels + c] = sum(dY), stats[3 * channels + c] = sum(dY * xhat) of channel c.
template <typename C>
struct ChannelDySums {
  const C* part;
  int64_t batch, channels;
  C* stats;
  A8_HD void operator()(int64_t c) const {
    stats[2 * channels + c] = SumPlanes(part, batch, channels, c);
    stats[3 * channels + c] = SumPlanes(part + batch * channels, batch, channels, c);
  }
};

// The parameter (and, in inference mode, statistic) gradients of BatchNormalization.
template <typename T>
struct BatchNormGradParams {
  using C = Acc<T>;
  BatchNormGradArgs a;
  bool training;
  const C* stats;
  A8_HD void operator()(int64_t c) const {
    const int64_t nc = a.channels;
    const C inv = stats[nc + c], sdy = stats[2 * nc + c], sdyx = stats[3 * nc + c];
    if (a.dscale != nullptr) StoreParam(a.param_dtype, a.dscale, c, sdyx);
    if (a.dbias != nullptr) StoreParam(a.param_dtype, a.dbias, c, sdy);
    if (training) return;
    const C sc = Param<C>(a.param_dtype, a.scale, c);
    if (a.dmean != nullptr) StoreParam(a.stat_dtype, a.dmean, c, -sc * inv * sdy);
    if (a.dvar != nullptr) StoreParam(a.stat_dtype, a.dvar, c, -C(0.5) * sc * inv * inv * sdyx);
  }
};

// dX = scale * inv * (dY - mean(dY) - xhat * mean(dY * xhat)) over a channel (the means only
// with batch statistics). Row-shaped: a row is a plane of `spatial`, P the storage type of scale.
struct NormGradDxArgs {
  const void* x;
  const void* dy;
  void* dx;
  const void* scale;
  int64_t channels;        // of the stats
  int64_t scale_channels;  // scale index: channel % scale_channels
  int64_t spatial, count;
  bool batch_stats;
};

template <typename T, typename P>
struct NormGradDx {
  using C = Acc<T>;
  NormGradDxArgs a;
  const C* stats;
  A8_HD void Span(int64_t plane, int64_t j0, int64_t j1) const {
    const int64_t channels = a.channels, spatial = a.spatial;
    const bool batch_stats = a.batch_stats;
    const int64_t c = plane % channels;
    const C m = stats[c], inv = stats[channels + c];
    const C k = ParamOf<C>(static_cast<const P*>(a.scale), c % a.scale_channels) * inv;
    const C n = static_cast<C>(a.count);
    const C mean_dy = batch_stats ? stats[2 * channels + c] / n : C(0);
    const C mean_dyx = batch_stats ? stats[3 * channels + c] / n : C(0);
    const T* xp = static_cast<const T*>(a.x) + plane * spatial;
    const T* dyp = static_cast<const T*>(a.dy) + plane * spatial;
    T* dxp = static_cast<T*>(a.dx) + plane * spatial;
    for (int64_t j = j0; j < j1; ++j) {
      const C xhat = (Ld(xp, j) - m) * inv;
      St(dxp, j, k * (Ld(dyp, j) - mean_dy - xhat * mean_dyx));
    }
  }
};

// ---- InstanceNormalization. stats: [planes] means, [planes] scale / std.
template <typename T>
struct InstanceNormPlanes {
  using C = Acc<T>;
  InstanceNormArgs a;
  C* stats;
  A8_HD void operator()(int64_t pl) const {
    const T* x = static_cast<const T*>(a.x) + pl * a.spatial;
    const int64_t n = a.spatial;
    C sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += Ld(x, i);
    const C m = n > 0 ? sum / static_cast<C>(n) : C(0);
    C sq = 0;
    for (int64_t i = 0; i < n; ++i) {
      const C d = Ld(x, i) - m;
      sq += d * d;
    }
    const C v = n > 0 ? sq / static_cast<C>(n) : C(0);
    const C s = Param<C>(a.param_dtype, a.scale, pl % a.channels);
    stats[pl] = m;
    stats[a.batch * a.channels + pl] = s / Sqrt(v + static_cast<C>(a.epsilon));
  }
};

// Row-shaped: a row is a plane of `spatial`.
template <typename T>
struct InstanceNormApply {
  using C = Acc<T>;
  InstanceNormArgs a;
  const C* stats;
  A8_HD void Span(int64_t pl, int64_t j0, int64_t j1) const {
    const C b = Param<C>(a.param_dtype, a.bias, pl % a.channels);
    const C m = stats[pl], k = stats[a.batch * a.channels + pl];
    const T* x = static_cast<const T*>(a.x) + pl * a.spatial;
    T* y = static_cast<T*>(a.y) + pl * a.spatial;
    for (int64_t j = j0; j < j1; ++j) St(y, j, (Ld(x, j) - m) * k + b);
  }
};

// dScale[c], dBias[c]: the per-plane sums over the batch, in order.
template <typename T>
struct InstanceNormGradParams {
  using C = Acc<T>;
  InstanceNormArgs a;
  const C* stats;
  A8_HD void operator()(int64_t c) const {
    const int64_t planes = a.batch * a.channels;
    C ds = 0, db = 0;
    for (int64_t n = 0; n < a.batch; ++n) {
      ds += stats[3 * planes + n * a.channels + c];
      db += stats[2 * planes + n * a.channels + c];
    }
    if (a.dscale != nullptr) StoreParam(a.param_dtype, a.dscale, c, ds);
    if (a.dbias != nullptr) StoreParam(a.param_dtype, a.dbias, c, db);
  }
};

// The means and inverse standard deviations of every channel over [batch, spatial] into
// stats[0, 2 * channels), with BatchNorm's running update when `bn` is given; `part` holds
// batch * channels values.
template <typename T>
DevStatus ChannelMoments(DevCtx& ctx, const T* x, int64_t batch, int64_t channels, int64_t spatial,
                         float epsilon, const BatchNormArgs* bn, Acc<T>* stats, Acc<T>* part) {
  using C = Acc<T>;
  const int64_t planes = batch * channels, count = batch * spatial;
  A8_DEV_RETURN_IF_ERROR(ForEach(
      ctx, planes,
      PlanePartials<T>{x, nullptr, channels, spatial, planes, PlaneSum::kX, stats, part}, spatial));
  A8_DEV_RETURN_IF_ERROR(
      ForEach(ctx, channels, ChannelMean<C>{part, batch, channels, count, stats}, batch));
  A8_DEV_RETURN_IF_ERROR(ForEach(ctx, planes,
                                 PlanePartials<T>{x, nullptr, channels, spatial, planes,
                                                  PlaneSum::kSquaredDeviation, stats, part},
                                 spatial));
  return ForEach(ctx, channels,
                 ChannelInvStd<T>{part, batch, channels, count, epsilon, bn != nullptr,
                                  bn != nullptr ? *bn : BatchNormArgs{}, stats},
                 batch);
}

// The backward's channel sums: stats[0, 4 * channels) = means, inv stds, sum(dY),
// sum(dY * xhat); `part` holds 2 * batch * channels values.
template <typename T>
DevStatus ChannelGradSums(DevCtx& ctx, const ChannelSumsArgs& a, Acc<T>* stats, Acc<T>* part) {
  using C = Acc<T>;
  const T* x = static_cast<const T*>(a.x);
  const int64_t planes = a.batch * a.channels;
  if (a.batch_stats) {
    A8_DEV_RETURN_IF_ERROR(
        ChannelMoments<T>(ctx, x, a.batch, a.channels, a.spatial, a.epsilon, nullptr, stats, part));
  } else {
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, a.channels, GivenStats<T>{a, stats}));
  }
  A8_DEV_RETURN_IF_ERROR(
      ForEach(ctx, planes,
              PlanePartials<T>{x, static_cast<const T*>(a.dy), a.channels, a.spatial, planes,
                               PlaneSum::kDyAndDyXhat, stats, part},
              2 * a.spatial));
  return ForEach(ctx, a.channels, ChannelDySums<C>{part, a.batch, a.channels, stats}, a.batch);
}

// BatchNormalization's Y from the statistics: a row per (n, c) plane.
template <typename T>
DevStatus ApplyBatchNorm(DevCtx& ctx, const BatchNormArgs& a, const Acc<T>* stats) {
  return DispatchFloat(a.param_dtype, [&](auto ptag) -> DevStatus {
    return ForEachRow(ctx, a.batch * a.channels, a.spatial,
                      BatchNormApply<T, decltype(ptag)>{a, stats});
  });
}

// dX of `planes` planes from the backward's channel sums.
template <typename T>
DevStatus ApplyNormGradDx(DevCtx& ctx, DType param_dtype, int64_t planes, const NormGradDxArgs& a,
                          const Acc<T>* stats) {
  return DispatchFloat(param_dtype, [&](auto ptag) -> DevStatus {
    return ForEachRow(ctx, planes, a.spatial, NormGradDx<T, decltype(ptag)>{a, stats});
  });
}

}  // namespace nn_detail

DevStatus BatchNormInference(DevCtx& ctx, const BatchNormArgs& a) {
  using namespace nn_detail;
  return DispatchWithStats(ctx, a.dtype, 2 * a.channels, [&](auto tag, auto* stats) -> DevStatus {
    using T = decltype(tag);
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, a.channels, BatchNormInferStats<T>{a, stats}));
    return ApplyBatchNorm<T>(ctx, a, stats);
  });
}

DevStatus BatchNormTraining(DevCtx& ctx, const BatchNormArgs& a) {
  using namespace nn_detail;
  return DispatchWithStats(
      ctx, a.dtype, 2 * a.channels + a.batch * a.channels, [&](auto tag, auto* stats) -> DevStatus {
        using T = decltype(tag);
        A8_DEV_RETURN_IF_ERROR(ChannelMoments<T>(ctx, static_cast<const T*>(a.x), a.batch,
                                                 a.channels, a.spatial, a.epsilon, &a, stats,
                                                 stats + 2 * a.channels));
        return ApplyBatchNorm<T>(ctx, a, stats);
      });
}

DevStatus BatchNormGrad(DevCtx& ctx, const BatchNormGradArgs& a) {
  using namespace nn_detail;
  const bool training = a.mean == nullptr || a.var == nullptr;
  return DispatchWithStats(
      ctx, a.dtype, 4 * a.channels + 2 * a.batch * a.channels,
      [&](auto tag, auto* stats) -> DevStatus {
        using T = decltype(tag);
        const ChannelSumsArgs sums{a.x,       a.dy,     a.batch,      a.channels, a.spatial,
                                   a.epsilon, training, a.stat_dtype, a.mean,     a.var};
        A8_DEV_RETURN_IF_ERROR(ChannelGradSums<T>(ctx, sums, stats, stats + 4 * a.channels));
        if (a.dx != nullptr) {
          const NormGradDxArgs dx{a.x,        a.dy,       a.dx,      a.scale,
                                  a.channels, a.channels, a.spatial, a.batch * a.spatial,
                                  training};
          A8_DEV_RETURN_IF_ERROR(
              ApplyNormGradDx<T>(ctx, a.param_dtype, a.batch * a.channels, dx, stats));
        }
        return ForEach(ctx, a.channels, BatchNormGradParams<T>{a, training, stats}, a.batch);
      });
}

DevStatus InstanceNorm(DevCtx& ctx, const InstanceNormArgs& a) {
  using namespace nn_detail;
  const int64_t planes = a.batch * a.channels;
  return DispatchWithStats(ctx, a.dtype, 2 * planes, [&](auto tag, auto* stats) -> DevStatus {
    using T = decltype(tag);
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, planes, InstanceNormPlanes<T>{a, stats}, 2 * a.spatial));
    return ForEachRow(ctx, planes, a.spatial, InstanceNormApply<T>{a, stats});
  });
}

DevStatus InstanceNormGrad(DevCtx& ctx, const InstanceNormArgs& a) {
  using namespace nn_detail;
  // Each (n, c) plane is a BatchNorm channel of a batch of one.
  const int64_t planes = a.batch * a.channels;
  return DispatchWithStats(ctx, a.dtype, 6 * planes, [&](auto tag, auto* stats) -> DevStatus {
    using T = decltype(tag);
    const ChannelSumsArgs sums{a.x,       a.dy, 1,           planes,  a.spatial,
                               a.epsilon, true, DType::kF32, nullptr, nullptr};
    A8_DEV_RETURN_IF_ERROR(ChannelGradSums<T>(ctx, sums, stats, stats + 4 * planes));
    if (a.dx != nullptr) {
      const NormGradDxArgs dx{a.x,        a.dy,      a.dx,      a.scale, planes,
                              a.channels, a.spatial, a.spatial, true};
      A8_DEV_RETURN_IF_ERROR(ApplyNormGradDx<T>(ctx, a.param_dtype, planes, dx, stats));
    }
    if (a.dscale == nullptr && a.dbias == nullptr) return DevOk();
    return ForEach(ctx, a.channels, InstanceNormGradParams<T>{a, stats}, a.batch);
  });
}

}  // namespace a8::A8_DEV_NS

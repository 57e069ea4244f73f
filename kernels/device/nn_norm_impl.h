// The normalization kernels of kernels/device/nn.h: BatchNormalization, InstanceNormalization
// and their gradients (LayerNormalization: nn_layer_norm_impl.h). This is their only math: the CPU
// backend runs these bodies on the host (runtime/cpu/cpu_backend.h), the CUDA backend on the GPU.
// Every sum runs in a fixed order in the compute type C (float, or double for f64), so results do
// not depend on the thread count or the launch. Per-row/channel/plane statistics go to scratch
// memory in C, never rounded to a narrower stash before they are applied.
#pragma once

#include <type_traits>

#include "kernels/common/index_div.h"
#include "kernels/device/launch.h"
#include "kernels/device/nn.h"
#include "kernels/device/nn_common.h"

namespace a8::A8_DEV_NS {
namespace nn_detail {

// ---- BatchNormalization. stats: [channels] means, [channels] inv stds.

// The statistics from given means and variances (inference, and the inference-mode backward):
// Args has stat_dtype, mean, var, epsilon and channels (BatchNormArgs, ChannelSumsArgs).
template <typename T, typename Args>
struct GivenStats {
  using C = Acc<T>;
  Args a;
  C* stats;
  A8_HD void operator()(int64_t c) const {
    stats[c] = Param<C>(a.stat_dtype, a.mean, c);
    const C v = Param<C>(a.stat_dtype, a.var, c);
    stats[a.channels + c] = C(1) / Sqrt(v + static_cast<C>(a.epsilon));
  }
};

// Channel sums over [batch, spatial] in three levels, each in a fixed order: one thread per
// (plane, lane) sums the lane's elements of an (n, c) plane (lane l: elements l, l + lanes, ...;
// neighbouring threads read neighbouring elements) into `part`, one per (channel, lane) adds the
// batch's planes in n order (LaneSums), one per channel adds its lanes in order (SumLanes).
// Planes of NCHW data are contiguous: the first level has batch * channels * lanes threads
// instead of one per channel. Planes under 128 elements have one lane.
enum class PlaneSum { kX, kSquaredDeviation, kDyAndDyXhat };

A8_HD int64_t PlaneLanes(int64_t spatial) { return spatial >= 128 ? 32 : 1; }

// Scratch values the plane and lane sums take (both halves, for kDyAndDyXhat).
inline int64_t PlanePartCount(int64_t batch, int64_t channels, int64_t spatial) {
  return 2 * (batch + 1) * channels * PlaneLanes(spatial);
}

template <typename T>
struct PlanePartials {
  using C = Acc<T>;
  const T* x;
  const T* dy;
  int64_t channels, spatial, planes;
  PlaneSum what;
  const C* stats;  // [channels] means, [channels] inv stds (as `what` needs)
  C* part;         // [planes * lanes] (kDyAndDyXhat: [2 * planes * lanes])
  A8_HD void operator()(int64_t idx) const {
    const int64_t lanes = PlaneLanes(spatial);
    const int64_t p = idx / lanes, l = idx - p * lanes;
    const int64_t c = p % channels;
    const T* xp = x + p * spatial;
    C s = 0, s2 = 0;
    if (what == PlaneSum::kX) {
      for (int64_t i = l; i < spatial; i += lanes) s += Ld(xp, i);
    } else if (what == PlaneSum::kSquaredDeviation) {
      const C m = stats[c];
      for (int64_t i = l; i < spatial; i += lanes) {
        const C d = Ld(xp, i) - m;
        s += d * d;
      }
    } else {
      const T* gp = dy + p * spatial;
      const C m = stats[c], inv = stats[channels + c];
      for (int64_t i = l; i < spatial; i += lanes) {
        const C g = Ld(gp, i);
        s += g;
        s2 += g * (Ld(xp, i) - m) * inv;
      }
      part[planes * lanes + idx] = s2;
    }
    part[idx] = s;
  }
};

// lane_sums[c * lanes + l] = the sum over n (in order) of lane l of plane (n, c); for
// kDyAndDyXhat's two sums, indices past channels * lanes take the second half of `part`.
template <typename C>
struct LaneSums {
  const C* part;
  int64_t batch, channels, lanes;
  C* lane_sums;
  A8_HD void operator()(int64_t i) const {
    const int64_t per_half = channels * lanes;
    const int64_t h = i / per_half, cl = i - h * per_half;
    const C* src = part + h * batch * per_half;
    C s = 0;
    for (int64_t n = 0; n < batch; ++n) s += src[n * per_half + cl];
    lane_sums[i] = s;
  }
};

// Sum over l of lane_sums[c * lanes + l] (l in order).
template <typename C>
A8_HD C SumLanes(const C* lane_sums, int64_t lanes, int64_t c) {
  C s = 0;
  for (int64_t l = 0; l < lanes; ++l) s += lane_sums[c * lanes + l];
  return s;
}

// stats[c] = the batch mean of channel c.
template <typename C>
struct ChannelMean {
  const C* lane_sums;
  int64_t lanes, count;
  C* stats;
  A8_HD void operator()(int64_t c) const {
    const C sum = SumLanes(lane_sums, lanes, c);
    stats[c] = count > 0 ? sum / static_cast<C>(count) : C(0);
  }
};

// stats[channels + c] = the inverse standard deviation, and BatchNorm's running update from `a`
// when `running`.
template <typename T>
struct ChannelInvStd {
  using C = Acc<T>;
  const C* lane_sums;
  int64_t lanes, channels, count;
  float epsilon;
  bool running;
  BatchNormArgs a;
  C* stats;
  A8_HD void operator()(int64_t c) const {
    const C sq = SumLanes(lane_sums, lanes, c);
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
// On a GPU an element a thread, its loads first (LoadAt/StoreAt, launch.h).
template <typename T, typename P>
struct BatchNormApply {
  using C = Acc<T>;
  BatchNormArgs a;
  const C* stats;
  IndexDiv channels;  // a.channels
  struct Channel {    // what a plane's elements share
    C m, k, shift;
  };
  A8_HD Channel Of(int64_t plane) const {
    int64_t c = 0;
    channels.DivMod(plane, &c);
    return {stats[c], stats[a.channels + c] * ParamOf<C>(static_cast<const P*>(a.scale), c),
            ParamOf<C>(static_cast<const P*>(a.bias), c)};
  }
  A8_HD static C Apply(C x, const Channel& ch) { return (x - ch.m) * ch.k + ch.shift; }
  A8_HD void Span(int64_t plane, int64_t j0, int64_t j1) const {
    const T* x = static_cast<const T*>(a.x) + plane * a.spatial;
    T* y = static_cast<T*>(a.y) + plane * a.spatial;
    const Channel ch = Of(plane);
    for (int64_t j = j0; j < j1; ++j) St(y, j, Apply(Ld(x, j), ch));
  }
  struct In {
    T x;
    Channel ch;
  };
  A8_HD In LoadAt(int64_t plane, int64_t j) const {
    return {static_cast<const T*>(a.x)[plane * a.spatial + j], Of(plane)};
  }
  A8_HD void StoreAt(int64_t plane, int64_t j, const In& in) const {
    St(static_cast<T*>(a.y), plane * a.spatial + j, Apply(Elem<T>::Load(in.x), in.ch));
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

// stats[2 * channels + c] = sum(dY), stats[3 * channels + c] = sum(dY * xhat) of channel c.
template <typename C>
struct ChannelDySums {
  const C* lane_sums;  // [2][channels][lanes]
  int64_t channels, lanes;
  C* stats;
  A8_HD void operator()(int64_t c) const {
    stats[2 * channels + c] = SumLanes(lane_sums, lanes, c);
    stats[3 * channels + c] = SumLanes(lane_sums + channels * lanes, lanes, c);
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

// On a GPU an element a thread, its loads first (LoadAt/StoreAt, launch.h).
template <typename T, typename P>
struct NormGradDx {
  using C = Acc<T>;
  NormGradDxArgs a;
  const C* stats;
  IndexDiv channels, scale_channels;  // a.channels, a.scale_channels
  struct Channel {                    // what a plane's elements share
    C m, inv, k, mean_dy, mean_dyx;
  };
  A8_HD Channel Of(int64_t plane) const {
    const int64_t nc = a.channels;
    int64_t c = 0, sc = 0;
    channels.DivMod(plane, &c);
    scale_channels.DivMod(c, &sc);
    const C inv = stats[nc + c];
    const C n = static_cast<C>(a.count);
    return {stats[c], inv, ParamOf<C>(static_cast<const P*>(a.scale), sc) * inv,
            a.batch_stats ? stats[2 * nc + c] / n : C(0),
            a.batch_stats ? stats[3 * nc + c] / n : C(0)};
  }
  A8_HD static C Dx(C x, C dy, const Channel& ch) {
    const C xhat = (x - ch.m) * ch.inv;
    return ch.k * (dy - ch.mean_dy - xhat * ch.mean_dyx);
  }
  A8_HD void Span(int64_t plane, int64_t j0, int64_t j1) const {
    const int64_t spatial = a.spatial;
    const Channel ch = Of(plane);
    const T* xp = static_cast<const T*>(a.x) + plane * spatial;
    const T* dyp = static_cast<const T*>(a.dy) + plane * spatial;
    T* dxp = static_cast<T*>(a.dx) + plane * spatial;
    for (int64_t j = j0; j < j1; ++j) St(dxp, j, Dx(Ld(xp, j), Ld(dyp, j), ch));
  }
  struct In {
    T x, dy;
    Channel ch;
  };
  A8_HD In LoadAt(int64_t plane, int64_t j) const {
    const int64_t at = plane * a.spatial + j;
    return {static_cast<const T*>(a.x)[at], static_cast<const T*>(a.dy)[at], Of(plane)};
  }
  A8_HD void StoreAt(int64_t plane, int64_t j, const In& in) const {
    St(static_cast<T*>(a.dx), plane * a.spatial + j,
       Dx(Elem<T>::Load(in.x), Elem<T>::Load(in.dy), in.ch));
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

// The plane sums of `what` into part[0, planes * lanes) (twice that for kDyAndDyXhat), then the
// lane sums after them; returns where the lane sums are.
template <typename T>
DevStatus PlaneAndLaneSums(DevCtx& ctx, const T* x, const T* dy, int64_t batch, int64_t channels,
                           int64_t spatial, PlaneSum what, const Acc<T>* stats, Acc<T>* part,
                           Acc<T>** lane_sums) {
  using C = Acc<T>;
  const int64_t planes = batch * channels, lanes = PlaneLanes(spatial);
  const int64_t halves = what == PlaneSum::kDyAndDyXhat ? 2 : 1;
  A8_DEV_RETURN_IF_ERROR(ForEach(
      ctx, planes * lanes, PlanePartials<T>{x, dy, channels, spatial, planes, what, stats, part},
      halves * (spatial / lanes + 1)));
  *lane_sums = part + 2 * planes * lanes;
  return ForEach(ctx, halves * channels * lanes,
                 LaneSums<C>{part, batch, channels, lanes, *lane_sums}, batch);
}

// The means and inverse standard deviations of every channel over [batch, spatial] into
// stats[0, 2 * channels), with BatchNorm's running update when `bn` is given; `part` holds
// PlanePartCount(batch, channels, spatial) values.
template <typename T>
DevStatus ChannelMoments(DevCtx& ctx, const T* x, int64_t batch, int64_t channels, int64_t spatial,
                         float epsilon, const BatchNormArgs* bn, Acc<T>* stats, Acc<T>* part) {
  using C = Acc<T>;
  const int64_t count = batch * spatial, lanes = PlaneLanes(spatial);
  C* lane_sums = nullptr;
  A8_DEV_RETURN_IF_ERROR(PlaneAndLaneSums<T>(ctx, x, nullptr, batch, channels, spatial,
                                             PlaneSum::kX, stats, part, &lane_sums));
  A8_DEV_RETURN_IF_ERROR(
      ForEach(ctx, channels, ChannelMean<C>{lane_sums, lanes, count, stats}, lanes));
  A8_DEV_RETURN_IF_ERROR(PlaneAndLaneSums<T>(ctx, x, nullptr, batch, channels, spatial,
                                             PlaneSum::kSquaredDeviation, stats, part, &lane_sums));
  return ForEach(ctx, channels,
                 ChannelInvStd<T>{lane_sums, lanes, channels, count, epsilon, bn != nullptr,
                                  bn != nullptr ? *bn : BatchNormArgs{}, stats},
                 lanes);
}

// The backward's channel sums: stats[0, 4 * channels) = means, inv stds, sum(dY),
// sum(dY * xhat); `part` holds PlanePartCount(batch, channels, spatial) values.
template <typename T>
DevStatus ChannelGradSums(DevCtx& ctx, const ChannelSumsArgs& a, Acc<T>* stats, Acc<T>* part) {
  using C = Acc<T>;
  const T* x = static_cast<const T*>(a.x);
  if (a.batch_stats) {
    A8_DEV_RETURN_IF_ERROR(
        ChannelMoments<T>(ctx, x, a.batch, a.channels, a.spatial, a.epsilon, nullptr, stats, part));
  } else {
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, a.channels, GivenStats<T, ChannelSumsArgs>{a, stats}));
  }
  C* lane_sums = nullptr;
  A8_DEV_RETURN_IF_ERROR(PlaneAndLaneSums<T>(ctx, x, static_cast<const T*>(a.dy), a.batch,
                                             a.channels, a.spatial, PlaneSum::kDyAndDyXhat, stats,
                                             part, &lane_sums));
  const int64_t lanes = PlaneLanes(a.spatial);
  return ForEach(ctx, a.channels, ChannelDySums<C>{lane_sums, a.channels, lanes, stats}, lanes);
}

// BatchNormalization's Y from the statistics: a row per (n, c) plane.
template <typename T>
DevStatus ApplyBatchNorm(DevCtx& ctx, const BatchNormArgs& a, const Acc<T>* stats) {
  return DispatchFloat(a.param_dtype, [&](auto ptag) -> DevStatus {
    return ForEachRow(ctx, a.batch * a.channels, a.spatial,
                      BatchNormApply<T, decltype(ptag)>{a, stats, IndexDiv(a.channels)});
  });
}

// dX of `planes` planes from the backward's channel sums.
template <typename T>
DevStatus ApplyNormGradDx(DevCtx& ctx, DType param_dtype, int64_t planes, const NormGradDxArgs& a,
                          const Acc<T>* stats) {
  return DispatchFloat(param_dtype, [&](auto ptag) -> DevStatus {
    return ForEachRow(
        ctx, planes, a.spatial,
        NormGradDx<T, decltype(ptag)>{a, stats, IndexDiv(a.channels), IndexDiv(a.scale_channels)});
  });
}

}  // namespace nn_detail

DevStatus BatchNormInference(DevCtx& ctx, const BatchNormArgs& a) {
  using namespace nn_detail;
  return DispatchWithStats(ctx, a.dtype, 2 * a.channels, [&](auto tag, auto* stats) -> DevStatus {
    using T = decltype(tag);
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, a.channels, GivenStats<T, BatchNormArgs>{a, stats}));
    return ApplyBatchNorm<T>(ctx, a, stats);
  });
}

DevStatus BatchNormTraining(DevCtx& ctx, const BatchNormArgs& a) {
  using namespace nn_detail;
  return DispatchWithStats(ctx, a.dtype,
                           2 * a.channels + PlanePartCount(a.batch, a.channels, a.spatial),
                           [&](auto tag, auto* stats) -> DevStatus {
                             using T = decltype(tag);
                             A8_DEV_RETURN_IF_ERROR(ChannelMoments<T>(
                                 ctx, static_cast<const T*>(a.x), a.batch, a.channels, a.spatial,
                                 a.epsilon, &a, stats, stats + 2 * a.channels));
                             return ApplyBatchNorm<T>(ctx, a, stats);
                           });
}

DevStatus BatchNormGrad(DevCtx& ctx, const BatchNormGradArgs& a) {
  using namespace nn_detail;
  const bool training = a.mean == nullptr || a.var == nullptr;
  return DispatchWithStats(
      ctx, a.dtype, 4 * a.channels + PlanePartCount(a.batch, a.channels, a.spatial),
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
  const int64_t scratch = 4 * planes + PlanePartCount(1, planes, a.spatial);
  return DispatchWithStats(ctx, a.dtype, scratch, [&](auto tag, auto* stats) -> DevStatus {
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

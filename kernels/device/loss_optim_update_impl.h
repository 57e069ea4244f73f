// Device kernels of the step control, gradient accumulation, dynamic loss scaling and the
// parameter updates (kernels/device/loss_optim.h). The bodies are kernels/cpu/optim.h's, with
// every product and sum through rn:: so that nvcc does not contract them into FMAs: the control
// vector, the scale, the tracker and the f32 updates equal the CPU's bit for bit (the one
// exception: a bias correction's pow/cos in double may differ by an ulp before rounding to f32).
//
// The skip-on-flag rule: an update reads ctl[kDevCtlApplied] in the device functor; when it is 0
// every output keeps its input's bytes (a copy unless in place), so parameters, moments and the
// update count stay bit-identical without a host round trip.
#pragma once

#include <cmath>
#include <cstring>

#include "kernels/device/launch.h"
#include "kernels/device/loss_optim.h"

namespace a8::A8_DEV_NS {
namespace update_detail {

A8_HD bool IsFinite(float v) { return (FloatToBits(v) & 0x7f800000u) != 0x7f800000u; }
A8_HD bool IsFinite(double v) {
#if defined(__CUDA_ARCH__)
  const uint64_t u = static_cast<uint64_t>(__double_as_longlong(v));
#else
  uint64_t u;
  std::memcpy(&u, &v, sizeof(u));
#endif
  return (u & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
A8_HD float Sqrt(float v) { return ::sqrtf(v); }
A8_HD double Sqrt(double v) { return ::sqrt(v); }

inline size_t AlignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

// ---- step control and loss scale (one thread each)

// cpu::ScheduledLr.
A8_HD double ScheduledLr(const TrainControlParams& p, int64_t opt_index) {
  if (!p.cosine) return p.lr;
  if (opt_index < p.warmup_steps) {
    return rn::Mul(static_cast<double>(p.lr), static_cast<double>(opt_index + 1)) /
           static_cast<double>(p.warmup_steps);
  }
  const int64_t span = p.total_steps - p.warmup_steps > 1 ? p.total_steps - p.warmup_steps : 1;
  double progress = static_cast<double>(opt_index - p.warmup_steps) / static_cast<double>(span);
  progress = progress < 0.0 ? 0.0 : (progress > 1.0 ? 1.0 : progress);
  const double kPi = 3.14159265358979323846;
  const double half_range =
      rn::Mul(0.5, rn::Sub(static_cast<double>(p.lr), static_cast<double>(p.min_lr)));
  return rn::Add(static_cast<double>(p.min_lr),
                 rn::Mul(half_range, rn::Add(1.0, ::cos(rn::Mul(kPi, progress)))));
}

// cpu::TrainControlStep, reading its scalars from device memory.
struct TrainControlFn {
  TrainControlParams p;
  A8_HD void operator()(int64_t) const {
    const int64_t step = *p.step;
    const float updates = *p.updates;
    const int64_t k = p.accumulate;
    const bool boundary = (step + 1) % k == 0;
    const bool overflow = p.found_inf != nullptr && *p.found_inf != 0.0f;
    const bool applied = boundary && !overflow;
    double grad_scale = 1.0 / static_cast<double>(k);
    double norm = 0.0;
    if (p.sq_norm != nullptr) {
      norm = ::sqrt(static_cast<double>(*p.sq_norm)) / static_cast<double>(k);
      if (p.max_grad_norm > 0.0f) {
        const double clip = static_cast<double>(p.max_grad_norm) / rn::Add(norm, 1e-6);
        grad_scale = rn::Mul(grad_scale, clip < 1.0 ? clip : 1.0);
      }
    }
    const float next_updates = rn::Add(updates, applied ? 1.0f : 0.0f);
    p.ctl[kDevCtlLr] = static_cast<float>(ScheduledLr(p, step / k));
    p.ctl[kDevCtlGradScale] = static_cast<float>(grad_scale);
    p.ctl[kDevCtlApplied] = applied ? 1.0f : 0.0f;
    p.ctl[kDevCtlUpdates] = next_updates;
    p.ctl[kDevCtlGradNorm] = static_cast<float>(norm);
    *p.step_next = step + 1;
    *p.updates_next = next_updates;
  }
};

// cpu::UpdateScaleStep (PyTorch's _amp_update_scale_ plus a8's floor and ceiling).
struct UpdateScaleFn {
  UpdateScaleParams p;
  A8_HD void operator()(int64_t) const {
    const float scale = *p.scale;
    const int32_t tracker = *p.tracker;
    const float found_inf = *p.found_inf;
    const int64_t step = *p.step;
    float scale_next = scale;
    int32_t tracker_next = tracker;
    if ((step + 1) % p.accumulate == 0) {
      if (found_inf != 0.0f) {
        float backed = static_cast<float>(
            rn::Mul(static_cast<double>(scale), static_cast<double>(p.backoff_factor)));
        if (p.min_scale > 0.0f && backed < p.min_scale) backed = p.min_scale;
        scale_next = backed;
        tracker_next = 0;
      } else if (tracker + 1 >= p.growth_interval) {
        const float grown = static_cast<float>(
            rn::Mul(static_cast<double>(scale), static_cast<double>(p.growth_factor)));
        if (IsFinite(grown) && (p.max_scale <= 0.0f || grown <= p.max_scale)) scale_next = grown;
        tracker_next = 0;
      } else {
        tracker_next = tracker + 1;
      }
    }
    *p.scale_next = scale_next;
    *p.tracker_next = tracker_next;
  }
};

// ---- gradient accumulation, unscaling (the gradient norm is reduce_impl.h's GlobalNormSq)

template <typename A, typename G>
struct GradAccumulateFn {
  int64_t accumulate;
  const int64_t* step;
  const A* acc;
  const G* g;
  A* out;
  A8_HD void operator()(int64_t i) const {
    using C = Acc<A>;
    const C sum = *step % accumulate == 0 ? C(0) : Ld(acc, i);
    St(out, i, rn::Add(sum, static_cast<C>(Ld(g, i))));
  }
};

// Slots per gradient tensor: thread j of tensor t unscales elements j, j + slots, ... (coalesced)
// and records whether it saw an Inf or NaN in flags[j].
constexpr int64_t kUnscaleSlots = int64_t{1} << 16;
constexpr int64_t kFlagGroup = 1024;

template <typename T>
struct UnscaleFn {
  const float* scale;
  const T* g;
  float* out;
  int64_t n;
  int64_t slots;
  uint8_t* flags;
  A8_HD void operator()(int64_t j) const {
    using C = Acc<T>;
    // 1/scale in double, stored as float (cpu::InverseScale, PyTorch's GradScaler).
    const C inv = static_cast<C>(static_cast<float>(1.0 / static_cast<double>(*scale)));
    bool inf = false;
    for (int64_t i = j; i < n; i += slots) {
      const C v = Ld(g, i);  // loaded before the store: out may be g
      inf |= !IsFinite(v);
      out[i] = static_cast<float>(rn::Mul(v, inv));
    }
    flags[j] = inf ? 1 : 0;
  }
};

struct FlagGroupFn {
  const uint8_t* flags;
  int64_t count;
  uint8_t* groups;
  A8_HD void operator()(int64_t gi) const {
    const int64_t b = gi * kFlagGroup, e = b + kFlagGroup < count ? b + kFlagGroup : count;
    uint8_t any = 0;
    for (int64_t i = b; i < e; ++i) any |= flags[i];
    groups[gi] = any;
  }
};

struct FoundInfFn {
  const uint8_t* groups;
  int64_t count;
  float* found_inf;
  A8_HD void operator()(int64_t) const {
    uint8_t any = 0;
    for (int64_t i = 0; i < count; ++i) any |= groups[i];
    *found_inf = any != 0 ? 1.0f : 0.0f;
  }
};

// ---- a8 updates

// A not-applied update: the output keeps the input's bytes.
template <typename P>
A8_HD void Keep(const P* in, P* out, int64_t i) {
  if (out != in) out[i] = in[i];
}

template <typename P, typename G>
struct SgdFn {
  SgdUpdateParams p;
  A8_HD void operator()(int64_t i) const {
    using C = Acc<P>;
    const P* x = static_cast<const P*>(p.param);
    const P* bf = static_cast<const P*>(p.buf);
    P* x_out = static_cast<P*>(p.param_next);
    P* b_out = static_cast<P*>(p.buf_next);
    const bool has_buf = bf != nullptr;
    if (p.ctl[kDevCtlApplied] == 0.0f) {
      Keep(x, x_out, i);
      if (has_buf) Keep(bf, b_out, i);
      return;
    }
    const C lr = static_cast<C>(p.ctl[kDevCtlLr]);
    const C momentum = static_cast<C>(p.momentum);
    const bool use_buf = p.momentum != 0.0f;
    C g = rn::Mul(static_cast<C>(Ld(static_cast<const G*>(p.grad), i)),
                  static_cast<C>(p.ctl[kDevCtlGradScale]));
    C xi = Ld(x, i);
    if (p.weight_decay != 0.0f) g = rn::Add(g, rn::Mul(static_cast<C>(p.weight_decay), xi));
    if (use_buf) {
      C bi = Ld(bf, i);
      bi = p.ctl[kDevCtlUpdates] == 1.0f
               ? g
               : rn::Add(rn::Mul(momentum, bi),
                         rn::Mul(rn::Sub(C(1), static_cast<C>(p.dampening)), g));
      g = p.nesterov ? rn::Add(g, rn::Mul(momentum, bi)) : bi;
      St(b_out, i, bi);
    } else if (has_buf) {
      Keep(bf, b_out, i);  // momentum 0: a present buffer passes through, as PyTorch
    }
    St(x_out, i, rn::Sub(xi, rn::Mul(lr, g)));
  }
};

// The per-step scalars of an Adam update, computed once from ctl by one thread.
struct AdamScalars {
  int32_t applied;
  double lr, step_size, inv_sqrt_bc2;
};

struct AdamScalarsFn {
  float beta1, beta2;
  const float* ctl;
  AdamScalars* out;
  A8_HD void operator()(int64_t) const {
    const double t = ctl[kDevCtlUpdates];
    const double lr = ctl[kDevCtlLr];
    const double bc1 = 1.0 - ::pow(static_cast<double>(beta1), t);
    const double bc2 = 1.0 - ::pow(static_cast<double>(beta2), t);
    out->applied = ctl[kDevCtlApplied] != 0.0f ? 1 : 0;
    out->lr = lr;
    out->step_size = lr / bc1;
    out->inv_sqrt_bc2 = 1.0 / ::sqrt(bc2);
  }
};

template <typename P, typename G>
struct AdamFn {
  AdamUpdateParams p;
  const AdamScalars* sc;
  A8_HD void operator()(int64_t i) const {
    using C = Acc<P>;
    const P* xp = static_cast<const P*>(p.param);
    const P* mp = static_cast<const P*>(p.m);
    const P* vp = static_cast<const P*>(p.v);
    P* x_out = static_cast<P*>(p.param_next);
    P* m_out = static_cast<P*>(p.m_next);
    P* v_out = static_cast<P*>(p.v_next);
    if (sc->applied == 0) {
      Keep(xp, x_out, i);
      Keep(mp, m_out, i);
      Keep(vp, v_out, i);
      return;
    }
    const C lr = static_cast<C>(sc->lr);
    const C beta1 = static_cast<C>(p.beta1), beta2 = static_cast<C>(p.beta2);
    const C wd = static_cast<C>(p.weight_decay);
    C g = rn::Mul(static_cast<C>(Ld(static_cast<const G*>(p.grad), i)),
                  static_cast<C>(p.ctl[kDevCtlGradScale]));
    C x = Ld(xp, i);
    if (p.decoupled) {
      x = rn::Mul(x, rn::Sub(C(1), rn::Mul(lr, wd)));
    } else if (wd != C(0)) {
      g = rn::Add(g, rn::Mul(wd, x));
    }
    const C m_next = rn::Add(rn::Mul(beta1, Ld(mp, i)), rn::Mul(rn::Sub(C(1), beta1), g));
    const C v_next =
        rn::Add(rn::Mul(beta2, Ld(vp, i)), rn::Mul(rn::Mul(rn::Sub(C(1), beta2), g), g));
    const C denom =
        rn::Add(rn::Mul(Sqrt(v_next), static_cast<C>(sc->inv_sqrt_bc2)), static_cast<C>(p.eps));
    St(x_out, i, rn::Sub(x, rn::Mul(static_cast<C>(sc->step_size), m_next) / denom));
    St(m_out, i, m_next);
    St(v_out, i, v_next);
  }
};

// ---- ONNX optimizers: R and T read once by one thread; R adjusted as the CPU does.
struct OnnxScalars {
  double rate;
  int64_t t;
};

struct OnnxScalarsFn {
  OnnxOptimParams p;
  OnnxScalars* out;
  A8_HD void operator()(int64_t) const {
    const double r = p.r_f64 ? *static_cast<const double*>(p.r)
                             : static_cast<double>(*static_cast<const float*>(p.r));
    const int64_t t = *p.t;
    const double td = static_cast<double>(t);
    double rate = r;
    if (p.kind == OnnxOptimizer::kAdam && t > 0) {
      rate = rn::Mul(r, ::sqrt(1.0 - ::pow(static_cast<double>(p.beta), td))) /
             (1.0 - ::pow(static_cast<double>(p.alpha), td));
    } else if (p.kind == OnnxOptimizer::kAdagrad) {
      rate = r / rn::Add(1.0, rn::Mul(td, static_cast<double>(p.decay_factor)));
    }
    out->rate = rate;
    out->t = t;
  }
};

template <typename T>
struct OnnxUpdateFn {
  OnnxOptimParams p;
  const OnnxScalars* sc;
  A8_HD void operator()(int64_t i) const {
    using C = Acc<T>;
    const C rate = static_cast<C>(sc->rate);
    const C nc = static_cast<C>(p.norm_coefficient);
    const C x = Ld(static_cast<const T*>(p.x), i);
    const C g = rn::Add(rn::Mul(nc, x), Ld(static_cast<const T*>(p.g), i));
    const C s1 = Ld(static_cast<const T*>(p.s1), i);
    C x_next = 0, s1_next = 0;
    switch (p.kind) {
      case OnnxOptimizer::kAdam: {
        const C alpha = static_cast<C>(p.alpha), beta = static_cast<C>(p.beta);
        const C h = Ld(static_cast<const T*>(p.s2), i);
        s1_next = rn::Add(rn::Mul(alpha, s1), rn::Mul(rn::Sub(C(1), alpha), g));
        const C h_next = rn::Add(rn::Mul(beta, h), rn::Mul(rn::Mul(rn::Sub(C(1), beta), g), g));
        const C step = rn::Mul(rate, s1_next) / rn::Add(Sqrt(h_next), static_cast<C>(p.epsilon));
        x_next = rn::Mul(rn::Sub(C(1), static_cast<C>(p.norm_coefficient_post)), rn::Sub(x, step));
        St(static_cast<T*>(p.s2_new), i, h_next);
        break;
      }
      case OnnxOptimizer::kMomentum: {
        const C alpha = static_cast<C>(p.alpha);
        const C beta_adjusted = sc->t > 0 ? static_cast<C>(p.beta) : C(1);
        s1_next = rn::Add(rn::Mul(alpha, s1), rn::Mul(beta_adjusted, g));
        const C dir = p.nesterov ? rn::Add(g, rn::Mul(alpha, s1_next)) : s1_next;
        x_next = rn::Sub(x, rn::Mul(rate, dir));
        break;
      }
      case OnnxOptimizer::kAdagrad: {
        s1_next = rn::Add(s1, rn::Mul(g, g));
        x_next = rn::Sub(x, rn::Mul(rate, g) / rn::Add(Sqrt(s1_next), static_cast<C>(p.epsilon)));
        break;
      }
    }
    St(static_cast<T*>(p.x_new), i, x_next);
    St(static_cast<T*>(p.s1_new), i, s1_next);
  }
};

// Calls fn(P{}, G{}) for a float parameter and a float gradient dtype.
template <typename Fn>
DevStatus DispatchParamGrad(DType param, DType grad, Fn&& fn) {
  return DispatchFloat(param, [&](auto p_tag) {
    return DispatchFloat(grad, [&](auto g_tag) { return fn(p_tag, g_tag); });
  });
}

}  // namespace update_detail

DevStatus TrainControl(DevCtx& ctx, const TrainControlParams& p) {
  return ForEach(ctx, 1, update_detail::TrainControlFn{p});
}

DevStatus UpdateScale(DevCtx& ctx, const UpdateScaleParams& p) {
  return ForEach(ctx, 1, update_detail::UpdateScaleFn{p});
}

DevStatus GradAccumulate(DevCtx& ctx, const GradAccumulateParams& p) {
  return update_detail::DispatchParamGrad(p.acc_dtype, p.g_dtype, [&](auto a_tag, auto g_tag) {
    using A = decltype(a_tag);
    using G = decltype(g_tag);
    update_detail::GradAccumulateFn<A, G> f{p.accumulate, p.step, static_cast<const A*>(p.acc),
                                            static_cast<const G*>(p.g),
                                            static_cast<A*>(p.acc_next)};
    return ForEach(ctx, p.n, f);
  });
}

DevStatus UnscaleCheckFinite(DevCtx& ctx, const UnscaleParams& p) {
  using update_detail::kFlagGroup;
  using update_detail::kUnscaleSlots;
  int64_t slots = 0;
  for (int t = 0; t < p.num_tensors; ++t)
    slots += p.tensors[t].n < kUnscaleSlots ? p.tensors[t].n : kUnscaleSlots;
  const int64_t groups = (slots + kFlagGroup - 1) / kFlagGroup;
  const size_t flag_bytes = update_detail::AlignUp(static_cast<size_t>(slots + 1));
  void* mem = nullptr;
  A8_DEV_RETURN_IF_ERROR(Scratch(ctx, flag_bytes + static_cast<size_t>(groups + 1), &mem));
  uint8_t* flags = static_cast<uint8_t*>(mem);
  uint8_t* group_flags = flags + flag_bytes;
  int64_t at = 0;
  for (int t = 0; t < p.num_tensors; ++t) {
    const UnscaleTensor& x = p.tensors[t];
    const int64_t s = x.n < kUnscaleSlots ? x.n : kUnscaleSlots;
    A8_DEV_RETURN_IF_ERROR(DispatchFloat(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      return ForEach(ctx, s,
                     update_detail::UnscaleFn<T>{p.scale, static_cast<const T*>(x.g), x.out, x.n, s,
                                                 flags + at});
    }));
    at += s;
  }
  A8_DEV_RETURN_IF_ERROR(
      ForEach(ctx, groups, update_detail::FlagGroupFn{flags, slots, group_flags}));
  return ForEach(ctx, 1, update_detail::FoundInfFn{group_flags, groups, p.found_inf});
}

DevStatus SgdUpdate(DevCtx& ctx, const SgdUpdateParams& p) {
  return update_detail::DispatchParamGrad(p.param_dtype, p.grad_dtype, [&](auto p_tag, auto g_tag) {
    return ForEach(ctx, p.n, update_detail::SgdFn<decltype(p_tag), decltype(g_tag)>{p});
  });
}

DevStatus AdamUpdate(DevCtx& ctx, const AdamUpdateParams& p) {
  void* mem = nullptr;
  A8_DEV_RETURN_IF_ERROR(Scratch(ctx, sizeof(update_detail::AdamScalars), &mem));
  auto* sc = static_cast<update_detail::AdamScalars*>(mem);
  A8_DEV_RETURN_IF_ERROR(
      ForEach(ctx, 1, update_detail::AdamScalarsFn{p.beta1, p.beta2, p.ctl, sc}));
  return update_detail::DispatchParamGrad(p.param_dtype, p.grad_dtype, [&](auto p_tag, auto g_tag) {
    return ForEach(ctx, p.n, update_detail::AdamFn<decltype(p_tag), decltype(g_tag)>{p, sc});
  });
}

DevStatus OnnxOptimizerUpdate(DevCtx& ctx, const OnnxOptimParams& p) {
  void* mem = nullptr;
  A8_DEV_RETURN_IF_ERROR(Scratch(ctx, sizeof(update_detail::OnnxScalars), &mem));
  auto* sc = static_cast<update_detail::OnnxScalars*>(mem);
  A8_DEV_RETURN_IF_ERROR(ForEach(ctx, 1, update_detail::OnnxScalarsFn{p, sc}));
  return DispatchFloat(p.dtype, [&](auto tag) {
    return ForEach(ctx, p.n, update_detail::OnnxUpdateFn<decltype(tag)>{p, sc});
  });
}

}  // namespace a8::A8_DEV_NS

// Device kernels of the step control, gradient accumulation, dynamic loss scaling and the
// parameter updates (kernels/device/loss_optim.h). The step, scale and update math is the CPU's
// own A8_HD bodies (kernels/common/optim_math.h); the CUDA build compiles this file with
// --fmad=false (kernels/cuda/CMakeLists.txt), and the few products of its own go through rn::,
// so that nvcc contracts nothing into an FMA the CPU does not do: the control vector, the scale,
// the tracker and the f32 updates equal the CPU's bit for bit (the one exception: a bias
// correction's pow/cos in double may differ by an ulp before rounding to f32).
//
// The skip-on-flag rule: an update reads ctl[cpu::kCtlApplied] in the device functor; when it is 0
// every output keeps its input's bytes (a copy unless in place), so parameters, moments and the
// update count stay bit-identical without a host round trip.
#pragma once

#include <cmath>

#include "kernels/device/launch.h"
#include "kernels/device/loss_optim.h"

namespace a8::A8_DEV_NS {
namespace update_detail {

A8_HD bool IsFinite(float v) { return (FloatToBits(v) & 0x7f800000u) != 0x7f800000u; }
A8_HD bool IsFinite(double v) {
  return (ReinterpretBits<uint64_t>(v) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

// ---- step control and loss scale (one thread each)

// cpu::TrainControlStep, reading its scalars from device memory.
struct TrainControlFn {
  TrainControlParams p;
  A8_HD void operator()(int64_t) const {
    cpu::TrainControlInputs in;
    in.step = *p.step;
    in.updates = *p.updates;
    in.has_sq_norm = p.sq_norm != nullptr;
    in.sq_norm = in.has_sq_norm ? *p.sq_norm : 0.0f;
    in.has_found_inf = p.found_inf != nullptr;
    in.found_inf = in.has_found_inf ? *p.found_inf : 0.0f;
    cpu::TrainControlStep(p.math, in, p.ctl, p.step_next, p.updates_next);
  }
};

// cpu::UpdateScaleStep (PyTorch's _amp_update_scale_ plus a8's floor and ceiling).
struct UpdateScaleFn {
  UpdateScaleParams p;
  A8_HD void operator()(int64_t) const {
    cpu::UpdateScaleStep(p.math, *p.scale, *p.tracker, *p.found_inf, *p.step, p.scale_next,
                         p.tracker_next);
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

// Slots per gradient tensor: thread j of tensor t unscales elements j, j + slots, ... (coalesced),
// kUnscaleBatch of them loaded before any is stored (out may be g, at the same index only), and
// records whether it saw an Inf or NaN in flags[j]. 2^18 slots fill an H200 (132 SMs x 2048
// threads); 2^16 left it three quarters idle with one load in flight a thread (1.5 ms for
// BERT-base's 110 M gradients, 0.3 TB/s).
constexpr int64_t kUnscaleSlots = int64_t{1} << 18;
constexpr int kUnscaleBatch = 4;
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
    // 1/scale in double, stored as float (cpu::InverseScale, PyTorch's GradScaler); a check
    // alone (a8.CheckFinite: out null) has no scale.
    const C inv = out != nullptr ? static_cast<C>(cpu::InverseScale(*scale)) : C(1);
    bool inf = false;
    for (int64_t i = j; i < n; i += kUnscaleBatch * slots) {
      C v[kUnscaleBatch];
      for (int k = 0; k < kUnscaleBatch; ++k) {
        v[k] = i + k * slots < n ? Ld(g, i + k * slots) : C(0);  // loads before the stores
      }
      for (int k = 0; k < kUnscaleBatch && i + k * slots < n; ++k) {
        inf |= !IsFinite(v[k]);
        if (out != nullptr) out[i + k * slots] = static_cast<float>(rn::Mul(v[k], inv));
      }
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
    const bool use_buf = p.math.momentum != 0.0f;
    if (p.ctl[cpu::kCtlApplied] == 0.0f) {
      Keep(x, x_out, i);
      if (has_buf) Keep(bf, b_out, i);
      return;
    }
    const cpu::SgdStep<C> s{
        static_cast<C>(p.ctl[cpu::kCtlLr]),  static_cast<C>(p.ctl[cpu::kCtlGradScale]),
        static_cast<C>(p.math.momentum),     static_cast<C>(p.math.dampening),
        static_cast<C>(p.math.weight_decay), p.math.nesterov,
        p.ctl[cpu::kCtlUpdates] == 1.0f};
    C xi = Ld(x, i);
    C bi = use_buf ? Ld(bf, i) : C(0);
    cpu::SgdElement<C>(s, static_cast<C>(Ld(static_cast<const G*>(p.grad), i)), &xi, &bi);
    St(x_out, i, xi);
    if (use_buf) {
      St(b_out, i, bi);
    } else if (has_buf) {
      Keep(bf, b_out, i);  // momentum 0: a present buffer passes through, as PyTorch
    }
  }
};

// The per-step scalars of an Adam update, computed once from ctl by one thread.
struct AdamScalars {
  int32_t applied;
  double lr, step_size, inv_sqrt_bc2;
  float inv_scale;  // 1 / the loss scale (AdamUpdateParams::scale), 1 without one
};

struct AdamScalarsFn {
  float beta1, beta2;
  const float* ctl;
  const float* scale;  // may be null
  AdamScalars* out;
  A8_HD void operator()(int64_t) const {
    out->inv_scale = scale != nullptr ? cpu::InverseScale(*scale) : 1.0f;
    const double t = ctl[cpu::kCtlUpdates];
    const double lr = ctl[cpu::kCtlLr];
    const double bc1 = 1.0 - ::pow(static_cast<double>(beta1), t);
    const double bc2 = 1.0 - ::pow(static_cast<double>(beta2), t);
    out->applied = ctl[cpu::kCtlApplied] != 0.0f ? 1 : 0;
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
      StoreCopy(x_out, i);
      return;
    }
    cpu::AdamStep<C> s;
    s.lr = static_cast<C>(sc->lr);
    s.grad_scale = static_cast<C>(p.ctl[cpu::kCtlGradScale]);
    s.beta1 = static_cast<C>(p.math.beta1);
    s.beta2 = static_cast<C>(p.math.beta2);
    s.eps = static_cast<C>(p.math.eps);
    s.weight_decay = static_cast<C>(p.math.weight_decay);
    s.decoupled = p.math.decoupled;
    s.step_size = static_cast<C>(sc->step_size);
    s.inv_sqrt_bc2 = static_cast<C>(sc->inv_sqrt_bc2);
    C x = Ld(xp, i), m = Ld(mp, i), v = Ld(vp, i);
    const Acc<G> g = Ld(static_cast<const G*>(p.grad), i);
    // Unscaled as a8.UnscaleCheckFinite stores it (cpu::UnscaleElement), when the scale is here.
    const C gc = p.scale != nullptr ? static_cast<C>(cpu::UnscaleElement(g, sc->inv_scale))
                                    : static_cast<C>(g);
    cpu::AdamElement<C>(s, gc, &x, &m, &v);
    St(x_out, i, x);
    St(m_out, i, m);
    St(v_out, i, v);
    StoreCopy(x_out, i);
  }
  // The working copy: the stored f32 parameter rounded to f16/bf16 as a Cast rounds it.
  template <typename Q>
  A8_HD void StoreCopy(const Q* x, int64_t i) const {
    if constexpr (std::is_same_v<Q, float>) {
      if (p.copy == nullptr) return;
      if (p.copy_dtype == DType::kF16) {
        St(static_cast<Half*>(p.copy), i, x[i]);
      } else {
        St(static_cast<BF16*>(p.copy), i, x[i]);
      }
    }
  }
};

// ---- ONNX optimizers: R and T read once by one thread, R turned into the step's rate (Adam's
// bias correction, Adagrad's decay) for every element's update.
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
      rate = rn::Mul(r, ::sqrt(1.0 - ::pow(static_cast<double>(p.adam.beta), td))) /
             (1.0 - ::pow(static_cast<double>(p.adam.alpha), td));
    } else if (p.kind == OnnxOptimizer::kAdagrad) {
      rate = r / rn::Add(1.0, rn::Mul(td, static_cast<double>(p.adagrad.decay_factor)));
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
    const C g = Ld(static_cast<const T*>(p.g), i);
    C x = Ld(static_cast<const T*>(p.x), i);
    C s1 = Ld(static_cast<const T*>(p.s1), i);
    switch (p.kind) {
      case OnnxOptimizer::kAdam: {
        const cpu::OnnxAdamParams& a = p.adam;
        const cpu::OnnxAdamStep<C> s{rate,
                                     static_cast<C>(a.alpha),
                                     static_cast<C>(a.beta),
                                     static_cast<C>(a.epsilon),
                                     static_cast<C>(a.norm_coefficient),
                                     static_cast<C>(a.norm_coefficient_post)};
        C h = Ld(static_cast<const T*>(p.s2), i);
        cpu::OnnxAdamElement<C>(s, g, &x, &s1, &h);
        St(static_cast<T*>(p.s2_new), i, h);
        break;
      }
      case OnnxOptimizer::kMomentum: {
        const cpu::OnnxMomentumParams& m = p.momentum;
        const cpu::OnnxMomentumStep<C> s{rate, static_cast<C>(m.alpha),
                                         sc->t > 0 ? static_cast<C>(m.beta) : C(1),
                                         static_cast<C>(m.norm_coefficient), m.nesterov};
        cpu::OnnxMomentumElement<C>(s, g, &x, &s1);
        break;
      }
      case OnnxOptimizer::kAdagrad: {
        const cpu::OnnxAdagradStep<C> s{rate, static_cast<C>(p.adagrad.epsilon),
                                        static_cast<C>(p.adagrad.norm_coefficient)};
        cpu::OnnxAdagradElement<C>(s, g, &x, &s1);
        break;
      }
    }
    St(static_cast<T*>(p.x_new), i, x);
    St(static_cast<T*>(p.s1_new), i, s1);
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
  const size_t flag_bytes = AlignUp(static_cast<size_t>(slots + 1));
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
  A8_DEV_RETURN_IF_ERROR(ForEach(
      ctx, 1, update_detail::AdamScalarsFn{p.math.beta1, p.math.beta2, p.ctl, p.scale, sc}));
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
    // About eight copies' work an element (kernels/cpu/optim.cc's kUpdateCost).
    return ForEach(ctx, p.n, update_detail::OnnxUpdateFn<decltype(tag)>{p, sc}, 8);
  });
}

}  // namespace a8::A8_DEV_NS

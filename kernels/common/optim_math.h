// The per-element and per-step math of the optimizers, the step control and the loss scaler: one
// A8_HD body for the CPU reference (kernels/cpu/optim.cc, scaler.cc) and the CUDA kernels
// (kernels/device/loss_optim_update_impl.h, compiled there with --fmad=false so that nvcc does not
// contract a * b + c into a fused multiply-add the CPU never does: the control vector, the scale
// and the updates then agree bit for bit). The ONNX preview-training updates (Onnx*Element) have
// the device kernels alone, which the CPU backend runs on the host. F is the compute type: float
// for f32/f16/bf16 parameters, double for f64. No status.h, no std:: containers: nvcc compiles
// this header.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/float16.h"
#include "kernels/common/train_defaults.h"

namespace a8::cpu {

A8_HD float MathSqrt(float v) { return ::sqrtf(v); }
A8_HD double MathSqrt(double v) { return ::sqrt(v); }
A8_HD bool IsFiniteFloat(float v) { return (FloatToBits(v) & 0x7f800000u) != 0x7f800000u; }

// ---- step control

// Layout of a8.TrainControl's `ctl` output (f32[kCtlSize]).
enum CtlIndex : int {
  kCtlLr = 0,         // the learning rate of this update (schedule applied)
  kCtlGradScale = 1,  // multiplies every gradient: 1 / accumulate, times the clip factor
  kCtlApplied = 2,    // 1 when this step updates the parameters, else 0
  kCtlUpdates = 3,    // updates applied so far, this one included (Adam's t; 1 =
                      // first update)
  kCtlGradNorm = 4,   // norm of the averaged gradient before clipping (0 without
                      // GlobalNormSq)
  kCtlSize = 5,
};

struct TrainControlParams {
  float lr = 0.0f;
  bool cosine = false;  // else constant
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  float min_lr = 0.0f;
  int64_t accumulate = 1;      // >= 1
  float max_grad_norm = 0.0f;  // 0: no clipping
};

// Scalar inputs of one step; sq_norm / found_inf are used when their has_ flag is set.
struct TrainControlInputs {
  int64_t step = 0;
  float updates = 0.0f;
  bool has_sq_norm = false;
  float sq_norm = 0.0f;
  bool has_found_inf = false;
  float found_inf = 0.0f;
};

// The learning rate of the optimizer update with index `opt_index` (0-based): constant, or a linear
// warm-up over warmup_steps followed by a cosine decay to min_lr at total_steps.
A8_HD double ScheduledLr(const TrainControlParams& p, int64_t opt_index) {
  if (!p.cosine) return p.lr;
  if (opt_index < p.warmup_steps) {
    return static_cast<double>(p.lr) * static_cast<double>(opt_index + 1) /
           static_cast<double>(p.warmup_steps);
  }
  const int64_t span = p.total_steps - p.warmup_steps > 1 ? p.total_steps - p.warmup_steps : 1;
  double progress = static_cast<double>(opt_index - p.warmup_steps) / static_cast<double>(span);
  progress = progress < 0.0 ? 0.0 : (progress > 1.0 ? 1.0 : progress);
  const double kPi = 3.14159265358979323846;
  return p.min_lr + 0.5 * (static_cast<double>(p.lr) - p.min_lr) * (1.0 + ::cos(kPi * progress));
}

// One step of control: ctl[kCtlSize], the next step counter and the next update count.
A8_HD void TrainControlStep(const TrainControlParams& p, const TrainControlInputs& in, float* ctl,
                            int64_t* step_next, float* updates_next) {
  const int64_t k = p.accumulate;
  const bool boundary = (in.step + 1) % k == 0;
  const bool overflow = in.has_found_inf && in.found_inf != 0.0f;
  const bool applied = boundary && !overflow;
  double grad_scale = 1.0 / static_cast<double>(k);
  double norm = 0.0;
  if (in.has_sq_norm) {
    // The norm of the averaged gradient: the accumulated sum's norm over k.
    norm = ::sqrt(static_cast<double>(in.sq_norm)) / static_cast<double>(k);
    if (p.max_grad_norm > 0.0f) {
      // torch.nn.utils.clip_grad_norm_: max_norm / (total_norm + 1e-6), at most 1.
      const double clip = static_cast<double>(p.max_grad_norm) / (norm + 1e-6);
      grad_scale *= clip < 1.0 ? clip : 1.0;
    }
  }
  const float next_updates = in.updates + (applied ? 1.0f : 0.0f);
  ctl[kCtlLr] = static_cast<float>(ScheduledLr(p, in.step / k));
  ctl[kCtlGradScale] = static_cast<float>(grad_scale);
  ctl[kCtlApplied] = applied ? 1.0f : 0.0f;
  ctl[kCtlUpdates] = next_updates;
  ctl[kCtlGradNorm] = static_cast<float>(norm);
  *step_next = in.step + 1;
  *updates_next = next_updates;
}

// The multiplier that unscales a gradient: 1/scale computed in double and stored as float, as
// PyTorch's GradScaler does (scale.double().reciprocal().float()).
A8_HD float InverseScale(float scale) {
  return static_cast<float>(1.0 / static_cast<double>(scale));
}

// A scaled gradient element as a8.UnscaleCheckFinite stores it: float(g * inv) in the gradient's
// compute type C (float; double for an f64 gradient), inv = InverseScale(scale). a8.AdamUpdate
// with a scale input (the unscale folded into the update, passes/fusion/fuse_optimizer.h)
// multiplies its gradient by this first, so it gives the unfused bits.
template <typename C>
A8_HD float UnscaleElement(C g, float inv) {
  return static_cast<float>(g * static_cast<C>(inv));
}

struct UpdateScaleParams {
  float growth_factor = defaults::kGrowthFactor;
  float backoff_factor = defaults::kBackoffFactor;
  int64_t growth_interval = defaults::kGrowthInterval;  // >= 1
  float min_scale = 0.0f;  // backoff never goes below it (0: no floor, as PyTorch)
  float max_scale = 0.0f;  // growth never goes above it (0: no ceiling, as PyTorch)
  int64_t accumulate = 1;  // the scale changes only on update steps
};

// One step of PyTorch's _amp_update_scale_ (products in double, as its kernels compute
// `float * double`), plus a8's floor and ceiling. Only when (step + 1) % accumulate == 0: a
// micro-step keeps scale and tracker.
A8_HD void UpdateScaleStep(const UpdateScaleParams& p, float scale, int32_t tracker,
                           float found_inf, int64_t step, float* scale_next,
                           int32_t* tracker_next) {
  *scale_next = scale;
  *tracker_next = tracker;
  if ((step + 1) % p.accumulate != 0) return;
  if (found_inf != 0.0f) {
    float backed = static_cast<float>(static_cast<double>(scale) * p.backoff_factor);
    if (p.min_scale > 0.0f && backed < p.min_scale) backed = p.min_scale;
    *scale_next = backed;
    *tracker_next = 0;
    return;
  }
  const int32_t successful = tracker + 1;
  if (successful >= p.growth_interval) {
    const float grown = static_cast<float>(static_cast<double>(scale) * p.growth_factor);
    if (IsFiniteFloat(grown) && (p.max_scale <= 0.0f || grown <= p.max_scale)) {
      *scale_next = grown;
    }
    *tracker_next = 0;
  } else {
    *tracker_next = successful;
  }
}

struct SgdParams {
  float momentum = 0.0f;
  float dampening = 0.0f;
  bool nesterov = false;
  float weight_decay = 0.0f;
};

// The per-step scalars of an SGD update, taken from ctl.
template <typename F>
struct SgdStep {
  F lr, grad_scale, momentum, dampening, weight_decay;
  bool nesterov, first;  // first: the first applied update (initialises the
                         // momentum buffer)
};

// torch.optim.SGD for one element; *buf is read and written only when momentum != 0.
template <typename F>
A8_HD void SgdElement(const SgdStep<F>& s, F grad, F* param, F* buf) {
  F g = grad * s.grad_scale;
  if (s.weight_decay != F(0)) g += s.weight_decay * *param;
  if (s.momentum != F(0)) {
    *buf = s.first ? g : s.momentum * *buf + (F(1) - s.dampening) * g;
    g = s.nesterov ? g + s.momentum * *buf : *buf;
  }
  *param -= s.lr * g;
}

struct AdamParams {
  float beta1 = defaults::kBeta1;
  float beta2 = defaults::kBeta2;
  float eps = defaults::kEps;
  float weight_decay = defaults::kWeightDecay;
  bool decoupled = false;  // AdamW
};

// The per-step scalars of an Adam update: bias corrections computed in double from ctl.
template <typename F>
struct AdamStep {
  F lr, grad_scale, beta1, beta2, eps, weight_decay;
  bool decoupled;
  F step_size;     // lr / (1 - beta1^t)
  F inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
};

// torch.optim.Adam (decoupled = false) / AdamW (true), amsgrad off, for one element.
template <typename F>
A8_HD void AdamElement(const AdamStep<F>& s, F grad, F* param, F* m, F* v) {
  F g = grad * s.grad_scale;
  F x = *param;
  if (s.decoupled) {
    x *= F(1) - s.lr * s.weight_decay;
  } else if (s.weight_decay != F(0)) {
    g += s.weight_decay * x;
  }
  const F m_next = s.beta1 * *m + (F(1) - s.beta1) * g;
  const F v_next = s.beta2 * *v + (F(1) - s.beta2) * g * g;
  const F denom = MathSqrt(v_next) * s.inv_sqrt_bc2 + s.eps;
  *param = x - s.step_size * m_next / denom;
  *m = m_next;
  *v = v_next;
}

// The per-step scalars: R already bias-corrected (R * sqrt(1 - beta^T) / (1 - alpha^T) when T > 0,
// computed in double).
template <typename F>
struct OnnxAdamStep {
  F r_adjusted, alpha, beta, epsilon, norm_coefficient, norm_coefficient_post;
};

template <typename F>
A8_HD void OnnxAdamElement(const OnnxAdamStep<F>& s, F grad, F* x, F* v, F* h) {
  const F g = s.norm_coefficient * *x + grad;
  const F v_next = s.alpha * *v + (F(1) - s.alpha) * g;
  const F h_next = s.beta * *h + (F(1) - s.beta) * g * g;
  const F x_next = *x - s.r_adjusted * v_next / (MathSqrt(h_next) + s.epsilon);
  *x = (F(1) - s.norm_coefficient_post) * x_next;
  *v = v_next;
  *h = h_next;
}

// beta_adjusted: beta, or 1 on the first update (T == 0).
template <typename F>
struct OnnxMomentumStep {
  F r, alpha, beta_adjusted, norm_coefficient;
  bool nesterov;
};

template <typename F>
A8_HD void OnnxMomentumElement(const OnnxMomentumStep<F>& s, F grad, F* x, F* v) {
  const F g = s.norm_coefficient * *x + grad;
  const F v_next = s.alpha * *v + s.beta_adjusted * g;
  *x -= s.r * (s.nesterov ? g + s.alpha * v_next : v_next);
  *v = v_next;
}

// r_decayed: R / (1 + T * decay_factor), computed in double.
template <typename F>
struct OnnxAdagradStep {
  F r_decayed, epsilon, norm_coefficient;
};

template <typename F>
A8_HD void OnnxAdagradElement(const OnnxAdagradStep<F>& s, F grad, F* x, F* h) {
  const F g = s.norm_coefficient * *x + grad;
  const F h_next = *h + g * g;
  *x -= s.r_decayed * g / (MathSqrt(h_next) + s.epsilon);
  *h = h_next;
}

}  // namespace a8::cpu

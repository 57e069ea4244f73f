// Device kernels of the losses, the optimizer updates and dynamic loss scaling (issue 6). The
// losses and their gradients are the only copy of their math: the CPU backend runs them on the
// host (runtime/cpu/cpu_backend.h), as are the ONNX preview-training updates. a8's own updates,
// the step control and the scaler are the CUDA twins of kernels/cpu/optim.h.
//
// - Every pointer is device memory. Scalars that are computed during the step (the control
//   vector ctl, the loss scale, found_inf, the step counters, ONNX's R and T) are read INSIDE the
//   device code, so an update that must be skipped (ctl[cpu::kCtlApplied] == 0) leaves parameters
//   and moments bit-identical without any host synchronisation.
// - Reductions are deterministic: per-target / per-element terms go to scratch (one thread each),
//   then ONE thread sums them in index order (float for f16/bf16/f32, double for f64), so a loss
//   does not depend on how the launch is split.
// - A label outside [0, C) that is not the ignore_index raises DevErr (the backend names the
//   kernel after the step; where memory is host memory the entry names the label before the
//   launch), and that target's loss and gradient are NaN (never read outside the weights or the
//   scores).
// - The update and scaler arithmetic uses rn::Mul/Add/Sub (below): nvcc contracts a * b + c into
//   one FMA by default, the CPU backend never does, and the control vector, the loss scale and the
//   updates must agree bit for bit in f32.
#pragma once

#include <cstdint>

#include "kernels/common/onnx_optim_params.h"
#include "kernels/common/optim_math.h"
#include "kernels/common/pair_loss.h"
#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

// ---- IEEE operations that nvcc may not fuse into an FMA (host: the plain operators)
namespace rn {

// Name(a, b) = a OP b for float and double, rounded once: on the device through the _rn
// intrinsics FLOAT_RN / DOUBLE_RN, which nvcc never contracts.
#if defined(__CUDA_ARCH__)
#define A8_RN_OP(Name, OP, FLOAT_RN, DOUBLE_RN)                 \
  A8_HD float Name(float a, float b) { return FLOAT_RN(a, b); } \
  A8_HD double Name(double a, double b) { return DOUBLE_RN(a, b); }
#else
#define A8_RN_OP(Name, OP, FLOAT_RN, DOUBLE_RN)         \
  A8_HD float Name(float a, float b) { return a OP b; } \
  A8_HD double Name(double a, double b) { return a OP b; }
#endif
A8_RN_OP(Mul, *, __fmul_rn, __dmul_rn)
A8_RN_OP(Add, +, __fadd_rn, __dadd_rn)
A8_RN_OP(Sub, -, __fsub_rn, __dsub_rn)
#undef A8_RN_OP

}  // namespace rn

// ---- losses

enum class DevLossReduction : int32_t { kNone, kMean, kSum };

// The shape and attributes of SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss and their
// gradients (a8::LossParams, kernels/common/kernel_types.h): scores [N, C, d...], labels [N, d...]
// (i32 or i64).
struct LossShape {
  DType dtype = DType::kF32;  // scores / log-probabilities, weights, loss, dloss
  bool labels_i32 = false;    // else i64
  int64_t batch = 1;
  int64_t classes = 1;
  int64_t extra = 1;  // product of d1..dk
  DevLossReduction reduction = DevLossReduction::kMean;
  bool has_ignore_index = false;
  int64_t ignore_index = 0;
  DevErr err;  // raised for a label outside [0, classes) that is not ignore_index

  // Target t's label, read from `labels` (i32 or i64).
  A8_HD int64_t Label(const void* labels, int64_t t) const {
    return labels_i32 ? static_cast<const int32_t*>(labels)[t]
                      : static_cast<const int64_t*>(labels)[t];
  }
  // Whether `label` is ignore_index (its target adds nothing), and whether it is a class: what the
  // kernels and the entries' host check both test (any other label raises `err`).
  A8_HD bool Ignores(int64_t label) const { return has_ignore_index && label == ignore_index; }
  A8_HD bool IsClass(int64_t label) const { return label >= 0 && label < classes; }
};

struct LossParams {
  LossShape shape;
  const void* scores = nullptr;  // NLL: the log-probabilities
  const void* labels = nullptr;
  const void* weights = nullptr;  // [C] or null
  void* loss = nullptr;           // scalar (mean, sum) or [N, d...] (none)
  void* log_prob = nullptr;       // SoftmaxCrossEntropyLoss only; may be null
};
DevStatus SoftmaxCrossEntropyLoss(DevCtx& ctx, const LossParams& p);
DevStatus NegativeLogLikelihoodLoss(DevCtx& ctx, const LossParams& p);

struct LossGradParams {
  LossShape shape;
  const void* dloss = nullptr;   // scalar, or [N, d...] for reduction none
  const void* scores = nullptr;  // SoftmaxCrossEntropyLossGrad only
  const void* labels = nullptr;
  const void* weights = nullptr;  // [C] or null
  void* dscores = nullptr;        // [N, C, d...]
};
DevStatus SoftmaxCrossEntropyLossGrad(DevCtx& ctx, const LossGradParams& p);
DevStatus NegativeLogLikelihoodLossGrad(DevCtx& ctx, const LossGradParams& p);

// a8.MseLoss / a8.L1Loss / a8.BceWithLogitsLoss and their gradients.
using DevPairLoss = ::a8::PairLossKind;  // kernels/common/pair_loss.h
struct PairLossParams {
  DevPairLoss kind = DevPairLoss::kMse;
  DType dtype = DType::kF32;
  int64_t n = 0;
  const void* dloss = nullptr;  // gradient only: a scalar
  const void* pred = nullptr;
  const void* target = nullptr;
  void* loss = nullptr;     // forward: a scalar
  void* dpred = nullptr;    // gradient: may be null
  void* dtarget = nullptr;  // gradient: may be null
};
DevStatus PairLossForward(DevCtx& ctx, const PairLossParams& p);
DevStatus PairLossGrad(DevCtx& ctx, const PairLossParams& p);

// ---- step control (the control vector's layout is cpu::CtlIndex, kernels/common/optim_math.h)

struct TrainControlParams {
  cpu::TrainControlParams math;  // the attributes
  const int64_t* step = nullptr;
  const float* updates = nullptr;
  const float* sq_norm = nullptr;    // may be null
  const float* found_inf = nullptr;  // may be null
  float* ctl = nullptr;              // [cpu::kCtlSize]
  int64_t* step_next = nullptr;
  float* updates_next = nullptr;
};
DevStatus TrainControl(DevCtx& ctx, const TrainControlParams& p);

// ---- gradient reductions and accumulation

struct GradAccumulateParams {
  DType acc_dtype = DType::kF32, g_dtype = DType::kF32;
  int64_t n = 0;
  int64_t accumulate = 1;
  const int64_t* step = nullptr;
  const void* acc = nullptr;
  const void* g = nullptr;
  void* acc_next = nullptr;
};
DevStatus GradAccumulate(DevCtx& ctx, const GradAccumulateParams& p);

// ---- dynamic loss scaling

// a8.UnscaleCheckFinite: out[t] = float(g[t] * float(1 / double(*scale))) for every tensor
// (one launch each: a single multi-tensor launch is a later optimisation), *found_inf = 1 when any
// element is Inf or NaN, else 0 (per-slot flags in scratch, reduced in two more passes).
// a8.CheckFinite is the same launch with every `out` null (and no scale): the flag alone.
struct UnscaleTensor {
  DType dtype = DType::kF32;
  int64_t n = 0;
  const void* g = nullptr;
  float* out = nullptr;  // may be g (an f32 gradient unscaled in place); null: check only
};
struct UnscaleParams {
  const float* scale = nullptr;            // read only where some `out` is set
  const UnscaleTensor* tensors = nullptr;  // host array
  int num_tensors = 0;
  float* found_inf = nullptr;
};
DevStatus UnscaleCheckFinite(DevCtx& ctx, const UnscaleParams& p);

struct UpdateScaleParams {
  cpu::UpdateScaleParams math;  // the attributes
  const float* scale = nullptr;
  const int32_t* tracker = nullptr;
  const float* found_inf = nullptr;
  const int64_t* step = nullptr;
  float* scale_next = nullptr;
  int32_t* tracker_next = nullptr;
};
DevStatus UpdateScale(DevCtx& ctx, const UpdateScaleParams& p);

// ---- a8 parameter updates (torch.optim formulas; skipped when ctl[cpu::kCtlApplied] == 0)

// The operands every a8 update has: (param, grad, ctl, state...) -> (param_next, state_next...).
template <typename Math>
struct ParamUpdateOperands {
  Math math;  // the attributes
  DType param_dtype = DType::kF32, grad_dtype = DType::kF32;
  int64_t n = 0;
  const float* ctl = nullptr;
  const void* param = nullptr;
  const void* grad = nullptr;
  void* param_next = nullptr;
};

struct SgdUpdateParams : ParamUpdateOperands<cpu::SgdParams> {
  const void* buf = nullptr;  // null without a momentum buffer
  void* buf_next = nullptr;
};
DevStatus SgdUpdate(DevCtx& ctx, const SgdUpdateParams& p);

// scale and copy: what fuse-optimizer folds in (cpu::AdamExtras, kernels/cpu/optim.h).
struct AdamUpdateParams : ParamUpdateOperands<cpu::AdamParams> {
  const void* m = nullptr;
  const void* v = nullptr;
  void* m_next = nullptr;
  void* v_next = nullptr;
  const float* scale = nullptr;  // the loss scale: the gradient is unscaled first; null: none
  DType copy_dtype = DType::kF16;
  void* copy = nullptr;  // param_next rounded to copy_dtype (f16/bf16 of an f32 param); null: none
};
DevStatus AdamUpdate(DevCtx& ctx, const AdamUpdateParams& p);

// ---- ai.onnx.preview.training optimizers, one tensor per call; R (f32 or f64) and T (i64) are
// device scalars.

enum class OnnxOptimizer : int32_t { kAdam, kMomentum, kAdagrad };
struct OnnxOptimParams {
  OnnxOptimizer kind = OnnxOptimizer::kAdam;
  // The attributes of `kind`'s op (the others are unused).
  cpu::OnnxAdamParams adam;
  cpu::OnnxMomentumParams momentum;
  cpu::OnnxAdagradParams adagrad;
  bool r_f64 = false;
  const void* r = nullptr;
  const int64_t* t = nullptr;
  DType dtype = DType::kF32;
  int64_t n = 0;
  const void* x = nullptr;
  const void* g = nullptr;
  const void* s1 = nullptr;  // Adam: V; Momentum: V; Adagrad: H
  const void* s2 = nullptr;  // Adam: H
  void* x_new = nullptr;
  void* s1_new = nullptr;
  void* s2_new = nullptr;
};
DevStatus OnnxOptimizerUpdate(DevCtx& ctx, const OnnxOptimParams& p);

}  // namespace a8::A8_DEV_NS

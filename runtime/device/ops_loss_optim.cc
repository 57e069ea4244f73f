// Device registry entries of the losses, the optimizer updates and loss scaling: each reads its
// operands and attributes exactly as the CPU entry does where there is one
// (runtime/cpu/ops_optim.cc: same defaults, same InvalidInput messages) and launches the kernels of
// kernels/device/loss_optim.h. Every scalar computed during the step (ctl, scale, found_inf, the
// step counters, R and T) stays on the device: the kernels read it.
//
// What the CPU checks on values and a device entry cannot without a host sync: a negative step
// (TrainControl, UpdateScale) and an applied Adam update whose count is below 1. The losses are
// the CPU backend's kernels too (it has none of its own): where memory is host memory they name a
// label outside [0, C); on a GPU that target's loss and gradient are NaN.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/common/kernel_types.h"
#include "kernels/common/optim_math.h"
#include "kernels/device/loss_optim.h"
#include "runtime/core/attr_decode.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {

StatusOr<LossShape> LossShapeFrom(const a8::LossParams& lp, const char* op) {
  if (lp.label_dtype != DType::kI32 && lp.label_dtype != DType::kI64) {
    return Unsupported("{}: label dtype {} (i32 or i64 expected)", op, ElemName(lp.label_dtype));
  }
  LossShape s;
  s.dtype = lp.dtype;
  s.labels_i32 = lp.label_dtype == DType::kI32;
  s.batch = lp.batch;
  s.classes = lp.classes;
  s.extra = lp.extra;
  s.reduction = lp.reduction == a8::LossReduction::kNone  ? DevLossReduction::kNone
                : lp.reduction == a8::LossReduction::kSum ? DevLossReduction::kSum
                                                          : DevLossReduction::kMean;
  s.has_ignore_index = lp.has_ignore_index;
  s.ignore_index = lp.ignore_index;
  return s;
}

namespace {

// ---- losses

// The LossShape of a loss kernel or its gradient (LossParamsFromKernel, then the labels' checks).
StatusOr<LossShape> LossShapeOf(const KernelArgs& a, const Dims& scores_dims, int labels_input) {
  A8_ASSIGN_OR_RETURN(a8::LossParams lp, LossParamsFromKernel(a, scores_dims, labels_input));
  A8_ASSIGN_OR_RETURN(LossShape s, LossShapeFrom(lp, a.kernel().op().c_str()));
  const TensorArg& labels = a.in(labels_input);
  if (labels.count() != s.batch * s.extra) {
    return InvalidInput("{}: labels have {} elements, the scores {} targets", a.kernel().op(),
                        labels.count(), s.batch * s.extra);
  }
  // Where the host can read the labels (a constant, or any operand in the emulation and on the
  // CPU backend, which runs these entries), a label outside [0, C) that is not ignored is named
  // here; otherwise the kernel raises DevErr and that target's loss and gradient are NaN.
  if (const uint8_t* bytes = HostBytes(labels)) {
    for (int64_t t = 0; t < s.batch * s.extra; ++t) {
      const int64_t label = s.Label(bytes, t);
      if (!s.Ignores(label) && !s.IsClass(label)) {
        return InvalidInput("{}: label {} (target {}) is outside [0, {})", a.kernel().op(), label,
                            t, s.classes);
      }
    }
  }
  return s;
}

StatusOr<LossParams> ForwardLossOf(const KernelArgs& a, const DevCtx& ctx) {
  A8_RETURN_IF_ERROR(CheckRank(a, a.in(0), "input 0", 2));
  LossParams p;
  A8_ASSIGN_OR_RETURN(p.shape, LossShapeOf(a, a.in(0).dims, 1));
  p.shape.err = ErrOf(ctx);
  p.scores = a.in(0).data;
  p.labels = a.in(1).data;
  p.weights = a.in_data(2);
  p.loss = a.out(0).data;
  return p;
}

Status RunSoftmaxCrossEntropy(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(LossParams p, ForwardLossOf(a, ctx));
  p.log_prob = a.out_data(1);
  return FromDev(SoftmaxCrossEntropyLoss(ctx, p));
}

Status RunNll(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(LossParams p, ForwardLossOf(a, ctx));
  return FromDev(NegativeLogLikelihoodLoss(ctx, p));
}

// a8.SoftmaxCrossEntropyLossGrad(dloss, scores, labels, weights?) -> dscores (kScores) and
// a8.NegativeLogLikelihoodLossGrad(dloss, labels, weights?) -> dinput: one decode, the operands
// after dloss shifted by the scores.
template <bool kScores>
Status RunClassLossGrad(const KernelArgs& a, DevCtx& ctx) {
  constexpr int kLabels = kScores ? 2 : 1;
  LossGradParams p;
  A8_ASSIGN_OR_RETURN(p.shape, LossShapeOf(a, kScores ? a.in(1).dims : a.out(0).dims, kLabels));
  p.shape.err = ErrOf(ctx);
  p.dloss = a.in(0).data;
  if (kScores) p.scores = a.in(1).data;
  p.labels = a.in(kLabels).data;
  p.weights = a.in_data(kLabels + 1);
  p.dscores = a.out(0).data;
  return FromDev(kScores ? SoftmaxCrossEntropyLossGrad(ctx, p)
                         : NegativeLogLikelihoodLossGrad(ctx, p));
}

template <DevPairLoss kKind>
Status RunPairLoss(const KernelArgs& a, DevCtx& ctx) {
  if (a.in(0).count() != a.in(1).count()) {
    return InvalidInput("{}: pred and target sizes differ", a.kernel().op());
  }
  PairLossParams p;
  p.kind = kKind;
  p.dtype = a.in(0).dtype;
  p.n = a.in(0).count();
  p.pred = a.in(0).data;
  p.target = a.in(1).data;
  p.loss = a.out(0).data;
  return FromDev(PairLossForward(ctx, p));
}

template <DevPairLoss kKind>
Status RunPairLossGrad(const KernelArgs& a, DevCtx& ctx) {
  if (a.in(1).count() != a.in(2).count() || a.in(0).count() != 1) {
    return InvalidInput("{}: pred and target sizes differ, or dloss is not a scalar",
                        a.kernel().op());
  }
  PairLossParams p;
  p.kind = kKind;
  p.dtype = a.in(1).dtype;
  p.n = a.in(1).count();
  p.dloss = a.in(0).data;
  p.pred = a.in(1).data;
  p.target = a.in(2).data;
  p.dpred = a.out_data(0);
  p.dtarget = a.out_data(1);
  return FromDev(PairLossGrad(ctx, p));
}

// ---- optimizer operands (ops_optim.cc's checks)

Status RunTrainControl(const KernelArgs& a, DevCtx& ctx) {
  TrainControlParams p;
  A8_ASSIGN_OR_RETURN(p.math, TrainControlOperands(a));
  p.step = reinterpret_cast<const int64_t*>(a.in(0).data);
  p.updates = reinterpret_cast<const float*>(a.in(1).data);
  if (a.has_in(2)) p.sq_norm = reinterpret_cast<const float*>(a.in(2).data);
  if (a.has_in(3)) p.found_inf = reinterpret_cast<const float*>(a.in(3).data);
  p.ctl = reinterpret_cast<float*>(a.out(0).data);
  p.step_next = reinterpret_cast<int64_t*>(a.out(1).data);
  p.updates_next = reinterpret_cast<float*>(a.out(2).data);
  return FromDev(TrainControl(ctx, p));
}

Status RunGradAccumulate(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(RequireSameCount(a, a.in(1), a.in(0), "g"));
  A8_RETURN_IF_ERROR(RequireSameCount(a, a.out(0), a.in(0), "acc_next"));
  A8_RETURN_IF_ERROR(RequireScalar(a, 2, DType::kI64, "step"));
  GradAccumulateParams p;
  p.accumulate = a.Int("accumulate");
  if (p.accumulate < 1) {
    return InvalidInput("a8.GradAccumulate: accumulate must be at least 1, got {}", p.accumulate);
  }
  p.acc_dtype = a.in(0).dtype;
  p.g_dtype = a.in(1).dtype;
  p.n = a.in(0).count();
  p.step = reinterpret_cast<const int64_t*>(a.in(2).data);
  p.acc = a.in(0).data;
  p.g = a.in(1).data;
  p.acc_next = a.out(0).data;
  return FromDev(GradAccumulate(ctx, p));
}

// The operands a8.SgdUpdate and a8.AdamUpdate share: (param, grad, ctl, ...) -> (param_next,
// ...), with the attributes `math`.
template <typename Math>
void SetUpdateOperands(const KernelArgs& a, const Math& math, ParamUpdateOperands<Math>* p) {
  const TensorArg& param = a.in(0);
  p->math = math;
  p->param_dtype = param.dtype;
  p->grad_dtype = a.in(1).dtype;
  p->n = param.count();
  p->ctl = reinterpret_cast<const float*>(a.in(2).data);
  p->param = param.data;
  p->grad = a.in(1).data;
  p->param_next = a.out(0).data;
}

Status RunSgdUpdate(const KernelArgs& a, DevCtx& ctx) {
  SgdUpdateParams p;
  A8_ASSIGN_OR_RETURN(const cpu::SgdParams math, SgdUpdateOperands(a));
  SetUpdateOperands(a, math, &p);
  const bool has_buf = a.has_in(3);
  p.buf = has_buf ? a.in(3).data : nullptr;
  p.buf_next = has_buf ? a.out(1).data : nullptr;
  return FromDev(SgdUpdate(ctx, p));
}

Status RunAdamUpdate(const KernelArgs& a, DevCtx& ctx) {
  AdamUpdateParams p;
  A8_ASSIGN_OR_RETURN(const cpu::AdamParams math, AdamUpdateOperands(a));
  SetUpdateOperands(a, math, &p);
  p.m = a.in(3).data;
  p.v = a.in(4).data;
  p.m_next = a.out(1).data;
  p.v_next = a.out(2).data;
  p.scale = reinterpret_cast<const float*>(a.in_data(5));
  p.copy = a.out_data(3);
  if (p.copy != nullptr) p.copy_dtype = a.out(3).dtype;
  return FromDev(AdamUpdate(ctx, p));
}

// ---- loss scaling

Status RunUnscaleCheckFinite(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(const int n, UnscaleCheckFiniteOperands(a));
  std::vector<UnscaleTensor> tensors;
  for (int i = 0; i < n; ++i) {
    const TensorArg& g = a.in(1 + i);
    tensors.push_back({g.dtype, g.count(), g.data, reinterpret_cast<float*>(a.out(i).data)});
  }
  const TensorArg& found = a.out(n);
  UnscaleParams p;
  p.scale = reinterpret_cast<const float*>(a.in(0).data);
  p.tensors = tensors.data();
  p.num_tensors = n;
  p.found_inf = reinterpret_cast<float*>(found.data);
  return FromDev(UnscaleCheckFinite(ctx, p));
}

Status RunCheckFinite(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(const TensorList l, FloatsToScalarOperands(a));
  std::vector<UnscaleTensor> tensors;
  for (size_t i = 0; i < l.dtypes.size(); ++i) {
    tensors.push_back({l.dtypes[i], l.counts[i], l.data[i], nullptr});  // check only
  }
  UnscaleParams p;
  p.tensors = tensors.data();
  p.num_tensors = static_cast<int>(tensors.size());
  p.found_inf = reinterpret_cast<float*>(a.out(0).data);
  return FromDev(UnscaleCheckFinite(ctx, p));
}

Status RunUpdateScale(const KernelArgs& a, DevCtx& ctx) {
  UpdateScaleParams p;
  A8_ASSIGN_OR_RETURN(p.math, UpdateScaleOperands(a));
  p.scale = reinterpret_cast<const float*>(a.in(0).data);
  p.tracker = reinterpret_cast<const int32_t*>(a.in(1).data);
  p.found_inf = reinterpret_cast<const float*>(a.in(2).data);
  p.step = reinterpret_cast<const int64_t*>(a.in(3).data);
  p.scale_next = reinterpret_cast<float*>(a.out(0).data);
  p.tracker_next = reinterpret_cast<int32_t*>(a.out(1).data);
  return FromDev(UpdateScale(ctx, p));
}

// ---- ai.onnx.preview.training: (R, T, X_1..X_n, G_1..G_n, state groups) -> (X_new.., states..)

// Checks the group layout (CheckOnnxOptimizerOperands) and launches one update per tensor.
Status RunOnnxOptimizer(const KernelArgs& a, DevCtx& ctx, OnnxOptimParams p, int groups) {
  A8_RETURN_IF_ERROR(CheckOnnxOptimizerOperands(a, groups));
  const std::string& op = a.kernel().op();
  const int tensors = a.num_inputs() - 2;
  const TensorArg& r = a.in(0);
  p.r_f64 = r.dtype == DType::kF64;
  p.r = r.data;
  p.t = reinterpret_cast<const int64_t*>(a.in(1).data);
  const int n = tensors / groups;
  for (int i = 0; i < n; ++i) {
    std::vector<const TensorArg*> ins, outs;
    for (int g = 0; g < groups; ++g) ins.push_back(&a.in(2 + g * n + i));
    for (int g = 0; g < groups - 1; ++g) outs.push_back(&a.out(g * n + i));
    if (ins[0]->dtype != DType::kF32 && ins[0]->dtype != DType::kF64) {
      return Unsupported("{}: group member {} has dtype {} (f32 or f64 expected)", op, i,
                         DTypeName(ins[0]->dtype));
    }
    p.dtype = ins[0]->dtype;
    p.n = ins[0]->count();
    p.x = ins[0]->data;
    p.g = ins[1]->data;
    p.s1 = ins[2]->data;
    p.s2 = groups > 3 ? ins[3]->data : nullptr;
    p.x_new = outs[0]->data;
    p.s1_new = outs[1]->data;
    p.s2_new = groups > 3 ? outs[2]->data : nullptr;
    A8_RETURN_IF_ERROR(FromDev(OnnxOptimizerUpdate(ctx, p)));
  }
  return Status::Ok();
}

// Each optimizer's attributes, their ONNX defaults the members' initializers
// (kernels/common/onnx_optim_params.h).
Status RunOnnxAdam(const KernelArgs& a, DevCtx& ctx) {
  OnnxOptimParams p;
  p.kind = OnnxOptimizer::kAdam;
  using P = cpu::OnnxAdamParams;
  DecodeAttrs<P>(a,
                 {A8_ATTR(P, alpha), A8_ATTR(P, beta), A8_ATTR(P, epsilon),
                  A8_ATTR(P, norm_coefficient), A8_ATTR(P, norm_coefficient_post)},
                 &p.adam);
  return RunOnnxOptimizer(a, ctx, p, 4);
}

Status RunOnnxMomentum(const KernelArgs& a, DevCtx& ctx) {
  OnnxOptimParams p;
  p.kind = OnnxOptimizer::kMomentum;
  using P = cpu::OnnxMomentumParams;
  DecodeAttrs<P>(a, {A8_ATTR(P, alpha), A8_ATTR(P, beta), A8_ATTR(P, norm_coefficient)},
                 &p.momentum);
  const std::string mode = a.Str("mode", "standard");
  if (mode != "standard" && mode != "nesterov") {
    return InvalidInput("{}: mode: unknown value '{}'", a.kernel().op(), mode);
  }
  p.momentum.nesterov = mode == "nesterov";
  return RunOnnxOptimizer(a, ctx, p, 3);
}

Status RunOnnxAdagrad(const KernelArgs& a, DevCtx& ctx) {
  OnnxOptimParams p;
  p.kind = OnnxOptimizer::kAdagrad;
  using P = cpu::OnnxAdagradParams;
  DecodeAttrs<P>(a, {A8_ATTR(P, decay_factor), A8_ATTR(P, epsilon), A8_ATTR(P, norm_coefficient)},
                 &p.adagrad);
  return RunOnnxOptimizer(a, ctx, p, 3);
}

}  // namespace

std::vector<DevKernelEntry> DeviceLossOptimOps() {
  static const std::vector<DType> kOnnxFloat = {DType::kF32, DType::kF64};
  const char* kRowSum = "labels: i32/i64; one thread per target, the sum in one thread";
  return {
      {"SoftmaxCrossEntropyLoss", kFloatTypes, 0, RunSoftmaxCrossEntropy,
       "labels: i32/i64; log_prob optional; one thread per target"},
      {"NegativeLogLikelihoodLoss", kFloatTypes, 0, RunNll, kRowSum},
      {"a8.SoftmaxCrossEntropyLossGrad", kFloatTypes, 0, RunClassLossGrad<true>,
       "labels: i32/i64; one thread per target"},
      {"a8.NegativeLogLikelihoodLossGrad", kFloatTypes, 0, RunClassLossGrad<false>,
       "labels: i32/i64"},
      {"a8.MseLoss", kFloatTypes, 0, RunPairLoss<DevPairLoss::kMse>,
       "the sum in one thread (CPU order)"},
      {"a8.L1Loss", kFloatTypes, 0, RunPairLoss<DevPairLoss::kL1>,
       "the sum in one thread (CPU order)"},
      {"a8.BceWithLogitsLoss", kFloatTypes, 0, RunPairLoss<DevPairLoss::kBceWithLogits>,
       "the sum in one thread (CPU order)"},
      {"a8.MseLossGrad", kFloatTypes, 0, RunPairLossGrad<DevPairLoss::kMse>, ""},
      {"a8.L1LossGrad", kFloatTypes, 0, RunPairLossGrad<DevPairLoss::kL1>, ""},
      {"a8.BceWithLogitsLossGrad", kFloatTypes, 0, RunPairLossGrad<DevPairLoss::kBceWithLogits>,
       ""},
      {"a8.TrainControl",
       {DType::kI64},
       0,
       RunTrainControl,
       "updates, sq_norm, found_inf, ctl: f32; one thread"},
      {"a8.GradAccumulate", kFloatTypes, 0, RunGradAccumulate, "g: any float"},
      {"a8.SgdUpdate", kFloatTypes, 0, RunSgdUpdate,
       "grad: any float; in place ok; skips on ctl[applied] = 0"},
      {"a8.AdamUpdate", kFloatTypes, 0, RunAdamUpdate,
       "grad: any float; in place ok; skips on ctl[applied] = 0; scale: unscales the grad; "
       "copy_next: f16/bf16"},
      {"a8.UnscaleCheckFinite", kFloatTypes, 1, RunUnscaleCheckFinite,
       "scale and outputs: f32; in place ok; one launch per tensor"},
      {"a8.CheckFinite", kFloatTypes, 0, RunCheckFinite, "found_inf: f32; one launch per tensor"},
      {"a8.UpdateScale", {DType::kF32}, 0, RunUpdateScale, "tracker: i32, step: i64"},
      {"ai.onnx.preview.training.Adam", kOnnxFloat, 2, RunOnnxAdam, "R: f32/f64"},
      {"ai.onnx.preview.training.Momentum", kOnnxFloat, 2, RunOnnxMomentum, "R: f32/f64"},
      {"ai.onnx.preview.training.Adagrad", kOnnxFloat, 2, RunOnnxAdagrad, "R: f32/f64"},
  };
}

}  // namespace a8::A8_DEV_NS

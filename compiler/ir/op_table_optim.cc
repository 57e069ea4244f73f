// Internal ops (domain "a8", see op_table_builder.h): the training step's control and the optimizer
// updates that build-training emits (passes/autodiff/build_training.h), with their shape rules.
// Kernels: kernels/cpu/optim.h.
//
// - a8.TrainControl(step i64[], updates f32[] [, sq_norm f32[]] [, found_inf f32[]]) -> (ctl
//   f32[5], step_next i64[], updates_next f32[]): the learning rate of the schedule, the gradient
//   scale (1/accumulate times the clip factor), whether this step applies, the update count and the
//   gradient norm (kernels/cpu/optim.h CtlIndex).
// - a8.GlobalNormSq(g_1, ..., g_n) -> f32[]: the sum of squares of every element.
// - a8.GradAccumulate(acc, g, step i64[]) -> acc_next: a sum restarted every `accumulate` steps.
// - a8.SgdUpdate(param, grad, ctl [, momentum_buf]) -> (param_next [, momentum_buf_next]) and
//   a8.AdamUpdate(param, grad, ctl, m, v [, scale f32[]]) -> (param_next, m_next, v_next [,
//   copy_next]): PyTorch's SGD (momentum, dampening, Nesterov, weight decay) and Adam/AdamW. Adam's
//   scale, when present, is the loss scale: the gradient is unscaled first as
//   a8.UnscaleCheckFinite would have stored it; copy_next, present when the attribute copy_to is
//   an ONNX element type (10 f16, 16 bf16; 0: none), is param_next rounded to it, the working copy
//   of an f32 parameter (both folded in by fuse-optimizer, passes/fusion/fuse_optimizer.h).
// - a8.UnscaleCheckFinite(scale f32[], g_1, ..., g_n) -> (g_1' f32, ..., g_n' f32, found_inf
//   f32[]): the gradients times 1/scale, and whether any element was Inf/NaN (dynamic loss
//   scaling, passes/mixed_precision/loss_scaling.h).
// - a8.CheckFinite(g_1, ..., g_n) -> found_inf f32[]: the same flag alone, where every reader of
//   the gradients unscales them itself (fuse-optimizer).
// - a8.UpdateScale(scale f32[], tracker i32[], found_inf f32[], step i64[]) -> (scale_next,
//   tracker_next): PyTorch's _amp_update_scale_ on update steps.
#include <fmt/format.h>

#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"
#include "kernels/common/optim_math.h"

namespace a8 {
namespace {

// The length of a8.TrainControl's control vector (kernels/cpu/optim.h kCtlSize).
constexpr int64_t kCtlLength = 5;

const TensorType kF32Scalar{DType::kF32, {}};
const TensorType kI64Scalar{DType::kI64, {}};

// Input `i` has exactly type `want`.
Status RequireType(const OpNode& node, int i, std::string_view name, const TensorType& want) {
  const TensorType& t = node.input(i)->type();
  if (t != want) {
    return InvalidInput("{}: input '{}' must be {}, got {}", node.Where(), name, want.ToString(),
                        t.ToString());
  }
  return Status::Ok();
}

// Input `i` is a float tensor with the shape of input `like` (its dtype may differ: gradients may
// be f16/bf16 for f32 parameters).
Status RequireFloatLike(const OpNode& node, int i, std::string_view name, int like) {
  A8_RETURN_IF_ERROR(RequireFloat(node, i, name));
  if (node.input(i)->dims() != node.input(like)->dims()) {
    return InvalidInput("{}: input '{}' {} must have the shape of input {} {}", node.Where(), name,
                        node.input(i)->type().ToString(), like,
                        node.input(like)->type().ToString());
  }
  return Status::Ok();
}

Status RequireNonNegative(const OpNode& node, const char* attr, double v) {
  if (v < 0) {
    return InvalidInput("{}: attribute '{}' must be >= 0, got {}", node.Where(), attr, v);
  }
  return Status::Ok();
}

Status InferTrainControl(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireType(node, 0, "step", kI64Scalar));
  A8_RETURN_IF_ERROR(RequireType(node, 1, "updates", kF32Scalar));
  if (node.has_input(2)) A8_RETURN_IF_ERROR(RequireType(node, 2, "sq_norm", kF32Scalar));
  if (node.has_input(3)) A8_RETURN_IF_ERROR(RequireType(node, 3, "found_inf", kF32Scalar));
  const std::string schedule = node.GetString("schedule", "constant");
  if (schedule != "constant" && schedule != "cosine") {
    return InvalidInput("{}: attribute 'schedule' is '{}' (expected constant or cosine)",
                        node.Where(), schedule);
  }
  if (node.GetInt("accumulate", 1) < 1) {
    return InvalidInput("{}: attribute 'accumulate' must be at least 1, got {}", node.Where(),
                        node.GetInt("accumulate", 1));
  }
  A8_RETURN_IF_ERROR(RequireNonNegative(node, "warmup_steps", node.GetInt("warmup_steps", 0)));
  A8_RETURN_IF_ERROR(RequireNonNegative(node, "total_steps", node.GetInt("total_steps", 0)));
  A8_RETURN_IF_ERROR(RequireNonNegative(node, "max_grad_norm", node.GetFloat("max_grad_norm", 0)));
  return SetOutputs(node, out, {TensorType{DType::kF32, {kCtlLength}}, kI64Scalar, kF32Scalar});
}

Status InferGlobalNormSq(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, node.num_inputs()));
  for (int i = 0; i < node.num_inputs(); ++i) {
    A8_RETURN_IF_ERROR(RequireFloat(node, i, node.input(i)->name()));
    // One dtype for all: the kernel catalog row is `T*`.
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, node.input(0)->name(), i, node.input(i)->name()));
  }
  return SetOutputs(node, out, {kF32Scalar});
}

Status InferGradAccumulate(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "acc"));
  A8_RETURN_IF_ERROR(RequireFloatLike(node, 1, "g", 0));
  A8_RETURN_IF_ERROR(RequireType(node, 2, "step", kI64Scalar));
  if (node.GetInt("accumulate", 1) < 1) {
    return InvalidInput("{}: attribute 'accumulate' must be at least 1, got {}", node.Where(),
                        node.GetInt("accumulate", 1));
  }
  return SetOutputs(node, out, {node.input(0)->type()});
}

// The inputs common to the updates: param (0), grad (1), ctl (2).
Status RequireUpdateOperands(const OpNode& node) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "param"));
  A8_RETURN_IF_ERROR(RequireFloatLike(node, 1, "grad", 0));
  return RequireType(node, 2, "ctl", TensorType{DType::kF32, {kCtlLength}});
}

Status InferSgdUpdate(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireUpdateOperands(node));
  const TensorType& param = node.input(0)->type();
  const bool has_buf = node.has_input(3);
  if (has_buf) A8_RETURN_IF_ERROR(RequireType(node, 3, "momentum_buf", param));
  if (node.num_outputs() != (has_buf ? 2 : 1)) {
    return InvalidInput("{}: has {} outputs; expected {} ({})", node.Where(), node.num_outputs(),
                        has_buf ? 2 : 1,
                        has_buf ? "param_next, momentum_buf_next" : "param_next: no momentum_buf");
  }
  if (node.GetFloat("momentum", 0.0f) != 0.0f && !has_buf) {
    return InvalidInput("{}: momentum {} needs the input 'momentum_buf'", node.Where(),
                        node.GetFloat("momentum", 0.0f));
  }
  std::vector<TensorType> types = {param};
  if (has_buf) types.push_back(param);
  return SetOutputs(node, out, std::move(types));
}

Status InferAdamUpdate(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireUpdateOperands(node));
  A8_RETURN_IF_ERROR(RequireInputs(node, 5));
  const TensorType& param = node.input(0)->type();
  A8_RETURN_IF_ERROR(RequireType(node, 3, "m", param));
  A8_RETURN_IF_ERROR(RequireType(node, 4, "v", param));
  if (node.has_input(5)) A8_RETURN_IF_ERROR(RequireType(node, 5, "scale", kF32Scalar));
  std::vector<TensorType> types = {param, param, param};
  const int64_t copy_to = node.GetInt("copy_to", 0);
  if (copy_to != 0) {
    StatusOr<DType> copy = DTypeFromOnnx(static_cast<int>(copy_to));
    if (!copy.ok() || (*copy != DType::kF16 && *copy != DType::kBF16) ||
        param.dtype != DType::kF32) {
      return InvalidInput(
          "{}: attribute 'copy_to' {}: the working copy is f16 (10) or bf16 (16) of an f32 "
          "parameter, here {}",
          node.Where(), copy_to, param.ToString());
    }
    types.push_back(TensorType{*copy, param.dims});
  }
  if (node.num_outputs() != static_cast<int>(types.size())) {
    return InvalidInput("{}: has {} outputs; expected {} (copy_to {})", node.Where(),
                        node.num_outputs(), types.size(), copy_to);
  }
  return SetOutputs(node, out, std::move(types));
}

Status InferUnscaleCheckFinite(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, node.num_inputs()));
  A8_RETURN_IF_ERROR(RequireType(node, 0, "scale", kF32Scalar));
  const int n = node.num_inputs() - 1;
  if (node.num_outputs() != n + 1) {
    return InvalidInput("{}: has {} outputs; expected {} (one per gradient, then found_inf)",
                        node.Where(), node.num_outputs(), n + 1);
  }
  std::vector<TensorType> types;
  for (int i = 1; i <= n; ++i) {
    A8_RETURN_IF_ERROR(RequireFloat(node, i, node.input(i)->name()));
    // One dtype for all: the kernel catalog row is `f32,G*`.
    A8_RETURN_IF_ERROR(RequireSameDType(node, 1, node.input(1)->name(), i, node.input(i)->name()));
    types.push_back(TensorType{DType::kF32, node.input(i)->dims()});
  }
  types.push_back(kF32Scalar);
  return SetOutputs(node, out, std::move(types));
}

Status InferUpdateScale(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 4));
  A8_RETURN_IF_ERROR(RequireType(node, 0, "scale", kF32Scalar));
  A8_RETURN_IF_ERROR(RequireType(node, 1, "tracker", TensorType{DType::kI32, {}}));
  A8_RETURN_IF_ERROR(RequireType(node, 2, "found_inf", kF32Scalar));
  A8_RETURN_IF_ERROR(RequireType(node, 3, "step", kI64Scalar));
  const cpu::UpdateScaleParams d;  // the defaults (op_table_optim.cc declares them from it too)
  if (node.GetInt("growth_interval", d.growth_interval) < 1) {
    return InvalidInput("{}: attribute 'growth_interval' must be at least 1, got {}", node.Where(),
                        node.GetInt("growth_interval", d.growth_interval));
  }
  if (node.GetInt("accumulate", 1) < 1) {
    return InvalidInput("{}: attribute 'accumulate' must be at least 1, got {}", node.Where(),
                        node.GetInt("accumulate", 1));
  }
  A8_RETURN_IF_ERROR(
      RequireNonNegative(node, "min_scale", node.GetFloat("min_scale", d.min_scale)));
  A8_RETURN_IF_ERROR(
      RequireNonNegative(node, "max_scale", node.GetFloat("max_scale", d.max_scale)));
  return SetOutputs(node, out, {kF32Scalar, TensorType{DType::kI32, {}}});
}

// AllReduceStart(g_1..g_n){bucket, dtype} -> token: starts summing bucket `bucket` across the
// data-parallel ranks (runtime/comm/communicator.h); the token orders the waits after it.
Status InferAllReduceStart(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, node.num_inputs()));
  for (int i = 0; i < node.num_inputs(); ++i) {
    A8_RETURN_IF_ERROR(RequireFloat(node, i, node.input(i)->name()));
  }
  if (node.GetInt("bucket", -1) < 0) {
    return InvalidInput("{}: attribute 'bucket' must be a bucket index >= 0", node.Where());
  }
  const std::string wire = node.GetString("dtype", "f32");
  if (wire != "f32" && wire != "f16") {
    return InvalidInput("{}: attribute 'dtype' must be f32 or f16, got '{}'", node.Where(), wire);
  }
  return SetOutputs(node, out, {kF32Scalar});
}

// AllReduceWait(token, g){bucket} -> g averaged over the ranks (same type).
Status InferAllReduceWait(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireType(node, 0, "token", kF32Scalar));
  A8_RETURN_IF_ERROR(RequireFloat(node, 1, "gradient"));
  if (node.GetInt("bucket", -1) < 0) {
    return InvalidInput("{}: attribute 'bucket' must be a bucket index >= 0", node.Where());
  }
  return SetOutputs(node, out, {node.input(1)->type()});
}

}  // namespace

void AddOptimizerOps(std::vector<OpDef>* ops) {
  ops->push_back(InternalOp("TrainControl", {2, 4, 3, 3},
                            {Req("lr", AttrKind::kFloat), Opt("schedule", "constant"),
                             Opt("warmup_steps", 0), Opt("total_steps", 0), Opt("min_lr", 0.0f),
                             Opt("accumulate", 1), Opt("max_grad_norm", 0.0f)},
                            InferTrainControl,
                            "step control: (step, updates[, sq_norm][, found_inf]) -> (ctl[5], "
                            "step_next, "
                            "updates_next)"));
  ops->push_back(InternalOp("GlobalNormSq", kVariadic, {}, InferGlobalNormSq,
                            "sum of squares of every element of every input (f32 scalar)"));
  // The gradient (input 1) of the accumulator and the updates: any float type, read as it comes
  // (an f16/bf16 gradient of an f32 master weight).
  ops->push_back(ReadsAnyFloat(
      {1}, InternalOp("GradAccumulate", {3, 3, 1, 1}, {Opt("accumulate", 1)}, InferGradAccumulate,
                      "(acc, g, step) -> (step % accumulate == 0 ? 0 : "
                      "acc) + g")));
  const cpu::SgdParams sgd;  // its attribute defaults: the kernel's (optim_math.h)
  ops->push_back(ReadsAnyFloat(
      {1},
      InternalOp("SgdUpdate", {3, 4, 1, 2},
                 {Opt("momentum", sgd.momentum), Opt("dampening", sgd.dampening),
                  Opt("nesterov", sgd.nesterov ? 1 : 0), Opt("weight_decay", sgd.weight_decay)},
                 InferSgdUpdate,
                 "PyTorch SGD: (param, grad, ctl[, momentum_buf]) -> (param_next[, "
                 "momentum_buf_next])")));
  const cpu::AdamParams adam;  // its attribute defaults: the kernel's (train_defaults.h)
  ops->push_back(ReadsAnyFloat(
      {1},
      InternalOp(
          "AdamUpdate", {5, 6, 3, 4},
          {Opt("beta1", adam.beta1), Opt("beta2", adam.beta2), Opt("eps", adam.eps),
           Opt("weight_decay", adam.weight_decay), Opt("decoupled", 0), Opt("copy_to", int64_t{0})},
          InferAdamUpdate,
          "PyTorch Adam/AdamW: (param, grad, ctl, m, v[, scale]) -> (param_next, m_next, "
          "v_next[, copy_next]); scale: the gradient is unscaled first; copy_to: "
          "copy_next is param_next as that type")));
  ops->push_back(
      InternalOp("AllReduceStart", {1, kMany, 1, 1},
                 {Req("bucket", AttrKind::kInt), Opt("dtype", "f32"), Opt("every", int64_t{1})},
                 InferAllReduceStart,
                 "data parallel: (g_1..g_n) -> token; starts the sum of gradient bucket "
                 "`bucket` across ranks (dtype: f32 or f16 on the wire); with every=k "
                 "only on steps s with (s + 1) % k == 0 (the update steps of "
                 "--accumulate=k: the g are the accumulated gradients)"));
  ops->push_back(InternalOp("AllReduceWait", {2, 2, 1, 1},
                            {Req("bucket", AttrKind::kInt), Opt("every", int64_t{1})},
                            InferAllReduceWait,
                            "data parallel: (token, g) -> g averaged over the ranks, once bucket "
                            "`bucket` has arrived (every: as AllReduceStart's; other steps copy "
                            "g)"));
  ops->push_back(InternalOp("UnscaleCheckFinite", {2, kMany, 2, kMany}, {}, InferUnscaleCheckFinite,
                            "(scale, g_1..g_n) -> (g_1 / scale..g_n / scale as f32, found_inf: 1 "
                            "when any element is Inf/NaN)"));
  // Its rule is GlobalNormSq's: float inputs of one dtype, one f32 scalar out.
  ops->push_back(InternalOp("CheckFinite", kVariadic, {}, InferGlobalNormSq,
                            "(g_1..g_n) -> found_inf: 1 when any element is Inf/NaN (the "
                            "updates unscale the gradients themselves)"));
  const cpu::UpdateScaleParams scaler;  // its attribute defaults: the kernel's (optim_math.h)
  ops->push_back(InternalOp(
      "UpdateScale", {4, 4, 2, 2},
      {Opt("growth_factor", scaler.growth_factor), Opt("backoff_factor", scaler.backoff_factor),
       Opt("growth_interval", scaler.growth_interval), Opt("min_scale", scaler.min_scale),
       Opt("max_scale", scaler.max_scale), Opt("accumulate", scaler.accumulate)},
      InferUpdateScale,
      "PyTorch's _amp_update_scale_: (scale, tracker, found_inf, step) -> "
      "(scale_next, tracker_next)"));
}

}  // namespace a8

// Internal ops (domain "a8") of the NN gradients and a800c's own losses, with their shape rules
// (see op_table_builder.h). build-training emits them (passes/autodiff/grad_rules_nn.cc); the
// kernels are kernels/cpu/grad_conv_pool.h (convolution, pooling) and the shared bodies of
// kernels/device (the rest). Window attributes are explicit (pads resolved, no auto_pad):
// the rules copy them from the forward node.
#include <fmt/format.h>

#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

// The first node.num_outputs() of `types`: the node may leave trailing optional outputs out.
Status SetLeading(const OpNode& node, std::vector<TensorType>* out, std::vector<TensorType> types) {
  if (node.num_outputs() > static_cast<int>(types.size())) {
    return InvalidInput("{}: has {} outputs, at most {} expected", node.Where(), node.num_outputs(),
                        types.size());
  }
  types.resize(static_cast<size_t>(node.num_outputs()));
  return SetOutputs(node, out, std::move(types));
}

Status RequireSameDims(const OpNode& node, int a, std::string_view name_a, int b,
                       std::string_view name_b) {
  if (node.input(a)->dims() != node.input(b)->dims()) {
    return InvalidInput("{}: inputs '{}' {} and '{}' {} must have the same shape", node.Where(),
                        name_a, node.input(a)->type().ToString(), name_b,
                        node.input(b)->type().ToString());
  }
  return Status::Ok();
}

// Inputs a (float) and b of one dtype and the same dims: a gradient and the value it is of.
Status RequireFloatPair(const OpNode& node, int a, std::string_view name_a, int b,
                        std::string_view name_b) {
  A8_RETURN_IF_ERROR(RequireFloat(node, a, name_a));
  A8_RETURN_IF_ERROR(RequireSameDType(node, a, name_a, b, name_b));
  return RequireSameDims(node, a, name_a, b, name_b);
}

Status RequireMinRank(const OpNode& node, int i, std::string_view name, int64_t rank) {
  if (node.input(i)->type().rank() < rank) {
    return InvalidInput("{}: input '{}' must have rank >= {}, got {}", node.Where(), name, rank,
                        node.input(i)->type().ToString());
  }
  return Status::Ok();
}

// The operands (dy, x, ...) of a conv or pool gradient: dy float, x of its dtype and rank >= 3.
Status RequireDyAndSpatialX(const OpNode& node) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dy"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "dy", 1, "x"));
  return RequireMinRank(node, 1, "x", 3);
}

// dy [N, M, out...] and x [N, C, in...] -> dW [M, C / group, kernel_shape...].
Status InferConvGradFilter(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireDyAndSpatialX(node));
  const std::vector<int64_t>& x = node.input(1)->dims();
  const std::vector<int64_t>& dy = node.input(0)->dims();
  const std::vector<int64_t> kernel = node.GetInts("kernel_shape");
  const int64_t group = node.GetInt("group", 1);
  if (dy.size() != x.size() || dy[0] != x[0] || kernel.size() + 2 != x.size() || group < 1 ||
      x[1] % group != 0 || dy[1] % group != 0) {
    return InvalidInput("{}: 'dy' {}, 'x' {}, kernel_shape {} and group {} do not agree",
                        node.Where(), node.input(0)->type().ToString(),
                        node.input(1)->type().ToString(), DimsString(kernel), group);
  }
  std::vector<int64_t> dims = {dy[1], x[1] / group};
  dims.insert(dims.end(), kernel.begin(), kernel.end());
  return SetOutputs(node, out, {{node.input(0)->dtype(), dims}});
}

// MaxPoolGrad(dy, x) -> dx like x.
Status InferMaxPoolGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireDyAndSpatialX(node));
  const std::vector<int64_t>& x = node.input(1)->dims();
  const std::vector<int64_t>& dy = node.input(0)->dims();
  if (dy.size() != x.size() || dy[0] != x[0] || dy[1] != x[1]) {
    return InvalidInput("{}: 'dy' {} does not pool 'x' {}", node.Where(),
                        node.input(0)->type().ToString(), node.input(1)->type().ToString());
  }
  return SetOutputs(node, out, {node.input(1)->type()});
}

// AveragePoolGrad(dy){x_shape} -> dx [x_shape].
Status InferAveragePoolGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dy"));
  const std::vector<int64_t> x = node.GetInts("x_shape");
  const std::vector<int64_t>& dy = node.input(0)->dims();
  if (x.size() < 3 || dy.size() != x.size() || dy[0] != x[0] || dy[1] != x[1]) {
    return InvalidInput("{}: 'dy' {} does not pool x_shape {}", node.Where(),
                        node.input(0)->type().ToString(), DimsString(x));
  }
  return SetOutputs(node, out, {{node.input(0)->dtype(), x}});
}

// BatchNormalizationGrad(dy, x, scale, mean?, var?) -> dx, dscale, dbias[, dmean, dvar].
Status InferBatchNormGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireFloatPair(node, 0, "dy", 1, "x"));
  A8_RETURN_IF_ERROR(RequireMinRank(node, 1, "x", 1));
  A8_RETURN_IF_ERROR(RequireFloat(node, 2, "scale"));
  const std::vector<int64_t>& x = node.input(1)->dims();
  const std::vector<int64_t> channels = {x.size() > 1 ? x[1] : 1};
  if (node.input(2)->dims() != channels) {
    return InvalidInput("{}: 'scale' must be {}, got {}", node.Where(), DimsString(channels),
                        node.input(2)->type().ToString());
  }
  const bool inference = node.has_input(3) && node.has_input(4);
  if (node.has_input(3) != node.has_input(4)) {
    return InvalidInput("{}: 'mean' and 'var' come together", node.Where());
  }
  if (inference) {
    A8_RETURN_IF_ERROR(RequireFloat(node, 3, "mean"));
    A8_RETURN_IF_ERROR(RequireSameDType(node, 3, "mean", 4, "var"));
    if (node.input(3)->dims() != channels || node.input(4)->dims() != channels) {
      return InvalidInput("{}: 'mean' and 'var' must be {}", node.Where(), DimsString(channels));
    }
  } else if (node.num_outputs() > 3) {
    return InvalidInput("{}: dmean/dvar need the inference-mode inputs 'mean' and 'var'",
                        node.Where());
  }
  const TensorType param = node.input(2)->type();
  const TensorType stat = inference ? node.input(3)->type() : param;
  return SetLeading(node, out, {node.input(1)->type(), param, param, stat, stat});
}

// LayerNormalizationGrad(dy, x, scale, mean?, inv_std_dev?){axis} -> dx, dscale, dbias; the
// parameter gradients have the full normalized shape x[axis:] (the rule sums them to a broadcast
// Scale's shape).
Status InferLayerNormGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireFloatPair(node, 0, "dy", 1, "x"));
  A8_RETURN_IF_ERROR(RequireFloat(node, 2, "scale"));
  const TensorType& x = node.input(1)->type();
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", -1), x.rank()));
  const std::vector<int64_t> normalized(x.dims.begin() + axis, x.dims.end());
  if (!BroadcastsTo(node.input(2)->dims(), normalized)) {
    return InvalidInput("{}: 'scale' {} does not broadcast to the normalized shape {}",
                        node.Where(), node.input(2)->type().ToString(), DimsString(normalized));
  }
  std::vector<int64_t> stat_dims = x.dims;
  std::fill(stat_dims.begin() + axis, stat_dims.end(), 1);
  for (int i = 3; i < 5; ++i) {
    if (!node.has_input(i)) continue;
    A8_RETURN_IF_ERROR(RequireFloat(node, i, i == 3 ? "mean" : "inv_std_dev"));
    if (node.input(i)->dims() != stat_dims) {
      return InvalidInput("{}: input {} must be {}, got {}", node.Where(), i, DimsString(stat_dims),
                          node.input(i)->type().ToString());
    }
  }
  const TensorType param{node.input(2)->dtype(), normalized};
  return SetLeading(node, out, {x, param, param});
}

// InstanceNormalizationGrad(dy, x, scale) -> dx, dscale, dbias.
Status InferInstanceNormGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireFloatPair(node, 0, "dy", 1, "x"));
  A8_RETURN_IF_ERROR(RequireMinRank(node, 1, "x", 3));
  A8_RETURN_IF_ERROR(RequireFloat(node, 2, "scale"));
  if (node.input(2)->dims() != std::vector<int64_t>{node.input(1)->dims()[1]}) {
    return InvalidInput("{}: 'scale' {} must have the channels of 'x' {}", node.Where(),
                        node.input(2)->type().ToString(), node.input(1)->type().ToString());
  }
  return SetLeading(node, out,
                    {node.input(1)->type(), node.input(2)->type(), node.input(2)->type()});
}

// SoftmaxGrad / LogSoftmaxGrad(dy, y){axis} -> dx like y.
Status InferSoftmaxGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireFloatPair(node, 0, "dy", 1, "y"));
  A8_RETURN_IF_ERROR(
      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", -1), node.input(1)->type().rank())
          .status());
  return SetOutputs(node, out, {node.input(0)->type()});
}

// DropoutGrad(dy, mask, ratio?, training_mode?) -> dx like dy.
Status InferDropoutGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dy"));
  if (node.input(1)->dtype() != DType::kBool) {
    return InvalidInput("{}: input 'mask' must be bool, got {}", node.Where(),
                        node.input(1)->type().ToString());
  }
  A8_RETURN_IF_ERROR(RequireSameDims(node, 0, "dy", 1, "mask"));
  A8_RETURN_IF_ERROR(CheckDropoutControls(node, 2));
  return SetOutputs(node, out, {node.input(0)->type()});
}

// The loss gradient's dloss: a scalar for reduction mean/sum, [N, d...] for none.
Status CheckLossGrad(const OpNode& node, int labels, const std::vector<int64_t>& target_dims) {
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dloss"));
  const DType lt = node.input(labels)->dtype();
  if (lt != DType::kI64 && lt != DType::kI32) {
    return InvalidInput("{}: labels must be i32 or i64, got {}", node.Where(),
                        node.input(labels)->type().ToString());
  }
  const std::string reduction = node.GetString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return InvalidInput("{}: attribute 'reduction' is '{}' (none, sum or mean)", node.Where(),
                        reduction);
  }
  const std::vector<int64_t> want = reduction == "none" ? target_dims : std::vector<int64_t>{};
  if (node.input(0)->dims() != want) {
    return InvalidInput("{}: 'dloss' must be {} for reduction={}, got {}", node.Where(),
                        DimsString(want), reduction, node.input(0)->type().ToString());
  }
  return Status::Ok();
}

Status CheckClassWeights(const OpNode& node, int i, int64_t classes) {
  if (!node.has_input(i)) return Status::Ok();
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "dloss", i, "weights"));
  if (node.input(i)->dims() != std::vector<int64_t>{classes}) {
    return InvalidInput("{}: 'weights' must be [{}], got {}", node.Where(), classes,
                        node.input(i)->type().ToString());
  }
  return Status::Ok();
}

// SoftmaxCrossEntropyLossGrad(dloss, scores, labels, weights?) -> dscores like scores.
Status InferSceGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "dloss", 1, "scores"));
  A8_RETURN_IF_ERROR(RequireMinRank(node, 1, "scores", 2));
  std::vector<int64_t> targets = node.input(1)->dims();
  const int64_t classes = targets[1];
  targets.erase(targets.begin() + 1);
  if (node.input(2)->dims() != targets) {
    return InvalidInput("{}: 'labels' must be {}, got {}", node.Where(), DimsString(targets),
                        node.input(2)->type().ToString());
  }
  A8_RETURN_IF_ERROR(CheckLossGrad(node, 2, targets));
  A8_RETURN_IF_ERROR(CheckClassWeights(node, 3, classes));
  return SetOutputs(node, out, {node.input(1)->type()});
}

// NegativeLogLikelihoodLossGrad(dloss, labels, weights?){classes} -> dinput [N, classes, d...].
Status InferNllGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireMinRank(node, 1, "labels", 1));
  const int64_t classes = node.GetInt("classes", 0);
  if (classes < 1) {
    return InvalidInput("{}: attribute 'classes' must be positive, got {}", node.Where(), classes);
  }
  const std::vector<int64_t>& targets = node.input(1)->dims();
  A8_RETURN_IF_ERROR(CheckLossGrad(node, 1, targets));
  A8_RETURN_IF_ERROR(CheckClassWeights(node, 2, classes));
  std::vector<int64_t> dims = targets;
  dims.insert(dims.begin() + 1, classes);
  return SetOutputs(node, out, {{node.input(0)->dtype(), dims}});
}

// MseLoss / L1Loss / BceWithLogitsLoss(pred, target) -> a scalar of their dtype.
Status InferPairLoss(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireFloatPair(node, 0, "pred", 1, "target"));
  return SetOutputs(node, out, {{node.input(0)->dtype(), {}}});
}

// *LossGrad(dloss, pred, target) -> dpred[, dtarget].
Status InferPairLossGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireFloat(node, 1, "pred"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "dloss", 1, "pred"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 1, "pred", 2, "target"));
  A8_RETURN_IF_ERROR(RequireSameDims(node, 1, "pred", 2, "target"));
  A8_RETURN_IF_ERROR(RequireRank(node, 0, "dloss", 0));
  return SetLeading(node, out, {node.input(1)->type(), node.input(2)->type()});
}

std::vector<AttrSpec> WindowAttrs() {
  return {OptNoDefault("dilations", AttrKind::kInts), Req("kernel_shape", AttrKind::kInts),
          OptNoDefault("pads", AttrKind::kInts), OptNoDefault("strides", AttrKind::kInts)};
}

std::vector<AttrSpec> With(std::vector<AttrSpec> a, std::vector<AttrSpec> more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

}  // namespace

void AddGradNnOps(std::vector<OpDef>* ops) {
  auto add = [&](OpDef op) { ops->push_back(std::move(op)); };
  add(Multiplies({0, 1},
                 InternalOp("ConvGradFilter", {2, 2, 1, 1}, With(WindowAttrs(), {Opt("group", 1)}),
                            InferConvGradFilter, "Conv's dW from (dY, X): im2col + GEMM")));
  add(InternalOp("MaxPoolGrad", {2, 2, 1, 1},
                 With(WindowAttrs(), {Opt("ceil_mode", 0), Opt("storage_order", 0)}),
                 InferMaxPoolGrad, "MaxPool's dX from (dY, X): dY to each window's first max"));
  add(InternalOp("AveragePoolGrad", {1, 1, 1, 1},
                 With(WindowAttrs(), {Opt("ceil_mode", 0), Opt("count_include_pad", 0),
                                      Req("x_shape", AttrKind::kInts)}),
                 InferAveragePoolGrad, "AveragePool's dX from dY"));
  add(WithLowEdges({0, 1}, InternalOp("BatchNormalizationGrad", {3, 5, 3, 5},
                                      {Opt("epsilon", 1e-5f)}, InferBatchNormGrad,
                                      "BatchNormalization's dX, dscale, dbias (batch statistics; "
                                      "with mean, var: inference mode, also dmean, dvar)")));
  add(WithLowEdges(
      {0, 1}, InternalOp("LayerNormalizationGrad", {3, 5, 3, 3},
                         {Opt("axis", -1), Opt("epsilon", 1e-5f)}, InferLayerNormGrad,
                         "LayerNormalization's dX, dscale, dbias (Mean, InvStdDev optional)")));
  add(InternalOp("InstanceNormalizationGrad", {3, 3, 3, 3}, {Opt("epsilon", 1e-5f)},
                 InferInstanceNormGrad, "InstanceNormalization's dX, dscale, dbias"));
  add(InternalOp("SoftmaxGrad", kBinary, {Opt("axis", -1)}, InferSoftmaxGrad,
                 "Softmax's dX from (dY, Y): Y * (dY - sum(dY * Y))"));
  add(InternalOp("LogSoftmaxGrad", kBinary, {Opt("axis", -1)}, InferSoftmaxGrad,
                 "LogSoftmax's dX from (dY, Y): dY - exp(Y) * sum(dY)"));
  add(InternalOp("DropoutGrad", {2, 4, 1, 1}, {}, InferDropoutGrad,
                 "Dropout's dX: dY * mask / (1 - ratio) in training mode"));
  const std::vector<AttrSpec> loss_attrs = {OptNoDefault("ignore_index", AttrKind::kInt),
                                            Opt("reduction", "mean")};
  add(InternalOp("SoftmaxCrossEntropyLossGrad", {3, 4, 1, 1}, loss_attrs, InferSceGrad,
                 "SoftmaxCrossEntropyLoss's d(scores) from (dloss, scores, "
                 "labels, weights?)"));
  add(InternalOp("NegativeLogLikelihoodLossGrad", {2, 3, 1, 1},
                 With(loss_attrs, {Req("classes", AttrKind::kInt)}), InferNllGrad,
                 "NegativeLogLikelihoodLoss's d(input) from (dloss, labels, weights?)"));
  add(InternalOp("MseLoss", kBinary, {}, InferPairLoss, "mean((pred - target)^2)"));
  add(InternalOp("L1Loss", kBinary, {}, InferPairLoss, "mean(|pred - target|)"));
  add(InternalOp("BceWithLogitsLoss", kBinary, {}, InferPairLoss,
                 "mean(max(x, 0) - x * t + log(1 + exp(-|x|))), binary "
                 "cross-entropy on logits"));
  for (const char* loss : {"MseLoss", "L1Loss", "BceWithLogitsLoss"}) {
    add(InternalOp(fmt::format("{}Grad", loss), {3, 3, 1, 2}, {}, InferPairLossGrad,
                   fmt::format("d(pred)[, d(target)] of a8.{} from (dloss, pred, target)", loss)));
  }
}

}  // namespace a8

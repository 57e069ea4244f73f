// Gradient rules of the NN ops (see grad_rule.h): convolution, pooling, normalizations,
// Softmax/LogSoftmax, Dropout, the ONNX losses and a800c's own losses (a8.MseLoss, a8.L1Loss,
// a8.BceWithLogitsLoss). The math lives in the internal ops of compiler/ir/op_table_grad_nn.cc
// (kernels: kernels/cpu/grad_conv_pool.h for convolution and pooling, kernels/device for the
// rest); a rule only picks operands and attributes.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/ir/shape_rules.h"
#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/grad_rules_input0.h"

namespace a8 {
namespace {

using Attrs = std::map<std::string, Attribute>;

// The window attributes of a Conv / pooling node made explicit (auto_pad resolved into pads, as the
// shape rules and lowering resolve it), for the gradient ops, which take no auto_pad.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads, out;
};

StatusOr<Window> ResolveWindow(const Node& node, const std::vector<int64_t>& kernel) {
  const std::vector<int64_t>& x = node.input(0)->dims();
  const std::vector<int64_t>& y = node.output(0)->dims();
  const size_t n = x.size() - 2;
  Window w;
  w.kernel = kernel;
  w.strides = node.GetInts("strides", std::vector<int64_t>(n, 1));
  w.dilations = node.GetInts("dilations", std::vector<int64_t>(n, 1));
  w.pads = node.GetInts("pads", std::vector<int64_t>(2 * n, 0));
  w.out.assign(y.begin() + 2, y.end());
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n ||
      w.pads.size() != 2 * n || w.out.size() != n) {
    return InvalidInput("{}: window attributes do not match {} spatial dims", node.Where(), n);
  }
  const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
  if (!node.has_attr("pads") && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
    SameAutoPads(auto_pad == "SAME_UPPER", /*transpose=*/false,
                 std::vector<int64_t>(x.begin() + 2, x.end()), w.kernel, w.strides, w.dilations,
                 &w.pads);
  }
  return w;
}

Attrs WindowAttrs(const Window& w) {
  return {{"kernel_shape", Attribute(w.kernel)},
          {"strides", Attribute(w.strides)},
          {"dilations", Attribute(w.dilations)},
          {"pads", Attribute(w.pads)}};
}

std::vector<int64_t> Spatial(const std::vector<int64_t>& dims) {
  return std::vector<int64_t>(dims.begin() + std::min<size_t>(2, dims.size()), dims.end());
}

Status RequireSpatialRank(const Node& node) {
  const size_t rank = node.input(0)->dims().size();
  if (rank < 3 || rank > 5) {
    return Unsupported("{}: the gradient needs 1 to 3 spatial dims, input has rank {}",
                       node.Where(), rank);
  }
  return Status::Ok();
}

// Conv(X, W, B?): dX = ConvTranspose(dY, W) with the forward's window and the output_padding that
// restores X's size, dW = a8.ConvGradFilter(dY, X), dB = ReduceSum(dY) over N and space.
Status ConvGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  Value* dy = ctx.output_grad(0);
  if (dy == nullptr) return Status::Ok();
  A8_RETURN_IF_ERROR(RequireSpatialRank(node));
  const std::vector<int64_t>& x = node.input(0)->dims();
  A8_ASSIGN_OR_RETURN(Window w, ResolveWindow(node, Spatial(node.input(1)->dims())));
  Attrs attrs = WindowAttrs(w);
  attrs["group"] = Attribute(node.GetInt("group", 1));
  if (ctx.needs_grad(0)) {
    const size_t n = w.kernel.size();
    std::vector<int64_t> output_padding(n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
      output_padding[i] =
          x[i + 2] - (w.strides[i] * (w.out[i] - 1) + span - w.pads[i] - w.pads[i + n]);
      if (output_padding[i] < 0 || output_padding[i] >= w.strides[i]) {
        return Internal("{}: inconsistent window for the input gradient (dim {})", node.Where(), i);
      }
    }
    Attrs t = attrs;
    t["output_padding"] = Attribute(output_padding);
    A8_ASSIGN_OR_RETURN(Value * dx, ctx.Emit1("ConvTranspose", {dy, node.input(1)}, t));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(0, dx));
  }
  if (ctx.needs_grad(1)) {
    A8_ASSIGN_OR_RETURN(Value * dw, ctx.Emit1("a8.ConvGradFilter", {dy, node.input(0)}, attrs));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(1, dw));
  }
  if (node.has_input(2) && ctx.needs_grad(2)) {
    std::vector<int64_t> axes = {0};
    for (size_t i = 2; i < x.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    A8_ASSIGN_OR_RETURN(Value * db, ctx.Emit1("ReduceSum", {dy, ctx.ConstInts(axes)},
                                              {{"keepdims", Attribute(0)}}));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(2, db));
  }
  return Status::Ok();
}

// MaxPool (kMax) -> a8.MaxPoolGrad(dy, x); AveragePool -> a8.AveragePoolGrad(dy), which takes
// x's shape and count_include_pad as attributes.
template <bool kMax>
StatusOr<Value*> PoolDx(GradContext& ctx, Value* dy) {
  const Node& node = ctx.node();
  A8_RETURN_IF_ERROR(RequireSpatialRank(node));
  A8_ASSIGN_OR_RETURN(Window w, ResolveWindow(node, node.GetInts("kernel_shape")));
  Attrs attrs = WindowAttrs(w);
  attrs["ceil_mode"] = Attribute(node.GetInt("ceil_mode", 0));
  std::vector<Value*> inputs = {dy};
  if (kMax) {
    inputs.push_back(node.input(0));
  } else {
    attrs["count_include_pad"] = Attribute(node.GetInt("count_include_pad", 0));
    attrs["x_shape"] = Attribute(node.input(0)->dims());
  }
  return ctx.Emit1(kMax ? "a8.MaxPoolGrad" : "a8.AveragePoolGrad", std::move(inputs), attrs);
}

// GlobalAveragePool / GlobalMaxPool: the pooling gradients with one window over all of space.
template <bool kMax>
StatusOr<Value*> GlobalPoolDx(GradContext& ctx, Value* dy) {
  const Node& node = ctx.node();
  A8_RETURN_IF_ERROR(RequireSpatialRank(node));
  const std::vector<int64_t>& x = node.input(0)->dims();
  const std::vector<int64_t> kernel = Spatial(x);
  Attrs attrs = {{"kernel_shape", Attribute(kernel)}};
  if (kMax) return ctx.Emit1("a8.MaxPoolGrad", {dy, node.input(0)}, attrs);
  attrs["x_shape"] = Attribute(x);
  return ctx.Emit1("a8.AveragePoolGrad", {dy}, attrs);
}

// BatchNormalization(X, scale, B, input_mean, input_var). Training mode: the gradient through the
// batch statistics (recomputed from X by the kernel); the running-statistics outputs get none, and
// input_mean/input_var only feed them. Inference mode: the statistics are inputs, and get gradients
// when they need them.
Status BatchNormGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  Value* dy = ctx.output_grad(0);
  if (dy == nullptr) return Status::Ok();
  const bool training = node.GetInt("training_mode", 0) != 0;
  std::vector<Value*> inputs = {dy, node.input(0), node.input(1)};
  int outputs = 3;
  if (!training) {
    inputs.push_back(node.input(3));
    inputs.push_back(node.input(4));
    if (ctx.needs_grad(3) || ctx.needs_grad(4)) outputs = 5;
  }
  A8_ASSIGN_OR_RETURN(std::vector<Value*> g,
                      ctx.Emit("a8.BatchNormalizationGrad", inputs,
                               {{"epsilon", Attribute(node.GetFloat("epsilon", 1e-5f))}}, outputs));
  for (int i = 0; i < outputs; ++i) A8_RETURN_IF_ERROR(ctx.SetInputGrad(i, g[i]));
  return Status::Ok();
}

// LayerNormalization(X, Scale, B?) -> Y, Mean?, InvStdDev?: the kernel reuses the forward's Mean
// and InvStdDev when the node has them (recomputing them otherwise); Scale and B may broadcast to
// the normalized shape, so their gradients are summed to their shapes.
Status LayerNormGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  for (int i = 1; i < node.num_outputs(); ++i) {
    if (ctx.output_grad(i) != nullptr) {
      return Unsupported("{}: no gradient through the Mean / InvStdDev outputs", node.Where());
    }
  }
  Value* dy = ctx.output_grad(0);
  if (dy == nullptr) return Status::Ok();
  std::vector<Value*> inputs = {dy, node.input(0), node.input(1)};
  if (node.num_outputs() == 3) {
    inputs.push_back(node.output(1));
    inputs.push_back(node.output(2));
  }
  A8_ASSIGN_OR_RETURN(std::vector<Value*> g,
                      ctx.Emit("a8.LayerNormalizationGrad", inputs,
                               {{"axis", Attribute(node.GetInt("axis", -1))},
                                {"epsilon", Attribute(node.GetFloat("epsilon", 1e-5f))}},
                               3));
  A8_RETURN_IF_ERROR(ctx.SetInputGrad(0, g[0]));
  for (int i = 1; i <= 2; ++i) {
    if (!node.has_input(i) || !ctx.needs_grad(i)) continue;
    A8_ASSIGN_OR_RETURN(Value * gi, ctx.SumToShape(g[i], node.input(i)->dims()));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(i, gi));
  }
  return Status::Ok();
}

Status InstanceNormGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  Value* dy = ctx.output_grad(0);
  if (dy == nullptr) return Status::Ok();
  A8_ASSIGN_OR_RETURN(std::vector<Value*> g,
                      ctx.Emit("a8.InstanceNormalizationGrad", {dy, node.input(0), node.input(1)},
                               {{"epsilon", Attribute(node.GetFloat("epsilon", 1e-5f))}}, 3));
  for (int i = 0; i < 3; ++i) A8_RETURN_IF_ERROR(ctx.SetInputGrad(i, g[i]));
  return Status::Ok();
}

// Softmax / LogSoftmax (opset 13 form: along one axis) from their output Y.
template <bool kLog>
StatusOr<Value*> SoftmaxDx(GradContext& ctx, Value* dy) {
  const Node& node = ctx.node();
  const int64_t rank = static_cast<int64_t>(node.input(0)->dims().size());
  const bool legacy = node.version() != 0 && node.version() < 13;
  int64_t axis = node.GetInt("axis", legacy ? 1 : -1);
  if (axis < 0) axis += rank;
  if (legacy && axis != rank - 1 && rank > 0) {
    return Unsupported("{}: {}-{} over the flattened dims [{}, {}) has no gradient rule",
                       node.Where(), node.op(), node.version(), axis, rank);
  }
  return ctx.Emit1(kLog ? "a8.LogSoftmaxGrad" : "a8.SoftmaxGrad", {dy, node.output(0)},
                   {{"axis", Attribute(axis)}});
}

// Dropout(data, ratio?, training_mode?) -> output, mask?: identity outside training mode; in
// training mode dX = dY * mask / (1 - ratio), from the mask the forward drew.
StatusOr<Value*> DropoutDx(GradContext& ctx, Value* dy) {
  const Node& node = ctx.node();
  Value* training = node.input(2);
  const bool never_training =
      training == nullptr || (training->is_constant() && training->data()->bytes.size() == 1 &&
                              training->data()->bytes[0] == 0);
  if (never_training) return dy;
  if (node.num_outputs() < 2 || node.output(1)->dtype() != DType::kBool) {
    return InvalidInput(
        "{}: Dropout in training mode needs its bool mask "
        "output for the gradient "
        "(build-training adds one)",
        node.Where());
  }
  return ctx.Emit1("a8.DropoutGrad", {dy, node.output(1), node.input(1), training});
}

Attrs LossAttrs(const Node& node) {
  Attrs attrs = {{"reduction", Attribute(node.GetString("reduction", "mean"))}};
  if (node.has_attr("ignore_index")) {
    attrs["ignore_index"] = Attribute(node.GetInt("ignore_index", 0));
  }
  return attrs;
}

Status NoClassWeightGradient(GradContext& ctx, int i) {
  if (!ctx.node().has_input(i) || !ctx.needs_grad(i)) return Status::Ok();
  return Unsupported(
      "{}: no gradient with respect to the class weights '{}'; "
      "make them a constant or "
      "freeze them",
      ctx.node().Where(), ctx.node().input(i)->name());
}

// SoftmaxCrossEntropyLoss(scores, labels, weights?) -> loss, log_prob?.
Status SoftmaxCrossEntropyLossGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  A8_RETURN_IF_ERROR(NoClassWeightGradient(ctx, 2));
  if (!ctx.needs_grad(0)) return Status::Ok();
  Value* dloss = ctx.output_grad(0);
  Value* dlog_prob = node.num_outputs() > 1 ? ctx.output_grad(1) : nullptr;
  Value* dx = nullptr;
  if (dloss != nullptr) {
    A8_ASSIGN_OR_RETURN(
        dx, ctx.Emit1("a8.SoftmaxCrossEntropyLossGrad",
                      {dloss, node.input(0), node.input(1), node.input(2)}, LossAttrs(node)));
  }
  if (dlog_prob != nullptr) {
    A8_ASSIGN_OR_RETURN(Value * d2, ctx.Emit1("a8.LogSoftmaxGrad", {dlog_prob, node.output(1)},
                                              {{"axis", Attribute(1)}}));
    if (dx == nullptr) {
      dx = d2;
    } else {
      A8_ASSIGN_OR_RETURN(dx, ctx.Emit1("Add", {dx, d2}));
    }
  }
  return dx == nullptr ? Status::Ok() : ctx.SetInputGrad(0, dx);
}

// NegativeLogLikelihoodLoss(input, target, weight?) -> loss.
Status NegativeLogLikelihoodLossGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  A8_RETURN_IF_ERROR(NoClassWeightGradient(ctx, 2));
  Value* dloss = ctx.output_grad(0);
  if (dloss == nullptr || !ctx.needs_grad(0)) return Status::Ok();
  Attrs attrs = LossAttrs(node);
  attrs["classes"] = Attribute(node.input(0)->dims().at(1));
  A8_ASSIGN_OR_RETURN(Value * dx, ctx.Emit1("a8.NegativeLogLikelihoodLossGrad",
                                            {dloss, node.input(1), node.input(2)}, attrs));
  return ctx.SetInputGrad(0, dx);
}

// a8.MseLoss / L1Loss / BceWithLogitsLoss(pred, target): one gradient op gives d(pred) and, when
// the target needs one, d(target).
Status PairLossGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  Value* dloss = ctx.output_grad(0);
  if (dloss == nullptr || (!ctx.needs_grad(0) && !ctx.needs_grad(1))) return Status::Ok();
  const std::string op = fmt::format("a8.{}Grad", node.op());
  A8_ASSIGN_OR_RETURN(std::vector<Value*> g, ctx.Emit(op, {dloss, node.input(0), node.input(1)}, {},
                                                      ctx.needs_grad(1) ? 2 : 1));
  for (size_t i = 0; i < g.size(); ++i) {
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(static_cast<int>(i), g[i]));
  }
  return Status::Ok();
}

}  // namespace

void RegisterNnGradRules(GradRuleTable* t) {
  t->Add("Conv", ConvGrad);
  t->Add("MaxPool", grad::Input0GradIfReached<PoolDx<true>>);
  t->Add("AveragePool", grad::Input0GradIfReached<PoolDx<false>>);
  t->Add("GlobalAveragePool", grad::Input0GradIfReached<GlobalPoolDx<false>>);
  t->Add("GlobalMaxPool", grad::Input0GradIfReached<GlobalPoolDx<true>>);
  t->Add("BatchNormalization", BatchNormGrad);
  t->Add("LayerNormalization", LayerNormGrad);
  t->Add("InstanceNormalization", InstanceNormGrad);
  t->Add("Softmax", grad::Input0GradIfReached<SoftmaxDx<false>>);
  t->Add("LogSoftmax", grad::Input0GradIfReached<SoftmaxDx<true>>);
  t->Add("Dropout", grad::Input0GradIfReached<DropoutDx>);
  t->Add("SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLossGrad);
  t->Add("NegativeLogLikelihoodLoss", NegativeLogLikelihoodLossGrad);
  t->Add("a8.MseLoss", PairLossGrad);
  t->Add("a8.L1Loss", PairLossGrad);
  t->Add("a8.BceWithLogitsLoss", PairLossGrad);
}

}  // namespace a8

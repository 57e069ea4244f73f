// Gradient rules of MaxUnpool and RoiAlign (registered from RegisterMathGradRules in
// grad_rules_math.cc; kernels/device/roi_pool.h).
// MaxUnpool: dX = a8.MaxUnpoolGrad(dy, I), dy gathered where each X element was written (0 for
// one a later element overwrote); I and output_shape get none.
// RoiAlign (mode avg): dX = a8.RoiAlignGrad(X, rois, batch_indices, dy); the rois get no gradient
// (as torchvision's roi_align). Mode max is an error naming the node: the max of weighted pixels
// has no gradient in onnxruntime or torch to follow.
#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/grad_rules_util.h"

namespace a8 {
namespace {

Status GradMaxUnpool(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return Status::Ok();
  const Node& node = ctx.node();
  A8_ASSIGN_OR_RETURN(Value * dy, grad::Dy(ctx));
  const grad::Attrs attrs = grad::IntsAttrsOf(node, {"kernel_shape", "pads", "strides"});
  A8_ASSIGN_OR_RETURN(Value * dx, ctx.Emit1("a8.MaxUnpoolGrad", {dy, node.input(1)}, attrs));
  return ctx.SetInputGrad(0, dx);
}

Status GradRoiAlign(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return Status::Ok();
  const Node& node = ctx.node();
  if (node.GetString("mode", "avg") != "avg") {
    return Unsupported("{}: RoiAlign with mode 'max' is not differentiable (only mode 'avg')",
                       node.Where());
  }
  A8_ASSIGN_OR_RETURN(Value * dy, grad::Dy(ctx));
  std::map<std::string, Attribute> attrs;
  for (const char* name : {"coordinate_transformation_mode", "mode", "output_height",
                           "output_width", "sampling_ratio", "spatial_scale"}) {
    if (const Attribute* a = node.attr(name)) attrs[name] = *a;
  }
  A8_ASSIGN_OR_RETURN(
      Value * dx,
      ctx.Emit1("a8.RoiAlignGrad", {node.input(0), node.input(1), node.input(2), dy}, attrs));
  return ctx.SetInputGrad(0, dx);
}

}  // namespace

void RegisterRoiPoolGradRules(GradRuleTable* t) {
  t->Add("MaxUnpool", GradMaxUnpool);
  t->Add("RoiAlign", GradRoiAlign);
}

}  // namespace a8

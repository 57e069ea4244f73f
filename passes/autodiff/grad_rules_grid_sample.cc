// Gradient rules of GridSample, Col2Im and DeformConv (registered from RegisterMathGradRules in
// grad_rules_math.cc). GridSample:
// one a8.GridSampleGrad (dy, X, grid) -> (dX, dgrid) with the forward node's attributes
// (kernels/device/grid_sample.h). Every mode is differentiated: linear and cubic w.r.t. X and
// grid; nearest w.r.t. X (dy added at the pixel each output read), its dgrid is 0 (the output is
// piecewise constant in the grid), as PyTorch's grid_sampler backward.
#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/grad_rules_util.h"

namespace a8 {
namespace {

Status GradGridSample(GradContext& ctx) {
  if (!ctx.needs_grad(0) && !ctx.needs_grad(1)) return Status::Ok();
  const Node& node = ctx.node();
  A8_ASSIGN_OR_RETURN(Value * dy, grad::Dy(ctx));
  A8_ASSIGN_OR_RETURN(
      std::vector<Value*> g,
      ctx.Emit("a8.GridSampleGrad", {dy, node.input(0), node.input(1)},
               {{"align_corners", Attribute(node.GetInt("align_corners", 0))},
                {"mode", Attribute(node.GetString("mode", "linear"))},
                {"padding_mode", Attribute(node.GetString("padding_mode", "zeros"))}},
               2));
  A8_RETURN_IF_ERROR(ctx.SetInputGrad(0, g[0]));
  return ctx.SetInputGrad(1, g[1]);
}

// Col2Im sums column entries into pixels: its input's gradient gathers dy back (Im2Col,
// a8.Col2ImGrad); image_shape and block_shape are constant shapes.
Status GradCol2Im(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return Status::Ok();
  const Node& node = ctx.node();
  A8_ASSIGN_OR_RETURN(Value * dy, grad::Dy(ctx));
  const grad::Attrs attrs = grad::IntsAttrsOf(node, {"dilations", "pads", "strides"});
  A8_ASSIGN_OR_RETURN(Value * dx,
                      ctx.Emit1("a8.Col2ImGrad", {dy, node.input(1), node.input(2)}, attrs));
  return ctx.SetInputGrad(0, dx);
}

// DeformConv: one a8.DeformConvGrad for X, W, offset and mask; the bias's gradient is dy summed
// over the batch and the pixels.
Status GradDeformConv(GradContext& ctx) {
  const Node& node = ctx.node();
  const bool has_mask = node.has_input(4);
  bool any = false;
  for (int i : {0, 1, 2, 4}) any = any || (node.has_input(i) && ctx.needs_grad(i));
  A8_ASSIGN_OR_RETURN(Value * dy, grad::Dy(ctx));
  if (any) {
    std::map<std::string, Attribute> attrs;
    for (const char* name :
         {"dilations", "group", "kernel_shape", "offset_group", "pads", "strides"}) {
      if (const Attribute* a = node.attr(name)) attrs[name] = *a;
    }
    std::vector<Value*> ins = {dy, node.input(0), node.input(1), node.input(2)};
    if (has_mask) ins.push_back(node.input(4));
    A8_ASSIGN_OR_RETURN(std::vector<Value*> g,
                        ctx.Emit("a8.DeformConvGrad", ins, attrs, has_mask ? 4 : 3));
    for (int i = 0; i < 3; ++i) A8_RETURN_IF_ERROR(ctx.SetInputGrad(i, g[i]));
    if (has_mask) A8_RETURN_IF_ERROR(ctx.SetInputGrad(4, g[3]));
  }
  if (node.has_input(3) && ctx.needs_grad(3)) {
    A8_ASSIGN_OR_RETURN(Value * db, ctx.Emit1("ReduceSum", {dy, ctx.ConstInts({0, 2, 3})},
                                              {{"keepdims", Attribute(int64_t{0})}}));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(3, db));
  }
  return Status::Ok();
}

}  // namespace

void RegisterGridSampleGradRules(GradRuleTable* t) {
  t->Add("GridSample", GradGridSample);
  t->Add("Col2Im", GradCol2Im);
  t->Add("DeformConv", GradDeformConv);
}

}  // namespace a8

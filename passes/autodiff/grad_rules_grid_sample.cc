// Gradient rule of GridSample (registered from RegisterMathGradRules in grad_rules_math.cc):
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

}  // namespace

void RegisterGridSampleGradRules(GradRuleTable* t) { t->Add("GridSample", GradGridSample); }

}  // namespace a8

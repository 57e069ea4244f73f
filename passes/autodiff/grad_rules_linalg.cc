// Gradient rule of Det (registered from RegisterMathGradRules in grad_rules_math.cc):
// dX = a8.DetGrad(dy, X) = dy * cofactors(X), i.e. dy * det(X) * inverse(X)^T where X is
// invertible, and exact where it is singular (kernels/device/linalg.h).
#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/grad_rules_util.h"

namespace a8 {
namespace {

Status GradDet(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, grad::Dy(ctx));
  A8_ASSIGN_OR_RETURN(Value * dx, ctx.Emit1("a8.DetGrad", {dy, ctx.node().input(0)}, {}));
  return ctx.SetInputGrad(0, dx);
}

}  // namespace

void RegisterLinalgGradRules(GradRuleTable* t) { t->Add("Det", GradDet); }

}  // namespace a8

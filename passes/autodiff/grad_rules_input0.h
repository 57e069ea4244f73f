// The rules of ops whose gradient goes to input 0 only (internal to passes/autodiff): a rule is
// Input0Grad<kDx> or Input0GradIfReached<kDx>, where kDx makes dx from dy, output 0's gradient.
#pragma once

#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/grad_rules_util.h"

namespace a8::grad {

using Input0Dx = StatusOr<Value*> (*)(GradContext& ctx, Value* dy);

// `kDx` runs only when input 0 needs a gradient; its dx becomes input 0's gradient.
template <Input0Dx kDx>
Status Input0Grad(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  A8_ASSIGN_OR_RETURN(Value * dx, kDx(ctx, dy));
  return ctx.SetInputGrad(0, dx);
}

// The same, except where no gradient reaches output 0 (a rule runs when one reaches any output):
// then input 0 gets none, instead of Dy's error, and `kDx` does not run.
template <Input0Dx kDx>
Status Input0GradIfReached(GradContext& ctx) {
  Value* dy = ctx.output_grad(0);
  if (dy == nullptr || !ctx.needs_grad(0)) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dx, kDx(ctx, dy));
  return ctx.SetInputGrad(0, dx);
}

}  // namespace a8::grad

// Gradient rules of ScatterND, ScatterElements and TopK (registered from RegisterMathGradRules in
// grad_rules_math.cc).
//
// A scatter with reduction 'none' overwrites data at the indexed places: data's gradient is dy
// with those places zeroed (the same scatter of zeros into dy), updates' gradient is dy gathered
// at the indices (GatherND / GatherElements). With repeated indices only the last update reaches
// the output, but each repeat gets the gathered dy: the rule is exact for distinct indices (as
// ONNX's result is defined only for them). Reduction 'add' passes dy to data unchanged and
// gathers it for updates (exact with repeats too); 'mul', 'max' and 'min' have no rule.
// TopK's values are x gathered at the indices along the axis: dx scatters dy into zeros there.
#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/grad_rules_util.h"

namespace a8 {
namespace {

using namespace grad;  // In, Out, Dy, Attrs, Dims, ReshapeTo (grad_rules_util.h)

// Zeros of `dtype` and `dims`: a scalar 0 expanded.
StatusOr<Value*> Zeros(GradContext& ctx, DType dtype, const Dims& dims) {
  return ctx.Emit1("Expand", {ctx.ConstScalar(dtype, 0), ctx.ConstInts(dims)});
}

// The rule of ScatterND (`gather` GatherND) or ScatterElements (GatherElements).
Status GradScatter(GradContext& ctx, const char* gather) {
  if (!ctx.needs_grad(0) && !ctx.needs_grad(2)) return Status::Ok();
  const Node& node = ctx.node();
  const std::string reduction = node.GetString("reduction", "none");
  if (reduction != "none" && reduction != "add") {
    return Unsupported(
        "{}: {} with reduction '{}' is not differentiable in a800c (only reductions 'none' and "
        "'add' are); its inputs 'data' and 'updates' must not need a gradient",
        node.Where(), node.op(), reduction);
  }
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  Attrs attrs;
  if (node.op() == "ScatterElements") attrs["axis"] = Attribute(node.GetInt("axis", 0));
  if (ctx.needs_grad(0)) {
    Value* dx = dy;
    if (reduction == "none") {
      A8_ASSIGN_OR_RETURN(Value * zeros, Zeros(ctx, dy->dtype(), In(ctx, 2)->dims()));
      A8_ASSIGN_OR_RETURN(dx, ctx.Emit1(node.op(), {dy, In(ctx, 1), zeros}, attrs));
    }
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(0, dx));
  }
  if (ctx.needs_grad(2)) {
    A8_ASSIGN_OR_RETURN(Value * du, ctx.Emit1(gather, {dy, In(ctx, 1)}, attrs));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(2, du));
  }
  return Status::Ok();
}

Status GradScatterND(GradContext& ctx) { return GradScatter(ctx, "GatherND"); }
Status GradScatterElements(GradContext& ctx) { return GradScatter(ctx, "GatherElements"); }

// TopK: dy (of the values) scattered along the axis at the indices into zeros of x's dims.
Status GradTopK(GradContext& ctx) {
  if (!ctx.needs_grad(0) || ctx.output_grad(0) == nullptr) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  const int64_t rank = static_cast<int64_t>(In(ctx, 0)->dims().size());
  int64_t axis = ctx.node().GetInt("axis", -1);
  if (axis < 0) axis += rank;
  A8_ASSIGN_OR_RETURN(Value * zeros, Zeros(ctx, dy->dtype(), In(ctx, 0)->dims()));
  A8_ASSIGN_OR_RETURN(Value * dx, ctx.Emit1("ScatterElements", {zeros, Out(ctx, 1), dy},
                                            {{"axis", Attribute(axis)}}));
  return ctx.SetInputGrad(0, dx);
}

}  // namespace

void RegisterScatterGradRules(GradRuleTable* t) {
  t->Add("ScatterND", GradScatterND);
  t->Add("ScatterElements", GradScatterElements);
  t->Add("TopK", GradTopK);
}

}  // namespace a8

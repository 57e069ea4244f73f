// Gradient rule of a8.FusedAttention (registered from RegisterMathGradRules in
// grad_rules_math.cc): one a8.FusedAttentionGrad (dY, Q, K, V, Y, LSE, bias?) -> (dQ, dK, dV,
// dBias?) with the forward node's attributes (kernels/device/attention.h). dBias, the one
// output whose cost grows with the bias's size, is asked for only when the bias needs a
// gradient (a float attn_mask on a path from a parameter). LSE is not differentiated: it feeds
// only the gradient.
#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/grad_rules_util.h"

namespace a8 {
namespace {

Status GradFusedAttention(GradContext& ctx) {
  const Node& node = ctx.node();
  const bool has_bias = node.has_input(3);
  const bool bias_grad = has_bias && ctx.needs_grad(3);
  if (!ctx.needs_grad(0) && !ctx.needs_grad(1) && !ctx.needs_grad(2) && !bias_grad) {
    return Status::Ok();
  }
  A8_ASSIGN_OR_RETURN(Value * dy, grad::Dy(ctx));
  std::map<std::string, Attribute> attrs;
  for (const char* name : {"causal_offset", "is_causal", "scale"}) {
    if (const Attribute* a = node.attr(name)) attrs[name] = *a;
  }
  A8_ASSIGN_OR_RETURN(std::vector<Value*> g,
                      ctx.Emit("a8.FusedAttentionGrad",
                               {dy, node.input(0), node.input(1), node.input(2), node.output(0),
                                node.output(1), has_bias ? node.input(3) : nullptr},
                               attrs, bias_grad ? 4 : 3));
  for (int i = 0; i < 3; ++i) A8_RETURN_IF_ERROR(ctx.SetInputGrad(i, g[i]));
  if (bias_grad) A8_RETURN_IF_ERROR(ctx.SetInputGrad(3, g[3]));
  return Status::Ok();
}

}  // namespace

void RegisterAttentionGradRules(GradRuleTable* t) {
  t->Add("a8.FusedAttention", GradFusedAttention);
}

}  // namespace a8

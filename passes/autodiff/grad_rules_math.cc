// Gradient rules of the elementwise, linear-algebra, shape and reduction ops (see grad_rule.h).
//
// Rules compose ONNX ops where that costs no extra pass over memory, and use the fused internal ops
// of compiler/ir/op_table_grad_math.cc (a8.ReluGrad, a8.GatherGrad, ...) where composing would.
// Broadcasting binary ops sum their gradients back to each operand's shape (SumToShape).
// Conventions where the derivative is not unique: Relu/LeakyRelu/Elu at 0 take the x < 0 side;
// Max/Min give a tied element's gradient to the first input holding the extreme; ReduceMax/
// ReduceMin split it evenly between tied positions (as PyTorch's amax/amin); Clip passes it where
// min <= x <= max; Abs at 0 gives 0.
#include <algorithm>
#include <numeric>

#include "compiler/ir/op_table.h"
#include "compiler/ir/shape_rules.h"
#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/grad_rules_input0.h"
#include "passes/autodiff/grad_rules_util.h"

namespace a8 {
namespace {

using namespace grad;  // In, Out, Dy, Attrs, Dims, ReshapeTo (grad_rules_util.h), Input0Grad

// Hands `g`, the gradient of a broadcast result, to input `i` summed to the input's shape.
Status SetSummed(GradContext& ctx, int i, Value* g) {
  A8_ASSIGN_OR_RETURN(Value * s, ctx.SumToShape(g, In(ctx, i)->dims()));
  return ctx.SetInputGrad(i, s);
}

StatusOr<Value*> Scale(GradContext& ctx, Value* v, double k) {
  if (k == 1.0) return v;
  return ctx.Emit1("Mul", {v, ctx.ConstScalar(v->dtype(), k)});
}

StatusOr<Value*> CastTo(GradContext& ctx, Value* v, DType t) {
  if (v->dtype() == t) return v;
  return ctx.Emit1("Cast", {v}, {{"to", Attribute(static_cast<int64_t>(DTypeToOnnx(t)))}});
}

// ---- elementwise

// dx = op(dy, z) with a fused internal op; z is the forward output or input.
Status FusedUnaryGrad(GradContext& ctx, std::string_view op, bool from_output, Attrs attrs = {}) {
  if (!ctx.needs_grad(0)) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  Value* z = from_output ? Out(ctx, 0) : In(ctx, 0);
  A8_ASSIGN_OR_RETURN(Value * dx, ctx.Emit1(op, {dy, z}, std::move(attrs)));
  return ctx.SetInputGrad(0, dx);
}

// The activations the op table declares with GradDecision::kActivationOf* (AddActivation):
// dx = a8.<Op>Grad(dy, x or y) with the forward node's attributes, defaults filled in.
Status GradActivation(GradContext& ctx) {
  const Node& n = ctx.node();
  const OpDef* def = FindOp(n.domain(), n.op());
  if (def == nullptr) return Internal("{}: not in the op table", n.Where());
  Attrs attrs;
  for (const AttrSpec& spec : def->attrs) {
    if (n.has_attr(spec.name)) {
      attrs[spec.name] = *n.attr(spec.name);
    } else if (spec.default_value) {
      attrs[spec.name] = *spec.default_value;
    }
  }
  return FusedUnaryGrad(ctx, "a8." + def->name + "Grad",
                        def->gradient == GradDecision::kActivationOfOutput, std::move(attrs));
}

// The unary ops' dx from dy (rules Input0Grad<...>, grad_rules_input0.h).
StatusOr<Value*> IdentityDx(GradContext&, Value* dy) { return dy; }
StatusOr<Value*> NegDx(GradContext& ctx, Value* dy) { return ctx.Emit1("Neg", {dy}); }
StatusOr<Value*> AbsDx(GradContext& ctx, Value* dy) {
  A8_ASSIGN_OR_RETURN(Value * sign, ctx.Emit1("Sign", {In(ctx, 0)}));
  return ctx.Emit1("Mul", {dy, sign});
}
StatusOr<Value*> ExpDx(GradContext& ctx, Value* dy) { return ctx.Emit1("Mul", {dy, Out(ctx, 0)}); }
StatusOr<Value*> LogDx(GradContext& ctx, Value* dy) { return ctx.Emit1("Div", {dy, In(ctx, 0)}); }
StatusOr<Value*> SinDx(GradContext& ctx, Value* dy) {
  A8_ASSIGN_OR_RETURN(Value * cos, ctx.Emit1("Cos", {In(ctx, 0)}));
  return ctx.Emit1("Mul", {dy, cos});
}
StatusOr<Value*> CosDx(GradContext& ctx, Value* dy) {
  A8_ASSIGN_OR_RETURN(Value * sin, ctx.Emit1("Sin", {In(ctx, 0)}));
  A8_ASSIGN_OR_RETURN(Value * neg_sin, ctx.Emit1("Neg", {sin}));
  return ctx.Emit1("Mul", {dy, neg_sin});
}
// d sqrt(x) = dy / (2 y).
StatusOr<Value*> SqrtDx(GradContext& ctx, Value* dy) {
  A8_ASSIGN_OR_RETURN(Value * half, Scale(ctx, dy, 0.5));
  return ctx.Emit1("Div", {half, Out(ctx, 0)});
}
// d (1/x) = -dy y^2.
StatusOr<Value*> ReciprocalDx(GradContext& ctx, Value* dy) {
  Value* y = Out(ctx, 0);
  A8_ASSIGN_OR_RETURN(Value * neg_y, ctx.Emit1("Neg", {y}));
  A8_ASSIGN_OR_RETURN(Value * neg_y2, ctx.Emit1("Mul", {neg_y, y}));
  return ctx.Emit1("Mul", {dy, neg_y2});
}

// Cast and CastLike between float types: the gradient is cast back; from or to a non-float type
// there is none.
Status GradCast(GradContext& ctx) {
  if (!ctx.needs_grad(0) || !IsFloat(In(ctx, 0)->dtype()) || !IsFloat(Out(ctx, 0)->dtype())) {
    return Status::Ok();
  }
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  A8_ASSIGN_OR_RETURN(Value * dx, CastTo(ctx, dy, In(ctx, 0)->dtype()));
  return ctx.SetInputGrad(0, dx);
}

// ---- broadcasting binary and variadic ops

Status GradAdd(GradContext& ctx) {
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  for (int i = 0; i < 2; ++i) {
    if (ctx.needs_grad(i)) A8_RETURN_IF_ERROR(SetSummed(ctx, i, dy));
  }
  return Status::Ok();
}

Status GradSub(GradContext& ctx) {
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  if (ctx.needs_grad(0)) A8_RETURN_IF_ERROR(SetSummed(ctx, 0, dy));
  if (ctx.needs_grad(1)) {
    // Negate after the reduction: it is the smaller tensor.
    A8_ASSIGN_OR_RETURN(Value * s, ctx.SumToShape(dy, In(ctx, 1)->dims()));
    A8_ASSIGN_OR_RETURN(Value * neg, ctx.Emit1("Neg", {s}));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(1, neg));
  }
  return Status::Ok();
}

Status GradMul(GradContext& ctx) {
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  for (int i = 0; i < 2; ++i) {
    if (!ctx.needs_grad(i)) continue;
    A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("Mul", {dy, In(ctx, 1 - i)}));
    A8_RETURN_IF_ERROR(SetSummed(ctx, i, g));
  }
  return Status::Ok();
}

// y = a / b: da = dy / b, db = -da * y.
Status GradDiv(GradContext& ctx) {
  if (!ctx.needs_grad(0) && !ctx.needs_grad(1)) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  A8_ASSIGN_OR_RETURN(Value * da, ctx.Emit1("Div", {dy, In(ctx, 1)}));
  if (ctx.needs_grad(0)) A8_RETURN_IF_ERROR(SetSummed(ctx, 0, da));
  if (ctx.needs_grad(1)) {
    A8_ASSIGN_OR_RETURN(Value * day, ctx.Emit1("Mul", {da, Out(ctx, 0)}));
    A8_ASSIGN_OR_RETURN(Value * s, ctx.SumToShape(day, In(ctx, 1)->dims()));
    A8_ASSIGN_OR_RETURN(Value * neg, ctx.Emit1("Neg", {s}));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(1, neg));
  }
  return Status::Ok();
}

// y = x^e: dx = dy e x^(e-1), de = dy y ln(x). The exponent may have another dtype.
Status GradPow(GradContext& ctx) {
  Value *x = In(ctx, 0), *e = In(ctx, 1), *y = Out(ctx, 0);
  if (!ctx.needs_grad(0) && !ctx.needs_grad(1)) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  if (ctx.needs_grad(0)) {
    A8_ASSIGN_OR_RETURN(Value * et, CastTo(ctx, e, x->dtype()));
    A8_ASSIGN_OR_RETURN(Value * em1, ctx.Emit1("Sub", {et, ctx.ConstScalar(x->dtype(), 1.0)}));
    A8_ASSIGN_OR_RETURN(Value * p, ctx.Emit1("Pow", {x, em1}));
    A8_ASSIGN_OR_RETURN(Value * ep, ctx.Emit1("Mul", {et, p}));
    A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("Mul", {dy, ep}));
    A8_RETURN_IF_ERROR(SetSummed(ctx, 0, g));
  }
  if (ctx.needs_grad(1)) {
    A8_ASSIGN_OR_RETURN(Value * lnx, ctx.Emit1("Log", {x}));
    A8_ASSIGN_OR_RETURN(Value * ylnx, ctx.Emit1("Mul", {y, lnx}));
    A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("Mul", {dy, ylnx}));
    A8_ASSIGN_OR_RETURN(Value * s, ctx.SumToShape(g, e->dims()));
    A8_ASSIGN_OR_RETURN(Value * de, CastTo(ctx, s, e->dtype()));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(1, de));
  }
  return Status::Ok();
}

Status GradSum(GradContext& ctx) {
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  for (int i = 0; i < ctx.node().num_inputs(); ++i) {
    if (ctx.needs_grad(i)) A8_RETURN_IF_ERROR(SetSummed(ctx, i, dy));
  }
  return Status::Ok();
}

Status GradMean(GradContext& ctx) {
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  A8_ASSIGN_OR_RETURN(Value * g, Scale(ctx, dy, 1.0 / ctx.node().num_inputs()));
  for (int i = 0; i < ctx.node().num_inputs(); ++i) {
    if (ctx.needs_grad(i)) A8_RETURN_IF_ERROR(SetSummed(ctx, i, g));
  }
  return Status::Ok();
}

// Max/Min: each output element's gradient goes to the first input that equals it.
Status GradMaxMin(GradContext& ctx) {
  const int n = ctx.node().num_inputs();
  int last_needed = -1;
  for (int i = 0; i < n; ++i) {
    if (ctx.needs_grad(i)) last_needed = i;
  }
  if (last_needed < 0) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  if (n == 1) return SetSummed(ctx, 0, dy);
  Value* zero = ctx.ConstScalar(dy->dtype(), 0.0);
  Value* taken = nullptr;  // bool: an earlier input already holds the extreme
  for (int i = 0; i <= last_needed; ++i) {
    A8_ASSIGN_OR_RETURN(Value * eq, ctx.Emit1("Equal", {In(ctx, i), Out(ctx, 0)}));
    Value* first = eq;
    if (taken != nullptr) {
      A8_ASSIGN_OR_RETURN(Value * free, ctx.Emit1("Not", {taken}));
      A8_ASSIGN_OR_RETURN(first, ctx.Emit1("And", {eq, free}));
    }
    if (ctx.needs_grad(i)) {
      A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("Where", {first, dy, zero}));
      A8_RETURN_IF_ERROR(SetSummed(ctx, i, g));
    }
    if (i < last_needed) {
      if (taken == nullptr) {
        taken = eq;
      } else {
        A8_ASSIGN_OR_RETURN(taken, ctx.Emit1("Or", {taken, eq}));
      }
    }
  }
  return Status::Ok();
}

Status GradWhere(GradContext& ctx) {
  if (!ctx.needs_grad(1) && !ctx.needs_grad(2)) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  Value* zero = ctx.ConstScalar(dy->dtype(), 0.0);
  Value* c = In(ctx, 0);
  if (ctx.needs_grad(1)) {
    A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("Where", {c, dy, zero}));
    A8_RETURN_IF_ERROR(SetSummed(ctx, 1, g));
  }
  if (ctx.needs_grad(2)) {
    A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("Where", {c, zero, dy}));
    A8_RETURN_IF_ERROR(SetSummed(ctx, 2, g));
  }
  return Status::Ok();
}

// Clip: dy where min <= x <= max (inputs, or Clip-6's attributes); the bounds get none.
StatusOr<Value*> ClipDx(GradContext& ctx, Value* dy) {
  const Node& n = ctx.node();
  Value* x = In(ctx, 0);
  Value* mask = nullptr;
  const std::pair<const char*, const char*> bounds[] = {{"min", "GreaterOrEqual"},
                                                        {"max", "LessOrEqual"}};
  for (int b = 0; b < 2; ++b) {
    Value* bound = In(ctx, b + 1);
    if (bound == nullptr && n.has_attr(bounds[b].first)) {
      bound = ctx.ConstScalar(x->dtype(), n.GetFloat(bounds[b].first, 0.0f));
    }
    if (bound == nullptr) continue;
    A8_ASSIGN_OR_RETURN(Value * in_range, ctx.Emit1(bounds[b].second, {x, bound}));
    if (mask == nullptr) {
      mask = in_range;
    } else {
      A8_ASSIGN_OR_RETURN(mask, ctx.Emit1("And", {mask, in_range}));
    }
  }
  if (mask == nullptr) return dy;
  return ctx.Emit1("Where", {mask, dy, ctx.ConstScalar(dy->dtype(), 0.0)});
}

// ---- linear algebra

// Y = A @ B (numpy): dA = dY @ B^T, dB = A^T @ dY, summed over broadcast batch dims; a 1-D operand
// is a row (A) or column (B) whose dim Y drops.
Status GradMatMul(GradContext& ctx) {
  const bool need_a = ctx.needs_grad(0), need_b = ctx.needs_grad(1);
  if (!need_a && !need_b) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  Value *a = In(ctx, 0), *b = In(ctx, 1);
  if (a->dims().empty() || b->dims().empty()) {
    return InvalidInput("{}: MatMul operands must have rank >= 1", ctx.node().Where());
  }
  const bool a_vec = a->dims().size() == 1, b_vec = b->dims().size() == 1;
  const int64_t k = a->dims().back();
  const Dims a2 = a_vec ? Dims{1, k} : a->dims(), b2 = b_vec ? Dims{k, 1} : b->dims();
  const int64_t n = b2.back();
  if (b2.size() == 2) {
    // B is a matrix (the common "linear layer" case): fold A's batch into rows and let one GEMM do
    // the batch sum of dB. dY has the same elements as [P, N].
    const int64_t p = std::accumulate(a2.begin(), a2.end() - 1, int64_t{1}, std::multiplies<>());
    A8_ASSIGN_OR_RETURN(Value * dyf, ReshapeTo(ctx, dy, {p, n}));
    if (need_a) {
      A8_ASSIGN_OR_RETURN(Value * bm, ReshapeTo(ctx, b, b2));
      A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("Gemm", {dyf, bm}, {{"transB", Attribute(1)}}));
      A8_ASSIGN_OR_RETURN(Value * da, ReshapeTo(ctx, g, a->dims()));
      A8_RETURN_IF_ERROR(ctx.SetInputGrad(0, da));
    }
    if (need_b) {
      A8_ASSIGN_OR_RETURN(Value * af, ReshapeTo(ctx, a, {p, k}));
      A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("Gemm", {af, dyf}, {{"transA", Attribute(1)}}));
      A8_ASSIGN_OR_RETURN(Value * db, ReshapeTo(ctx, g, b->dims()));
      A8_RETURN_IF_ERROR(ctx.SetInputGrad(1, db));
    }
    return Status::Ok();
  }
  // Batched B: dY with the dropped M dim restored, then batched matmuls with transposes.
  Dims y2 = dy->dims();
  if (a_vec) y2.insert(y2.end() - 1, 1);
  A8_ASSIGN_OR_RETURN(Value * dy2, ReshapeTo(ctx, dy, y2));
  auto swap_last = [&](Value* v) -> StatusOr<Value*> {
    Dims perm(v->dims().size());
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return ctx.Emit1("Transpose", {v}, {{"perm", Attribute(perm)}});
  };
  if (need_a) {
    A8_ASSIGN_OR_RETURN(Value * bt, swap_last(b));
    A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("MatMul", {dy2, bt}));
    A8_RETURN_IF_ERROR(SetSummed(ctx, 0, g));
  }
  if (need_b) {
    A8_ASSIGN_OR_RETURN(Value * am, ReshapeTo(ctx, a, a2));
    A8_ASSIGN_OR_RETURN(Value * at, swap_last(am));
    A8_ASSIGN_OR_RETURN(Value * g, ctx.Emit1("MatMul", {at, dy2}));
    A8_RETURN_IF_ERROR(SetSummed(ctx, 1, g));
  }
  return Status::Ok();
}

// Y = alpha op(A) op(B) + beta C. Each operand's gradient is one Gemm with the transposes folded
// into its flags.
Status GradGemm(GradContext& ctx) {
  const Node& node = ctx.node();
  const bool need_c = node.has_input(2) && ctx.needs_grad(2);
  if (!ctx.needs_grad(0) && !ctx.needs_grad(1) && !need_c) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  Value *a = In(ctx, 0), *b = In(ctx, 1);
  const float alpha = node.GetFloat("alpha", 1.0f), beta = node.GetFloat("beta", 1.0f);
  const int64_t ta = node.GetInt("transA", 0) != 0, tb = node.GetInt("transB", 0) != 0;
  auto gemm = [&](Value* p, Value* q, int64_t trans_p, int64_t trans_q) {
    Attrs attrs;
    if (alpha != 1.0f) attrs["alpha"] = Attribute(alpha);
    if (trans_p != 0) attrs["transA"] = Attribute(trans_p);
    if (trans_q != 0) attrs["transB"] = Attribute(trans_q);
    return ctx.Emit1("Gemm", {p, q}, std::move(attrs));
  };
  if (ctx.needs_grad(0)) {
    // dA' = alpha dY B'^T; for transA, dA = dA'^T = alpha B' dY^T.
    A8_ASSIGN_OR_RETURN(Value * da, ta ? gemm(b, dy, tb, 1) : gemm(dy, b, 0, 1 - tb));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(0, da));
  }
  if (ctx.needs_grad(1)) {
    // dB' = alpha A'^T dY; for transB, dB = dB'^T = alpha dY^T A'.
    A8_ASSIGN_OR_RETURN(Value * db, tb ? gemm(dy, a, 1, ta) : gemm(a, dy, 1 - ta, 0));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(1, db));
  }
  if (need_c) {
    A8_ASSIGN_OR_RETURN(Value * s, ctx.SumToShape(dy, In(ctx, 2)->dims()));
    A8_ASSIGN_OR_RETURN(Value * dc, Scale(ctx, s, beta));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(2, dc));
  }
  return Status::Ok();
}

}  // namespace

// The shape and reduction rules (grad_rules_math_shape.cc).
void RegisterShapeGradRules(GradRuleTable* t);
// ScatterND, ScatterElements, TopK (grad_rules_scatter.cc).
void RegisterScatterGradRules(GradRuleTable* t);
// GridSample (grad_rules_grid_sample.cc).
void RegisterGridSampleGradRules(GradRuleTable* t);
void RegisterLinalgGradRules(GradRuleTable* t);   // grad_rules_linalg.cc
void RegisterRoiPoolGradRules(GradRuleTable* t);  // grad_rules_roi_pool.cc
// a8.FusedAttention (grad_rules_attention.cc).
void RegisterAttentionGradRules(GradRuleTable* t);

void RegisterMathGradRules(GradRuleTable* t) {
  for (const OpDef& op : AllOps()) {
    if (op.gradient == GradDecision::kActivationOfInput ||
        op.gradient == GradDecision::kActivationOfOutput) {
      t->Add(QualifiedName(op), GradActivation);
    }
    // An ONNX op the table calls not differentiable (comparisons, Shape, ArgMax, Floor, the
    // random draws, ...): its inputs get no gradient, as PyTorch's comparisons, bernoulli and
    // *_like draws give none to theirs.
    if (op.domain.empty() && op.gradient == GradDecision::kNone) {
      t->Add(QualifiedName(op), kNoGradient);
    }
  }
  t->Add("Identity", Input0Grad<IdentityDx>);
  t->Add("Neg", Input0Grad<NegDx>);
  t->Add("Abs", Input0Grad<AbsDx>);
  t->Add("Exp", Input0Grad<ExpDx>);
  t->Add("Log", Input0Grad<LogDx>);
  t->Add("Sqrt", Input0Grad<SqrtDx>);
  t->Add("Reciprocal", Input0Grad<ReciprocalDx>);
  t->Add("Sin", Input0Grad<SinDx>);
  t->Add("Cos", Input0Grad<CosDx>);
  t->Add("Cast", GradCast);
  t->Add("CastLike", GradCast);
  t->Add("Add", GradAdd);
  t->Add("Sub", GradSub);
  t->Add("Mul", GradMul);
  t->Add("Div", GradDiv);
  t->Add("Pow", GradPow);
  t->Add("Sum", GradSum);
  t->Add("Mean", GradMean);
  t->Add("Max", GradMaxMin);
  t->Add("Min", GradMaxMin);
  t->Add("Where", GradWhere);
  t->Add("Clip", Input0Grad<ClipDx>);
  t->Add("MatMul", GradMatMul);
  t->Add("Gemm", GradGemm);
  RegisterShapeGradRules(t);
  RegisterScatterGradRules(t);
  RegisterGridSampleGradRules(t);
  RegisterLinalgGradRules(t);
  RegisterRoiPoolGradRules(t);
  RegisterAttentionGradRules(t);
}

}  // namespace a8

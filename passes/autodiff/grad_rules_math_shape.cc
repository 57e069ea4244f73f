// Gradient rules of the shape-manipulation and reduction ops (see grad_rule.h; registered from
// RegisterMathGradRules in grad_rules_math.cc).
//
// Data movement is undone by its inverse movement: reshapes reshape back, Transpose transposes by
// the inverse permutation, Concat splits and Split concatenates, Pad crops (and Slice/Gather
// scatter into zeros with a8.SliceGrad/a8.GatherGrad), Expand and Tile sum over the copies.
// Reductions broadcast dy (with the reduced axes kept as 1s) back over the reduced axes.
#include <algorithm>
#include <numeric>

#include "compiler/ir/shape_rules.h"
#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/grad_rules_input0.h"
#include "passes/autodiff/grad_rules_util.h"

namespace a8 {
namespace {

using namespace grad;  // In, Out, Dy, Attrs, Dims, ReshapeTo (grad_rules_util.h), Input0Grad

// ---- data movement

// Reshape, Flatten, Squeeze, Unsqueeze: the same elements in another shape.
StatusOr<Value*> ReshapeLikeDx(GradContext& ctx, Value* dy) {
  return ReshapeTo(ctx, dy, In(ctx, 0)->dims());
}

StatusOr<Value*> TransposeDx(GradContext& ctx, Value* dy) {
  const int64_t rank = static_cast<int64_t>(In(ctx, 0)->dims().size());
  Dims perm = ctx.node().GetInts("perm");
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return InvalidInput("{}: attribute 'perm' has {} values for rank {}", ctx.node().Where(),
                        perm.size(), rank);
  }
  Dims inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= rank) {
      return InvalidInput("{}: attribute 'perm' has {} for rank {}", ctx.node().Where(), perm[i],
                          rank);
    }
    inverse[perm[i]] = static_cast<int64_t>(i);
  }
  return ctx.Emit1("Transpose", {dy}, {{"perm", Attribute(inverse)}});
}

StatusOr<Value*> ExpandDx(GradContext& ctx, Value* dy) {
  return ctx.SumToShape(dy, In(ctx, 0)->dims());
}

Status GradConcat(GradContext& ctx) {
  const Node& node = ctx.node();
  const int n = node.num_inputs();
  bool any = false;
  for (int i = 0; i < n; ++i) any = any || ctx.needs_grad(i);
  if (!any) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  if (n == 1) return ctx.SetInputGrad(0, dy);
  A8_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0),
                                                  static_cast<int64_t>(dy->dims().size())));
  Dims sizes;
  for (int i = 0; i < n; ++i) sizes.push_back(In(ctx, i)->dims()[axis]);
  A8_ASSIGN_OR_RETURN(std::vector<Value*> parts, ctx.Emit("Split", {dy, ctx.ConstInts(sizes)},
                                                          {{"axis", Attribute(axis)}}, n));
  for (int i = 0; i < n; ++i) {
    if (ctx.needs_grad(i)) A8_RETURN_IF_ERROR(ctx.SetInputGrad(i, parts[i]));
  }
  return Status::Ok();
}

// Split: the outputs' gradients concatenated, zeros for outputs no gradient reaches.
Status GradSplit(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return Status::Ok();
  const Node& node = ctx.node();
  Value* x = In(ctx, 0);
  A8_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0),
                                                  static_cast<int64_t>(x->dims().size())));
  std::vector<Value*> parts;
  for (int j = 0; j < node.num_outputs(); ++j) {
    Value* g = ctx.output_grad(j);
    if (g == nullptr) {
      A8_ASSIGN_OR_RETURN(g, ctx.Emit1("Expand", {ctx.ConstScalar(x->dtype(), 0.0),
                                                  ctx.ConstInts(Out(ctx, j)->dims())}));
    }
    parts.push_back(g);
  }
  if (parts.size() == 1) return ctx.SetInputGrad(0, parts[0]);
  A8_ASSIGN_OR_RETURN(Value * dx, ctx.Emit1("Concat", parts, {{"axis", Attribute(axis)}}));
  return ctx.SetInputGrad(0, dx);
}

// Slice: dy scattered into zeros at the slice's positions, resolved here to a start and step for
// every dim (the clamping of shape_rules_shape.cc's InferSlice).
StatusOr<Value*> SliceDx(GradContext& ctx, Value* dy) {
  const Node& node = ctx.node();
  const Dims& dims = In(ctx, 0)->dims();
  A8_ASSIGN_OR_RETURN(std::optional<Dims> starts_in, IntsOperand(node, 1, "starts"));
  A8_ASSIGN_OR_RETURN(std::optional<Dims> ends_in, IntsOperand(node, 2, "ends"));
  A8_ASSIGN_OR_RETURN(std::optional<Dims> axes_in, IntsOperand(node, 3, "axes"));
  A8_ASSIGN_OR_RETURN(std::optional<Dims> steps_in, IntsOperand(node, 4, "steps"));
  if (!starts_in.has_value() || !ends_in.has_value()) {
    return InvalidInput("{}: 'starts' and 'ends' are required", node.Where());
  }
  const size_t n = starts_in->size();
  Dims axes(n), steps = steps_in.value_or(Dims(n, 1));
  std::iota(axes.begin(), axes.end(), 0);
  if (axes_in.has_value()) axes = *axes_in;
  if (axes.size() != n || steps.size() != n) {
    return InvalidInput("{}: 'starts', 'axes' and 'steps' must have the same length", node.Where());
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  A8_ASSIGN_OR_RETURN(axes, NormalizeAxes(node, "axes", axes, rank));
  Dims start(dims.size(), 0), step(dims.size(), 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = axes[i], dim = dims[a];
    if (steps[i] == 0) return InvalidInput("{}: 'steps' has a 0", node.Where());
    step[a] = steps[i];
    if (dy->dims()[a] == 0) continue;  // nothing lands on this dim
    // Clamped per the ONNX spec: [0, dim] going forward, [0, dim - 1] going backward (the output is
    // not empty, so the start is in range after clamping).
    const int64_t s = (*starts_in)[i];
    start[a] = std::clamp<int64_t>(s < 0 ? s + dim : s, 0, steps[i] > 0 ? dim : dim - 1);
  }
  return ctx.Emit1(
      "a8.SliceGrad", {dy},
      {{"shape", Attribute(dims)}, {"starts", Attribute(start)}, {"steps", Attribute(step)}});
}

StatusOr<Value*> GatherDx(GradContext& ctx, Value* dy) {
  const Node& node = ctx.node();
  const Dims& dims = In(ctx, 0)->dims();
  A8_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0),
                                                  static_cast<int64_t>(dims.size())));
  return ctx.Emit1("a8.GatherGrad", {dy, In(ctx, 1)},
                   {{"axis", Attribute(axis)}, {"shape", Attribute(dims)}});
}

// GatherND: dy added at each index tuple's slice of zeros of data's shape (a8.GatherNDGrad).
StatusOr<Value*> GatherNDDx(GradContext& ctx, Value* dy) {
  return ctx.Emit1("a8.GatherNDGrad", {dy, In(ctx, 1)},
                   {{"batch_dims", Attribute(ctx.node().GetInt("batch_dims", 0))},
                    {"shape", Attribute(In(ctx, 0)->dims())}});
}

// Tile: dy viewed as [r0, d0, r1, d1, ...] summed over the repeat axes.
StatusOr<Value*> TileDx(GradContext& ctx, Value* dy) {
  const Dims& dims = In(ctx, 0)->dims();
  A8_ASSIGN_OR_RETURN(Dims repeats, ConstantInts(ctx.node(), 1, "repeats"));
  if (repeats.size() != dims.size()) {
    return InvalidInput("{}: 'repeats' has {} values for rank {}", ctx.node().Where(),
                        repeats.size(), dims.size());
  }
  Dims split, axes;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (repeats[i] != 1) {
      axes.push_back(static_cast<int64_t>(split.size()));
      split.push_back(repeats[i]);
    }
    split.push_back(dims[i]);
  }
  if (axes.empty()) return dy;
  A8_ASSIGN_OR_RETURN(Value * viewed, ReshapeTo(ctx, dy, split));
  return ctx.Emit1("ReduceSum", {viewed, ctx.ConstInts(axes)}, {{"keepdims", Attribute(0)}});
}

// Pad (constant mode): padding with the negated pads crops what was added and zero-fills what a
// negative pad cropped. The pad value's gradient is the sum of dy over the padding.
Status GradPad(GradContext& ctx) {
  const Node& node = ctx.node();
  const bool need_value = node.has_input(2) && ctx.needs_grad(2);
  if (!ctx.needs_grad(0) && !need_value) return Status::Ok();
  const std::string mode = node.GetString("mode", "constant");
  if (mode != "constant") {
    return Unsupported("{}: Pad mode '{}' has no gradient (only mode constant)", node.Where(),
                       mode);
  }
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  A8_ASSIGN_OR_RETURN(std::optional<Dims> pads, IntsOperand(node, 1, "pads"));
  if (!pads.has_value()) return InvalidInput("{}: 'pads' is required", node.Where());
  Dims neg(pads->size());
  std::transform(pads->begin(), pads->end(), neg.begin(), [](int64_t p) { return -p; });
  Value* axes = In(ctx, 3);
  auto pad = [&](Value* v, const Dims& p) -> StatusOr<Value*> {
    std::vector<Value*> ins = {v, ctx.ConstInts(p)};
    if (axes != nullptr) ins.insert(ins.end(), {nullptr, axes});
    return ctx.Emit1("Pad", std::move(ins));
  };
  A8_ASSIGN_OR_RETURN(Value * dx, pad(dy, neg));
  if (ctx.needs_grad(0)) A8_RETURN_IF_ERROR(ctx.SetInputGrad(0, dx));
  if (need_value) {
    A8_ASSIGN_OR_RETURN(Value * inner, pad(dx, *pads));
    A8_ASSIGN_OR_RETURN(Value * outer, ctx.Emit1("Sub", {dy, inner}));
    A8_ASSIGN_OR_RETURN(Value * sum, ctx.Emit1("ReduceSum", {outer}, {{"keepdims", Attribute(0)}}));
    A8_ASSIGN_OR_RETURN(Value * dv, ReshapeTo(ctx, sum, In(ctx, 2)->dims()));
    A8_RETURN_IF_ERROR(ctx.SetInputGrad(2, dv));
  }
  return Status::Ok();
}

// CumSum: the running sum in the other direction (same exclusive flag).
StatusOr<Value*> CumSumDx(GradContext& ctx, Value* dy) {
  const Node& node = ctx.node();
  return ctx.Emit1("CumSum", {dy, In(ctx, 1)},
                   {{"exclusive", Attribute(int64_t{node.GetInt("exclusive", 0) != 0})},
                    {"reverse", Attribute(int64_t{node.GetInt("reverse", 0) == 0})}});
}

// Trilu: the same triangle of dy.
StatusOr<Value*> TriluDx(GradContext& ctx, Value* dy) {
  std::vector<Value*> ins = {dy};
  if (ctx.node().has_input(1)) ins.push_back(In(ctx, 1));
  return ctx.Emit1("Trilu", std::move(ins), {{"upper", Attribute(ctx.node().GetInt("upper", 1))}});
}

// ---- reductions

// What every reduction rule needs: dy and y with the reduced axes kept (as 1s).
struct Reduction {
  // noop_with_empty_axes without axes: the op copies its input (as the CPU kernel and
  // onnxruntime do; onnx's reference applies SumSquare's square, L1's abs), so dx = dy.
  bool identity = false;
  Dims axes;          // normalized
  Dims kept;          // x's dims with the reduced axes set to 1
  int64_t count = 1;  // elements reduced into each output element
  Value* dy = nullptr;
};

StatusOr<Reduction> PrepareReduction(GradContext& ctx) {
  const Node& node = ctx.node();
  const Dims& dims = In(ctx, 0)->dims();
  Reduction r;
  A8_ASSIGN_OR_RETURN(std::optional<Dims> axes, IntsOperand(node, 1, "axes"));
  r.axes = axes.value_or(Dims{});
  if (r.axes.empty()) {
    r.identity = node.GetInt("noop_with_empty_axes", 0) != 0;
    if (!r.identity) {
      for (size_t i = 0; i < dims.size(); ++i) r.axes.push_back(static_cast<int64_t>(i));
    }
  }
  A8_ASSIGN_OR_RETURN(r.axes,
                      NormalizeAxes(node, "axes", r.axes, static_cast<int64_t>(dims.size())));
  r.kept = dims;
  for (int64_t a : r.axes) {
    r.count *= dims[a];
    r.kept[a] = 1;
  }
  A8_ASSIGN_OR_RETURN(Value * dy, Dy(ctx));
  A8_ASSIGN_OR_RETURN(r.dy, ReshapeTo(ctx, dy, r.kept));
  return r;
}

StatusOr<Value*> KeptOutput(GradContext& ctx, const Reduction& r) {
  return ReshapeTo(ctx, Out(ctx, 0), r.kept);
}

// The rule of a reduction: `kDx` makes dx from the prepared reduction, and runs only when input
// 0 needs a gradient and the op reduces (an identity passes dy on).
using ReductionDx = StatusOr<Value*> (*)(GradContext& ctx, const Reduction& r);

template <ReductionDx kDx>
Status ReductionGrad(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return Status::Ok();
  A8_ASSIGN_OR_RETURN(Reduction r, PrepareReduction(ctx));
  if (r.identity) return ctx.SetInputGrad(0, r.dy);
  A8_ASSIGN_OR_RETURN(Value * dx, kDx(ctx, r));
  return ctx.SetInputGrad(0, dx);
}

StatusOr<Value*> ReduceSumDx(GradContext& ctx, const Reduction& r) {
  const Dims& dims = In(ctx, 0)->dims();
  if (r.dy->dims() == dims) return r.dy;
  return ctx.Emit1("Expand", {r.dy, ctx.ConstInts(dims)});
}

StatusOr<Value*> ReduceMeanDx(GradContext& ctx, const Reduction& r) {
  Value* g = r.dy;
  if (r.count != 1) {
    // Scale the small tensor before the broadcast. (count 0: an empty reduction, no gradient.)
    const double k = r.count == 0 ? 0.0 : 1.0 / static_cast<double>(r.count);
    A8_ASSIGN_OR_RETURN(g, ctx.Emit1("Mul", {g, ctx.ConstScalar(g->dtype(), k)}));
  }
  const Dims& dims = In(ctx, 0)->dims();
  if (g->dims() == dims) return g;
  return ctx.Emit1("Expand", {g, ctx.ConstInts(dims)});
}

// dx = x * f(dy, ...) where f is of the reduced shape: one broadcasting Mul over x.
StatusOr<Value*> ReduceSumSquareDx(GradContext& ctx, const Reduction& r) {
  A8_ASSIGN_OR_RETURN(Value * g2, ctx.Emit1("Mul", {r.dy, ctx.ConstScalar(r.dy->dtype(), 2.0)}));
  return ctx.Emit1("Mul", {In(ctx, 0), g2});
}

StatusOr<Value*> ReduceL1Dx(GradContext& ctx, const Reduction& r) {
  A8_ASSIGN_OR_RETURN(Value * sign, ctx.Emit1("Sign", {In(ctx, 0)}));
  return ctx.Emit1("Mul", {sign, r.dy});
}

// y = sqrt(sum x^2): dx = x * dy / y.
StatusOr<Value*> ReduceL2Dx(GradContext& ctx, const Reduction& r) {
  A8_ASSIGN_OR_RETURN(Value * y, KeptOutput(ctx, r));
  A8_ASSIGN_OR_RETURN(Value * ratio, ctx.Emit1("Div", {r.dy, y}));
  return ctx.Emit1("Mul", {In(ctx, 0), ratio});
}

// y = log sum exp x: dx = dy * exp(x - y) (the softmax over the reduced axes).
StatusOr<Value*> ReduceLogSumExpDx(GradContext& ctx, const Reduction& r) {
  A8_ASSIGN_OR_RETURN(Value * y, KeptOutput(ctx, r));
  A8_ASSIGN_OR_RETURN(Value * shifted, ctx.Emit1("Sub", {In(ctx, 0), y}));
  A8_ASSIGN_OR_RETURN(Value * p, ctx.Emit1("Exp", {shifted}));
  return ctx.Emit1("Mul", {p, r.dy});
}

// ReduceMax/ReduceMin: dy split evenly between the positions that equal the extreme.
StatusOr<Value*> ReduceExtremeDx(GradContext& ctx, const Reduction& r) {
  Value* x = In(ctx, 0);
  A8_ASSIGN_OR_RETURN(Value * y, KeptOutput(ctx, r));
  A8_ASSIGN_OR_RETURN(Value * hit, ctx.Emit1("Equal", {x, y}));
  A8_ASSIGN_OR_RETURN(
      Value * mask,
      ctx.Emit1("Cast", {hit}, {{"to", Attribute(static_cast<int64_t>(DTypeToOnnx(x->dtype())))}}));
  A8_ASSIGN_OR_RETURN(Value * ties, ctx.Emit1("ReduceSum", {mask, ctx.ConstInts(r.axes)},
                                              {{"keepdims", Attribute(1)}}));
  A8_ASSIGN_OR_RETURN(Value * share, ctx.Emit1("Div", {r.dy, ties}));
  return ctx.Emit1("Mul", {mask, share});
}

}  // namespace

void RegisterShapeGradRules(GradRuleTable* t) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
    t->Add(op, Input0Grad<ReshapeLikeDx>);
  }
  t->Add("Transpose", Input0Grad<TransposeDx>);
  t->Add("Expand", Input0Grad<ExpandDx>);
  t->Add("Concat", GradConcat);
  t->Add("Split", GradSplit);
  t->Add("Slice", Input0Grad<SliceDx>);
  t->Add("Gather", Input0Grad<GatherDx>);
  t->Add("GatherND", Input0Grad<GatherNDDx>);
  t->Add("Tile", Input0Grad<TileDx>);
  t->Add("Pad", GradPad);
  t->Add("CumSum", Input0Grad<CumSumDx>);
  t->Add("Trilu", Input0Grad<TriluDx>);
  t->Add("ReduceSum", ReductionGrad<ReduceSumDx>);
  t->Add("ReduceMean", ReductionGrad<ReduceMeanDx>);
  t->Add("ReduceSumSquare", ReductionGrad<ReduceSumSquareDx>);
  t->Add("ReduceL1", ReductionGrad<ReduceL1Dx>);
  t->Add("ReduceL2", ReductionGrad<ReduceL2Dx>);
  t->Add("ReduceLogSumExp", ReductionGrad<ReduceLogSumExpDx>);
  t->Add("ReduceMax", ReductionGrad<ReduceExtremeDx>);
  t->Add("ReduceMin", ReductionGrad<ReduceExtremeDx>);
}

}  // namespace a8

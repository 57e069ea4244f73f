// Internal ops (domain "a8") of the elementwise / shape gradients, see op_table_builder.h, with
// their shape rules. passes/autodiff/grad_rules_math.cc emits them; kernels/cpu/grad_math.h
// computes them.
#include <string>

#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

// The saved forward operand of an activation gradient: its output where the derivative is a
// function of it (so the input can be freed), else its input.
std::string_view SavedOperandName(const OpNode& node) {
  const std::string& op = node.op();
  return op == "ReluGrad" || op == "SigmoidGrad" || op == "TanhGrad" ? "y" : "x";
}

// (dy, saved forward tensor) -> dx: both float, same type.
Status InferActivationGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  const std::string_view saved = SavedOperandName(node);
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dy"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "dy", 1, saved));
  if (node.input(0)->dims() != node.input(1)->dims()) {
    return InvalidInput("{}: inputs 'dy' {} and '{}' {} must have the same dims", node.Where(),
                        node.input(0)->type().ToString(), saved, node.input(1)->type().ToString());
  }
  return SetOutputs(node, out, {node.input(0)->type()});
}

// Attribute 'shape' (the forward input's dims): required, no negative dim.
StatusOr<std::vector<int64_t>> ShapeAttr(const OpNode& node) {
  const Attribute* a = node.attr("shape");
  if (a == nullptr || a->kind() != AttrKind::kInts) {
    return InvalidInput("{}: attribute 'shape' (ints) is required", node.Where());
  }
  for (int64_t d : a->ints()) {
    if (d < 0) {
      return InvalidInput("{}: attribute 'shape' {} has a negative dim", node.Where(),
                          DimsString(a->ints()));
    }
  }
  return a->ints();
}

// (dy, indices) {axis, shape} -> dx of `shape`.
Status InferGatherGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dy"));
  const TensorType& indices = node.input(1)->type();
  if (indices.dtype != DType::kI64 && indices.dtype != DType::kI32) {
    return InvalidInput("{}: input 'indices' must be i64 or i32, got {}", node.Where(),
                        indices.ToString());
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ShapeAttr(node));
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) return InvalidInput("{}: attribute 'shape' must have rank >= 1", node.Where());
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0), rank));
  std::vector<int64_t> want(shape.begin(), shape.begin() + axis);
  want.insert(want.end(), indices.dims.begin(), indices.dims.end());
  want.insert(want.end(), shape.begin() + axis + 1, shape.end());
  if (node.input(0)->dims() != want) {
    return InvalidInput("{}: input 'dy' {} does not match data {} gathered at {} along axis {}",
                        node.Where(), node.input(0)->type().ToString(), DimsString(shape),
                        indices.ToString(), axis);
  }
  return SetOutputs(node, out, {{node.input(0)->dtype(), shape}});
}

// (dy) {shape, starts, steps} -> dx of `shape`; dy[k] lands at starts + k * steps per dim.
Status InferSliceGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dy"));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ShapeAttr(node));
  const std::vector<int64_t> starts = node.GetInts("starts");
  const std::vector<int64_t> steps = node.GetInts("steps");
  const std::vector<int64_t>& dy = node.input(0)->dims();
  if (starts.size() != shape.size() || steps.size() != shape.size() || dy.size() != shape.size()) {
    return InvalidInput(
        "{}: 'dy' {}, attributes 'starts' {} and 'steps' {} "
        "must all have the rank "
        "of 'shape' {}",
        node.Where(), node.input(0)->type().ToString(), DimsString(starts), DimsString(steps),
        DimsString(shape));
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (dy[d] == 0) continue;
    // In __int128: a hostile start/step must not wrap into range.
    const __int128 last = __int128{starts[d]} + __int128{dy[d] - 1} * steps[d];
    if (steps[d] == 0 || starts[d] < 0 || starts[d] >= shape[d] || last < 0 || last >= shape[d]) {
      return InvalidInput("{}: dim {}: {} elements from {} step {} do not fit in 'shape' {}",
                          node.Where(), d, dy[d], starts[d], steps[d], DimsString(shape));
    }
  }
  return SetOutputs(node, out, {{node.input(0)->dtype(), shape}});
}

}  // namespace

Status InferGeluGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(CheckGeluApproximate(node));
  return InferActivationGrad(node, out);
}

void AddActivation(std::vector<OpDef>* ops, Activation a) {
  const KernelRowSpec unary{"T", "T", {{'T', a.types}}};
  OpDef fwd = Op(a.name, kUnary, a.attrs, a.implemented, a.canonical,
                 a.infer != nullptr ? a.infer : InferFloatUnary, a.doc);
  fwd.precision = a.precision;
  fwd.gradient = a.gradient;
  fwd.elementwise = true;
  fwd.in_place = InPlace::kInput0;
  fwd.kernel = unary;
  OpDef grad = InternalOp(a.name + "Grad", kBinary, a.attrs,
                          a.grad_infer != nullptr ? a.grad_infer : InferActivationGrad, a.grad_doc);
  grad.precision = a.precision;
  grad.gradient = GradDecision::kNone;  // no second derivatives
  grad.elementwise = true;
  grad.kernel = KernelRowSpec{"T,T", "T", {{'T', kKernelFloats}}};
  ops->push_back(std::move(fwd));
  ops->push_back(std::move(grad));
}

void AddGradMathOps(std::vector<OpDef>* ops) {
  auto add = [&](OpDef op) { ops->push_back(std::move(op)); };
  add(InternalOp("GatherGrad", kBinary, {Opt("axis", 0), Req("shape", AttrKind::kInts)},
                 InferGatherGrad,
                 "gradient of Gather's data: zeros of `shape`, dy added at the indices"));
  add(InternalOp("SliceGrad", kUnary,
                 {Req("shape", AttrKind::kInts), Req("starts", AttrKind::kInts),
                  Req("steps", AttrKind::kInts)},
                 InferSliceGrad,
                 "gradient of Slice: zeros of `shape`, dy at starts + k * steps per dim"));
}

}  // namespace a8

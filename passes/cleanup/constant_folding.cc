// The constant evaluator: dispatch and the data-movement ops (Shape, Size, Reshape, Gather,
// Concat, Slice, Transpose, Expand, Tile, Split, ...; Transpose, Expand and Tile run the CPU
// kernels). Arithmetic lives in constant_folding_math.cc, the shared helpers in
// constant_folding_util.cc.
#include "passes/cleanup/constant_folding.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <string>

#include "compiler/ir/op_table_value_shaped.h"
#include "kernels/device/movement_setup.h"
#include "kernels/emu/run_on_host.h"
#include "passes/cleanup/constant_folding_internal.h"

namespace a8 {
namespace {

using folding::Inputs;
using folding::KernelResult;
using folding::NewTensor;
using folding::Outputs;
// The movement ops fold by the backends' shared kernels, run on the host: movement_setup.h.
namespace movement = emu::movement;

StatusOr<int64_t> Axis(const Node& node, int64_t axis, int64_t rank, const char* field) {
  if (axis < -rank || axis >= rank) {
    return InvalidInput("{}: {} {} is out of range for rank {}", node.Where(), field, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

// `dims` seen as [outer, dims[axis], inner] around the node's 'axis' attribute (Gather, Concat,
// Split).
struct AxisView {
  int64_t axis = 0, outer = 1, inner = 1;
};

StatusOr<AxisView> ViewAroundAxis(const Node& node, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  AxisView v;
  A8_ASSIGN_OR_RETURN(v.axis, Axis(node, node.GetInt("axis", 0), rank, "axis"));
  for (int64_t d = 0; d < v.axis; ++d) v.outer *= dims[d];
  for (int64_t d = v.axis + 1; d < rank; ++d) v.inner *= dims[d];
  return v;
}

// Same data, new dims (Identity, Reshape, Flatten, Squeeze, Unsqueeze).
StatusOr<Outputs> WithDims(const Node& node, const TensorData& in, std::vector<int64_t> dims) {
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, in.type.dtype, std::move(dims)));
  if (out->bytes.size() != in.bytes.size()) {
    return InvalidInput("{}: cannot give {} the shape [{}]", node.Where(), in.type.ToString(),
                        fmt::join(out->type.dims, ","));
  }
  out->bytes = in.bytes;
  return Outputs{out};
}

// The axes of Squeeze/Unsqueeze/Reduce: input 1 in the canonical form, else the attribute.
StatusOr<std::optional<std::vector<int64_t>>> OptionalAxes(const Node& node, const Inputs& in) {
  if (node.has_input(1)) {
    A8_ASSIGN_OR_RETURN(auto axes, folding::IntsOf(node, in, 1, "axes"));
    return std::optional<std::vector<int64_t>>(std::move(axes));
  }
  if (node.has_attr("axes")) return std::optional<std::vector<int64_t>>(node.GetInts("axes"));
  return std::optional<std::vector<int64_t>>();
}

StatusOr<Outputs> EvalShape(const Node& node) {
  const std::vector<int64_t>& dims = node.input(0)->dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = node.GetInt("start", 0), end = node.GetInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> v(dims.begin() + start, dims.begin() + end);
  return Outputs{TensorData::FromInt64s(v, {static_cast<int64_t>(v.size())})};
}

StatusOr<Outputs> EvalReshape(const Node& node, const Inputs& in) {
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> shape, folding::IntsOf(node, in, 1, "shape"));
  const auto& src = in[0]->type.dims;
  const bool allow_zero = node.GetInt("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  bool overflow = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (i >= src.size())
        return InvalidInput("{}: shape[{}] = 0 has no input dim", node.Where(), i);
      shape[i] = src[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) return InvalidInput("{}: shape has more than one -1", node.Where());
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return InvalidInput("{}: shape[{}] = {} is negative", node.Where(), i, shape[i]);
    } else {
      overflow = overflow || __builtin_mul_overflow(known, shape[i], &known);
    }
  }
  if (overflow)
    return InvalidInput("{}: shape [{}] overflows int64", node.Where(), fmt::join(shape, ","));
  const int64_t total = in[0]->num_elements();
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      return InvalidInput("{}: cannot infer the -1 of shape [{}] for {} elements", node.Where(),
                          fmt::join(shape, ","), total);
    }
    shape[infer] = total / known;
  }
  return WithDims(node, *in[0], shape);
}

StatusOr<Outputs> EvalSqueeze(const Node& node, const Inputs& in) {
  const auto& src = in[0]->type.dims;
  const int64_t rank = static_cast<int64_t>(src.size());
  A8_ASSIGN_OR_RETURN(auto axes, OptionalAxes(node, in));
  std::set<int64_t> drop;
  if (axes) {
    for (int64_t a : *axes) {
      A8_ASSIGN_OR_RETURN(int64_t ax, Axis(node, a, rank, "axes"));
      if (src[ax] != 1)
        return InvalidInput("{}: cannot squeeze dim {} of size {}", node.Where(), ax, src[ax]);
      drop.insert(ax);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      if (src[d] == 1) drop.insert(d);
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop.count(d)) dims.push_back(src[d]);
  return WithDims(node, *in[0], dims);
}

StatusOr<Outputs> EvalUnsqueeze(const Node& node, const Inputs& in) {
  const auto& src = in[0]->type.dims;
  A8_ASSIGN_OR_RETURN(auto axes, OptionalAxes(node, in));
  if (!axes) return InvalidInput("{}: axes are missing", node.Where());
  const int64_t rank = static_cast<int64_t>(src.size() + axes->size());
  std::set<int64_t> add;
  for (int64_t a : *axes) {
    A8_ASSIGN_OR_RETURN(int64_t ax, Axis(node, a, rank, "axes"));
    if (!add.insert(ax).second) return InvalidInput("{}: axis {} repeats", node.Where(), ax);
  }
  std::vector<int64_t> dims;
  size_t k = 0;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(add.count(d) ? 1 : src[k++]);
  return WithDims(node, *in[0], dims);
}

StatusOr<Outputs> EvalFlatten(const Node& node, const Inputs& in) {
  const auto& src = in[0]->type.dims;
  const int64_t rank = static_cast<int64_t>(src.size());
  int64_t axis = node.GetInt("axis", 1);
  if (axis < -rank || axis > rank)
    return InvalidInput("{}: axis {} out of range", node.Where(), axis);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= src[d];
  return WithDims(node, *in[0], {outer, inner});
}

StatusOr<Outputs> EvalTranspose(const Node& node, const Inputs& in) {
  const auto& src = in[0]->type.dims;
  const int64_t rank = static_cast<int64_t>(src.size());
  std::vector<int64_t> perm = node.GetInts("perm");
  if (!node.has_attr("perm")) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return InvalidInput("{}: perm [{}] does not have rank {}", node.Where(), fmt::join(perm, ","),
                        rank);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t d = 0; d < rank; ++d) {
    if (sorted[d] != d)
      return InvalidInput("{}: perm [{}] is not a permutation of rank {}", node.Where(),
                          fmt::join(perm, ","), rank);
  }
  std::vector<int64_t> dims(rank);
  for (int64_t d = 0; d < rank; ++d) dims[d] = src[perm[d]];
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, in[0]->type.dtype, dims));
  A8_RETURN_IF_ERROR(KernelResult(node, emu::RunOnHost([&](emu::DevCtx& ctx) {
                                    return movement::Transpose(
                                        ctx, in[0]->type.dtype, src, perm, in[0]->bytes.data(),
                                        out->bytes.data(), out->num_elements());
                                  })));
  return Outputs{out};
}

StatusOr<Outputs> EvalGather(const Node& node, const Inputs& in) {
  const auto& src = in[0]->type.dims;
  A8_ASSIGN_OR_RETURN(AxisView v, ViewAroundAxis(node, src));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> idx, folding::IntsOf(node, in, 1, "indices"));
  std::vector<int64_t> dims(src.begin(), src.begin() + v.axis);
  dims.insert(dims.end(), in[1]->type.dims.begin(), in[1]->type.dims.end());
  dims.insert(dims.end(), src.begin() + v.axis + 1, src.end());
  // The kernel checks the indices too, but a kernel's error only leaves the node unfolded
  // (KernelResult); an index out of range in constant data is the model's error, named here.
  const int64_t n = src[v.axis];
  for (int64_t k : idx) {
    if (k < -n || k >= n) {
      return InvalidInput("{}: index {} is out of range for a dim of size {}", node.Where(), k, n);
    }
  }
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, in[0]->type.dtype, dims));
  A8_RETURN_IF_ERROR(KernelResult(node, emu::RunOnHost([&](emu::DevCtx& ctx) {
                                    // The indices are checked above, naming the node.
                                    return movement::Gather(
                                        ctx, in[0]->type.dtype, src, in[0]->bytes.data(), v.axis,
                                        in[1]->type.dtype, in[1]->type.dims, in[1]->bytes.data(),
                                        nullptr, out->bytes.data(), out->num_elements());
                                  })));
  return Outputs{out};
}

StatusOr<Outputs> EvalConcat(const Node& node, const Inputs& in) {
  const auto& first = in[0]->type.dims;
  const int64_t rank = static_cast<int64_t>(first.size());
  A8_ASSIGN_OR_RETURN(AxisView v, ViewAroundAxis(node, first));
  const int64_t axis = v.axis;
  std::vector<int64_t> dims = first;
  dims[axis] = 0;
  for (const auto& t : in) {
    if (!t) return Unsupported("{}: an input is not constant", node.Where());
    if (t->type.dtype != in[0]->type.dtype || t->type.rank() != rank) {
      return InvalidInput("{}: inputs {} and {} do not concatenate", node.Where(),
                          in[0]->type.ToString(), t->type.ToString());
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && t->type.dims[d] != first[d]) {
        return InvalidInput("{}: inputs {} and {} do not concatenate", node.Where(),
                            in[0]->type.ToString(), t->type.ToString());
      }
    }
    dims[axis] += t->type.dims[axis];
  }
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, in[0]->type.dtype, dims));
  std::vector<Dims> in_dims;
  std::vector<const void*> xs;
  for (const auto& t : in) {
    in_dims.push_back(t->type.dims);
    xs.push_back(t->bytes.data());
  }
  A8_RETURN_IF_ERROR(KernelResult(node, emu::RunOnHost([&](emu::DevCtx& ctx) {
                                    return movement::Concat(ctx, in[0]->type.dtype, in_dims, xs,
                                                            axis, out->bytes.data(),
                                                            out->num_elements());
                                  })));
  return Outputs{out};
}

StatusOr<Outputs> EvalSplit(const Node& node, const Inputs& in) {
  const auto& src = in[0]->type.dims;
  A8_ASSIGN_OR_RETURN(AxisView v, ViewAroundAxis(node, src));
  const int64_t axis = v.axis;
  const int64_t n_out = node.num_outputs();
  std::vector<int64_t> sizes;
  if (node.has_input(1)) {
    A8_ASSIGN_OR_RETURN(sizes, folding::IntsOf(node, in, 1, "split"));
  } else if (node.has_attr("split")) {
    sizes = node.GetInts("split");
  } else {
    const int64_t chunk = (src[axis] + n_out - 1) / std::max<int64_t>(n_out, 1);
    for (int64_t i = 0, left = src[axis]; i < n_out; ++i, left -= chunk) {
      sizes.push_back(std::clamp<int64_t>(left, 0, chunk));
    }
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s < 0 ? -1 : s;
  if (static_cast<int64_t>(sizes.size()) != n_out || total != src[axis]) {
    return InvalidInput("{}: split sizes [{}] do not cover dim {} of size {} in {} outputs",
                        node.Where(), fmt::join(sizes, ","), axis, src[axis], n_out);
  }
  Outputs outs;
  std::vector<void*> ys;
  for (int64_t s : sizes) {
    std::vector<int64_t> dims = src;
    dims[axis] = s;
    A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, in[0]->type.dtype, dims));
    ys.push_back(out->bytes.data());
    outs.push_back(out);
  }
  A8_RETURN_IF_ERROR(KernelResult(node, emu::RunOnHost([&](emu::DevCtx& ctx) {
                                    return movement::Split(ctx, in[0]->type.dtype, src, axis, sizes,
                                                           in[0]->bytes.data(), ys);
                                  })));
  return outs;
}

StatusOr<Outputs> EvalSlice(const Node& node, const Inputs& in) {
  const auto& src = in[0]->type.dims;
  A8_ASSIGN_OR_RETURN(auto starts, folding::IntsOf(node, in, 1, "starts"));
  A8_ASSIGN_OR_RETURN(auto ends, folding::IntsOf(node, in, 2, "ends"));
  std::vector<int64_t> axes, steps;  // empty: 0, 1, ... and 1s
  if (node.has_input(3)) {
    A8_ASSIGN_OR_RETURN(axes, folding::IntsOf(node, in, 3, "axes"));
  }
  if (node.has_input(4)) {
    A8_ASSIGN_OR_RETURN(steps, folding::IntsOf(node, in, 4, "steps"));
  }
  // The runtime's resolution (clamping as ONNX and onnxruntime define it), named for the node.
  StatusOr<SliceSpec> spec = ResolveSlice(src, starts, ends, axes, steps);
  if (!spec.ok()) return InvalidInput("{}: {}", node.Where(), spec.status().message());
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, in[0]->type.dtype, spec->out_dims()));
  A8_RETURN_IF_ERROR(KernelResult(node, emu::RunOnHost([&](emu::DevCtx& ctx) {
                                    return movement::Slice(ctx, in[0]->type.dtype, src, *spec,
                                                           in[0]->bytes.data(), out->bytes.data(),
                                                           out->num_elements());
                                  })));
  return Outputs{out};
}

StatusOr<Outputs> EvalExpand(const Node& node, const Inputs& in) {
  A8_ASSIGN_OR_RETURN(auto shape, folding::IntsOf(node, in, 1, "shape"));
  A8_ASSIGN_OR_RETURN(auto dims, folding::Broadcast(node, in[0]->type.dims, shape));
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, in[0]->type.dtype, dims));
  A8_RETURN_IF_ERROR(KernelResult(
      node, emu::RunOnHost([&](emu::DevCtx& ctx) {
        return movement::Expand(ctx, in[0]->type.dtype, in[0]->type.dims, in[0]->bytes.data(), dims,
                                out->bytes.data(), out->num_elements());
      })));
  return Outputs{out};
}

StatusOr<Outputs> EvalTile(const Node& node, const Inputs& in) {
  const auto& src = in[0]->type.dims;
  A8_ASSIGN_OR_RETURN(auto repeats, folding::IntsOf(node, in, 1, "repeats"));
  if (repeats.size() != src.size()) {
    return InvalidInput("{}: repeats has {} entries for rank {}", node.Where(), repeats.size(),
                        src.size());
  }
  std::vector<int64_t> dims = src;
  for (size_t d = 0; d < src.size(); ++d) {
    if (repeats[d] < 0) return InvalidInput("{}: repeats[{}] is negative", node.Where(), d);
    if (src[d] != 0 && repeats[d] > kMaxFoldElements) {
      return Unsupported("{}: result too large to fold", node.Where());
    }
    dims[d] = src[d] * repeats[d];
  }
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, in[0]->type.dtype, dims));
  A8_RETURN_IF_ERROR(KernelResult(node, emu::RunOnHost([&](emu::DevCtx& ctx) {
                                    return movement::Tile(ctx, in[0]->type.dtype, src, repeats,
                                                          in[0]->bytes.data(), out->bytes.data(),
                                                          out->num_elements());
                                  })));
  return Outputs{out};
}

StatusOr<Outputs> EvalConstantOfShape(const Node& node, const Inputs& in) {
  A8_ASSIGN_OR_RETURN(auto shape, folding::IntsOf(node, in, 0, "input"));
  TensorDataPtr value;
  if (const Attribute* a = node.attr("value"); a && a->kind() == AttrKind::kTensor)
    value = a->tensor();
  DType dtype = value ? value->type.dtype : DType::kF32;
  if (value && value->num_elements() != 1) {
    return InvalidInput("{}: attribute 'value' must have one element", node.Where());
  }
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, dtype, shape));
  if (value) {
    const size_t es = DTypeSize(dtype);
    for (size_t off = 0; off < out->bytes.size(); off += es)
      std::memcpy(out->bytes.data() + off, value->bytes.data(), es);
  }
  return Outputs{out};
}

// A Constant node left in the graph (IR text; the importer turns them into constants).
StatusOr<Outputs> EvalConstant(const Node& node) {
  if (const Attribute* a = node.attr("value"); a && a->kind() == AttrKind::kTensor && a->tensor()) {
    return Outputs{a->tensor()};
  }
  if (node.has_attr("value_float")) {
    return Outputs{TensorData::FromFloats({node.GetFloat("value_float", 0)}, {})};
  }
  if (node.has_attr("value_floats")) {
    const Attribute* a = node.attr("value_floats");
    if (a->kind() != AttrKind::kFloats) return InvalidInput("{}: bad 'value_floats'", node.Where());
    return Outputs{TensorData::FromFloats(a->floats(), {static_cast<int64_t>(a->floats().size())})};
  }
  if (node.has_attr("value_int")) {
    return Outputs{TensorData::FromInt64s({node.GetInt("value_int", 0)}, {})};
  }
  if (node.has_attr("value_ints")) {
    std::vector<int64_t> v = node.GetInts("value_ints");
    return Outputs{TensorData::FromInt64s(v, {static_cast<int64_t>(v.size())})};
  }
  return Unsupported("{}: Constant without a numeric value is not folded", node.Where());
}

const std::set<std::string>& MovementOps() {
  static const std::set<std::string> kOps = {
      "Identity",        "Shape",   "Size",   "Reshape", "Squeeze", "Unsqueeze", "Flatten",
      "Transpose",       "Gather",  "Concat", "Split",   "Slice",   "Expand",    "Tile",
      "ConstantOfShape", "Constant"};
  return kOps;
}

StatusOr<Outputs> EvaluateMovement(const Node& node, const Inputs& in) {
  const std::string& op = node.op();
  if (op == "Shape") return EvalShape(node);
  if (op == "Size") {
    return Outputs{TensorData::FromInt64s({node.input(0)->type().CheckedNumElements()}, {})};
  }
  if (op == "Identity") return WithDims(node, *in[0], in[0]->type.dims);
  if (op == "Reshape") return EvalReshape(node, in);
  if (op == "Squeeze") return EvalSqueeze(node, in);
  if (op == "Unsqueeze") return EvalUnsqueeze(node, in);
  if (op == "Flatten") return EvalFlatten(node, in);
  if (op == "Transpose") return EvalTranspose(node, in);
  if (op == "Gather") return EvalGather(node, in);
  if (op == "Concat") return EvalConcat(node, in);
  if (op == "Split") return EvalSplit(node, in);
  if (op == "Slice") return EvalSlice(node, in);
  if (op == "Expand") return EvalExpand(node, in);
  if (op == "Tile") return EvalTile(node, in);
  if (op == "ConstantOfShape") return EvalConstantOfShape(node, in);
  if (op == "Constant") return EvalConstant(node);
  return Unsupported("{}: not folded", node.Where());
}

}  // namespace

// The op's host implementation when its output shapes depend on its values
// (op_table_value_shaped.h).
FoldRule ValueShapedFold(const Node& node) { return FindFoldRule(node.domain(), node.op()); }

bool IsFoldableOp(const Node& node) {
  return node.domain().empty() && (MovementOps().count(node.op()) > 0 ||
                                   folding::IsMathOp(node.op()) || ValueShapedFold(node));
}

bool ReadsTypeOnly(const Node& node, int i) {
  if (!node.domain().empty()) return false;
  const std::string& op = node.op();
  return (i == 0 && (op == "Shape" || op == "Size")) || (i == 1 && op == "CastLike");
}

std::vector<TensorDataPtr> ConstantInputs(const Node& node) {
  std::vector<TensorDataPtr> out(node.num_inputs());
  for (int i = 0; i < node.num_inputs(); ++i) {
    Value* v = node.input(i);
    if (v && v->is_constant()) out[i] = v->data();
  }
  return out;
}

// How many leading inputs an op needs present (absent optional inputs come after them).
int RequiredInputs(const std::string& op) {
  if (op == "Constant") return 0;
  if (op == "Where" || op == "Range" || op == "Slice") return 3;
  if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "Gather" || op == "Pow" ||
      op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Equal" ||
      op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
      op == "And" || op == "Or" || op == "Xor" || op == "CastLike") {
    return 2;
  }
  return 1;
}

StatusOr<std::vector<TensorDataPtr>> EvaluateNode(const Node& node, const Inputs& inputs) {
  if (!IsFoldableOp(node))
    return Unsupported("{}: the evaluator does not fold this op", node.Where());
  for (int i = 0; i < node.num_inputs(); ++i) {
    if (node.has_input(i) && !ReadsTypeOnly(node, i) &&
        (i >= static_cast<int>(inputs.size()) || !inputs[i])) {
      return Unsupported("{}: input {} is not constant", node.Where(), i);
    }
  }
  const int required = RequiredInputs(node.op());
  for (int i = 0; i < required; ++i) {
    if (!node.has_input(i)) return InvalidInput("{}: input {} is missing", node.Where(), i);
  }
  if (node.op() == "Concat" || node.op() == "Sum" || node.op() == "Max" || node.op() == "Min") {
    for (int i = 0; i < node.num_inputs(); ++i) {
      if (!node.has_input(i)) return InvalidInput("{}: input {} is missing", node.Where(), i);
    }
  }
  // A value-shaped op reads its constant inputs from the node, as its shape rule does.
  const FoldRule value_shaped = ValueShapedFold(node);
  StatusOr<Outputs> out = value_shaped                     ? value_shaped(node)
                          : MovementOps().count(node.op()) ? EvaluateMovement(node, inputs)
                                                           : folding::EvaluateMath(node, inputs);
  if (!out.ok()) return out.status();
  if (static_cast<int>(out->size()) < node.num_outputs()) {
    return Unsupported("{}: the evaluator computes {} of {} outputs", node.Where(), out->size(),
                       node.num_outputs());
  }
  out->resize(node.num_outputs());
  return std::move(out).value();
}

StatusOr<std::vector<Value*>> ReplaceWithConstants(Graph& graph, Node* node,
                                                   const std::vector<TensorDataPtr>& data) {
  if (static_cast<int>(data.size()) != node->num_outputs()) {
    return Internal("{}: {} folded results for {} outputs", node->Where(), data.size(),
                    node->num_outputs());
  }
  for (int i = 0; i < node->num_outputs(); ++i) {
    if (!data[i] || data[i]->type != node->output(i)->type()) {
      return Internal(
          "{}: folded output {} has type {}, but the graph says {} (run shape-inference first)",
          node->Where(), i, data[i] ? data[i]->type.ToString() : "none",
          node->output(i)->type().ToString());
    }
  }
  // The constants take the names of the values they replace: park the uses on temporaries, erase
  // the node (which frees the names), then create the final constants.
  std::vector<std::string> names;
  std::vector<Value*> temps;
  for (int i = 0; i < node->num_outputs(); ++i) {
    Value* out = node->output(i);
    names.push_back(out->name());
    Value* tmp = graph.AddConstant(out->name() + ".folding", data[i]);
    graph.ReplaceAllUsesWith(out, tmp);
    temps.push_back(tmp);
  }
  graph.EraseNode(node);
  std::vector<Value*> result;
  for (size_t i = 0; i < temps.size(); ++i) {
    Value* c = graph.AddConstant(names[i], data[i]);
    graph.ReplaceAllUsesWith(temps[i], c);
    graph.EraseGraphValue(temps[i]);
    result.push_back(c);
  }
  return result;
}

bool IsShapeOperand(const Node& node, int operand) {
  if (!node.domain().empty()) return false;
  const std::string& op = node.op();
  if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "Unsqueeze" || op == "Squeeze" ||
      op == "Split" || op == "OneHot" || op == "TopK") {
    return operand == 1;
  }
  if (op == "Slice") return operand >= 1 && operand <= 4;
  if (op == "Pad") return operand >= 1 && operand <= 3;
  if (op == "ConstantOfShape") return operand == 0;
  if (op == "Range") return operand <= 2;
  if (op.rfind("Reduce", 0) == 0) return operand == 1;
  if (op == "Resize") return operand >= 1;
  return false;
}

}  // namespace a8

#include "compiler/onnx/import_decompose.h"

#include <fmt/format.h>

#include "compiler/onnx/import_decompose_internal.h"

namespace a8 {
namespace decompose_internal {

Status CheckArity(const DecomposeRequest& req, size_t inputs) {
  if (req.inputs.size() != inputs || req.outputs.size() != 1) {
    return InvalidInput("{}: {} takes {} inputs and 1 output, got {} and {}", req.where, req.op,
                        inputs, req.inputs.size(), req.outputs.size());
  }
  for (size_t i = 0; i < inputs; ++i) {
    if (req.inputs[i] == nullptr) return InvalidInput("{}: input {} is missing", req.where, i);
  }
  return Status::Ok();
}

}  // namespace decompose_internal

namespace {

using decompose_internal::CheckArity;
using decompose_internal::Emitter;

StatusOr<std::vector<DecomposedNode>> DecomposePRelu(Graph& g, const DecomposeRequest& req) {
  if (req.version < 7) {
    return Unsupported(
        "{}: PRelu-{} broadcasts the slope in a legacy way; a800c supports PRelu "
        "from version 7 (opset 7) on",
        req.where, req.version);
  }
  A8_RETURN_IF_ERROR(CheckArity(req, 2));
  if (!req.attrs.empty()) {
    return InvalidInput("{}: unknown attribute '{}'", req.where, req.attrs.begin()->first);
  }
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* slope = req.inputs[1];
  Value* pos = e.Emit("Relu", 14, {x}, {}, "pos", false);
  Value* neg_x = e.Emit("Neg", 13, {x}, {}, "neg_x", false);
  Value* neg = e.Emit("Relu", 14, {neg_x}, {}, "neg", false);
  Value* scaled = e.Emit("Mul", 14, {slope, neg}, {}, "scaled", false);
  e.Emit("Sub", 14, {pos, scaled}, {}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeReduceLogSum(Graph& g, const DecomposeRequest& req) {
  // Before 18 the axes are an attribute (ReduceSum's form before 13); from 18 on an input (and
  // noop_with_empty_axes, as ReduceSum-13).
  const bool axes_input = req.version >= 18;
  if (req.inputs.empty() || req.inputs.size() > (axes_input ? 2u : 1u) || req.outputs.size() != 1 ||
      req.inputs[0] == nullptr) {
    return InvalidInput("{}: ReduceLogSum-{} takes data{} and one output", req.where, req.version,
                        axes_input ? " and optional axes" : "");
  }
  for (const auto& [key, value] : req.attrs) {
    if (key != "keepdims" && !(key == "axes" && !axes_input) &&
        !(key == "noop_with_empty_axes" && axes_input)) {
      return InvalidInput("{}: unknown attribute '{}'", req.where, key);
    }
  }
  Emitter e(g, req);
  Value* sum = e.Emit("ReduceSum", axes_input ? 13 : 11, req.inputs, req.attrs, "sum", false);
  e.Emit("Log", 13, {sum}, {}, "", true);
  return e.nodes();
}

// BitwiseNot-18 (x) -> BitwiseXor(x, all ones), all ones being 0 - 1 in x's type (wrapping).
StatusOr<std::vector<DecomposedNode>> DecomposeBitwiseNot(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  if (!req.attrs.empty()) {
    return InvalidInput("{}: unknown attribute '{}'", req.where, req.attrs.begin()->first);
  }
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* zero = e.Emit("CastLike", 15, {e.Int64s("zero", {0}, {}), x}, {}, "zero", false);
  Value* one = e.Emit("CastLike", 15, {e.Int64s("one", {1}, {}), x}, {}, "one", false);
  Value* ones = e.Emit("Sub", 14, {zero, one}, {}, "all_ones", false);
  e.Emit("BitwiseXor", 18, {x, ones}, {}, "", true);
  return e.nodes();
}

}  // namespace

bool IsDecomposedOp(std::string_view op) {
  return op == "PRelu" || op == "ReduceLogSum" || op == "BitwiseNot" || IsDecomposedNnOp(op);
}

StatusOr<std::vector<DecomposedNode>> Decompose(Graph& g, DecomposeRequest req) {
  if (req.op == "PRelu") return DecomposePRelu(g, req);
  if (req.op == "ReduceLogSum") return DecomposeReduceLogSum(g, req);
  if (req.op == "BitwiseNot") return DecomposeBitwiseNot(g, req);
  if (IsDecomposedNnOp(req.op)) return DecomposeNn(g, req);
  return Internal("{}: {} is not a decomposed op", req.where, req.op);
}

}  // namespace a8

// Shape rules of elementwise ops: unary, broadcasting binary, variadic, Where, Clip, casts.
#include <fmt/format.h>

#include "compiler/ir/shape_rules.h"

namespace a8 {

Status InferSameAsInput0(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  return SetOutputs(node, out, {node.input(0)->type()});
}

namespace {

// Broadcasts every present input; `same_dtype` requires equal element types.
StatusOr<std::vector<int64_t>> BroadcastAll(const OpNode& node, bool same_dtype) {
  std::vector<int64_t> dims;
  bool first = true;
  for (int i = 0; i < node.num_inputs(); ++i) {
    if (!node.has_input(i)) continue;
    if (first) {
      dims = node.input(i)->dims();
      first = false;
      continue;
    }
    if (same_dtype && node.input(i)->dtype() != node.input(0)->dtype()) {
      return InvalidInput("{}: input {} ({}) must have the element type of input 0 ({})",
                          node.Where(), i, DTypeName(node.input(i)->dtype()),
                          DTypeName(node.input(0)->dtype()));
    }
    A8_ASSIGN_OR_RETURN(dims, BroadcastShapes(dims, node.input(i)->dims(),
                                              fmt::format("{}: input {}", node.Where(), i)));
  }
  return dims;
}

// At least `min_inputs` inputs of one dtype, broadcast together: the result has their dtype, or
// bool for a comparison.
Status InferSameDTypeBroadcast(const OpNode& node, int min_inputs, bool compare,
                               std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, min_inputs));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, BroadcastAll(node, /*same_dtype=*/true));
  return SetOutputs(node, out, {{compare ? DType::kBool : node.input(0)->dtype(), dims}});
}

}  // namespace

Status InferBroadcastBinary(const OpNode& node, std::vector<TensorType>* out) {
  return InferSameDTypeBroadcast(node, 2, /*compare=*/false, out);
}

Status InferCompareBinary(const OpNode& node, std::vector<TensorType>* out) {
  return InferSameDTypeBroadcast(node, 2, /*compare=*/true, out);
}

Status InferLogicalBinary(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  for (int i = 0; i < 2; ++i) {
    if (node.input(i)->dtype() != DType::kBool) {
      return InvalidInput("{}: input {} must be bool, got {}", node.Where(), i,
                          node.input(i)->type().ToString());
    }
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, BroadcastAll(node, /*same_dtype=*/true));
  return SetOutputs(node, out, {{DType::kBool, dims}});
}

Status InferLogicalNot(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  if (node.input(0)->dtype() != DType::kBool) {
    return InvalidInput("{}: input 'X' must be bool, got {}", node.Where(),
                        node.input(0)->type().ToString());
  }
  return SetOutputs(node, out, {node.input(0)->type()});
}

Status InferBoolUnary(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "X"));
  return SetOutputs(node, out, {{DType::kBool, node.input(0)->dims()}});
}

Status InferFloatUnary(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "X"));
  return SetOutputs(node, out, {node.input(0)->type()});
}

Status CheckGeluApproximate(const OpNode& node) {
  const std::string approximate = node.GetString("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    return InvalidInput("{}: attribute 'approximate' is '{}' (expected none or tanh)", node.Where(),
                        approximate);
  }
  return Status::Ok();
}

Status InferGelu(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(CheckGeluApproximate(node));
  return InferFloatUnary(node, out);
}

Status InferNumericUnary(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  if (node.input(0)->dtype() == DType::kBool) {
    return InvalidInput("{}: input 'X' must be numeric, got {}", node.Where(),
                        node.input(0)->type().ToString());
  }
  return SetOutputs(node, out, {node.input(0)->type()});
}

Status InferVariadic(const OpNode& node, std::vector<TensorType>* out) {
  return InferSameDTypeBroadcast(node, 1, /*compare=*/false, out);
}

Status InferPow(const OpNode& node, std::vector<TensorType>* out) {
  // Since Pow-12 the exponent may have another numeric type; the result has the base's type.
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  for (int i = 0; i < 2; ++i) {
    if (node.input(i)->dtype() == DType::kBool) {
      return InvalidInput("{}: input {} must be numeric, got bool", node.Where(),
                          i == 0 ? "X" : "Y");
    }
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, BroadcastAll(node, /*same_dtype=*/false));
  return SetOutputs(node, out, {{node.input(0)->dtype(), dims}});
}

Status InferMod(const OpNode& node, std::vector<TensorType>* out) {
  // fmod=0 on floats is floor-mod since Mod-28 and unspecified before; both are accepted here.
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  if (node.input(0)->dtype() == DType::kBool) {
    return InvalidInput("{}: input 'A' must be numeric, got bool", node.Where());
  }
  return InferBroadcastBinary(node, out);
}

Status InferWhere(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  if (node.input(0)->dtype() != DType::kBool) {
    return InvalidInput("{}: input 'condition' must be bool, got {}", node.Where(),
                        node.input(0)->type().ToString());
  }
  A8_RETURN_IF_ERROR(RequireSameDType(node, 1, "X", 2, "Y"));
  const std::string where = node.Where() + ": inputs 'condition', 'X', 'Y'";
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      BroadcastShapes(node.input(0)->dims(), node.input(1)->dims(), where));
  A8_ASSIGN_OR_RETURN(dims, BroadcastShapes(dims, node.input(2)->dims(), where));
  return SetOutputs(node, out, {{node.input(1)->dtype(), dims}});
}

Status InferClip(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  static constexpr const char* kNames[] = {"input", "min", "max"};
  for (int i = 1; i < 3; ++i) {
    if (!node.has_input(i)) continue;
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "input", i, kNames[i]));
    if (node.input(i)->type().rank() != 0) {
      return InvalidInput("{}: input '{}' must be a scalar, got {}", node.Where(), kNames[i],
                          node.input(i)->type().ToString());
    }
  }
  return SetOutputs(node, out, {node.input(0)->type()});
}

Status InferCast(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_ASSIGN_OR_RETURN(const DType to, RequiredToAttr(node));
  return SetOutputs(node, out, {{to, node.input(0)->dims()}});
}

Status InferCastLike(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  return SetOutputs(node, out, {{node.input(1)->dtype(), node.input(0)->dims()}});
}

}  // namespace a8

// Shape rules of indexing, padding and the ops that make shapes and constants: Gather,
// GatherElements, Pad, Shape, Size, ConstantOfShape, Constant, Range, Trilu, OneHot.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

Status RequireIndexType(const OpNode& node, int i, std::string_view name) {
  const DType t = node.input(i)->dtype();
  if (t != DType::kI64 && t != DType::kI32) {
    return InvalidInput("{}: input '{}' must be i32 or i64, got {}", node.Where(), name,
                        node.input(i)->type().ToString());
  }
  return Status::Ok();
}

// A constant scalar (or one-element tensor) operand.
StatusOr<TensorDataPtr> ConstantScalar(const OpNode& node, int i, std::string_view name) {
  A8_ASSIGN_OR_RETURN(TensorDataPtr data, ConstantData(node, i, name));
  if (data->type.rank() > 1 || data->num_elements() != 1) {
    return InvalidInput("{}: input '{}' must be a scalar, got {}", node.Where(), name,
                        data->type.ToString());
  }
  return data;
}

}  // namespace

Status InferGather(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  const TensorType& data = node.input(0)->type();
  const TensorType& indices = node.input(1)->type();
  A8_RETURN_IF_ERROR(RequireIndexType(node, 1, "indices"));
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0), data.rank()));
  std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  return SetOutputs(node, out, {{data.dtype, dims}});
}

Status InferGatherElements(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  const TensorType& data = node.input(0)->type();
  const TensorType& indices = node.input(1)->type();
  A8_RETURN_IF_ERROR(RequireIndexType(node, 1, "indices"));
  A8_RETURN_IF_ERROR(
      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0), data.rank()).status());
  if (indices.rank() != data.rank()) {
    return InvalidInput("{}: input 'indices' {} must have the rank of 'data' {}", node.Where(),
                        indices.ToString(), data.ToString());
  }
  return SetOutputs(node, out, {{data.dtype, indices.dims}});
}

Status InferPad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  const std::string mode = node.GetString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return InvalidInput("{}: attribute 'mode' is '{}' (expected constant, reflect, edge or wrap)",
                        node.Where(), mode);
  }
  A8_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> pads_in, IntsOperand(node, 1, "pads"));
  if (!pads_in.has_value()) {
    return InvalidInput("{}: 'pads' is required (input 1, or the attribute before opset 11)",
                        node.Where());
  }
  std::vector<int64_t> axes(x.dims.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (node.has_input(3)) {
    A8_ASSIGN_OR_RETURN(std::vector<int64_t> axes_in, ConstantInts(node, 3, "axes"));
    A8_ASSIGN_OR_RETURN(axes, NormalizeAxes(node, "axes", axes_in, x.rank()));
  }
  const std::vector<int64_t>& pads = *pads_in;
  const size_t n = axes.size();
  if (pads.size() != 2 * n) {
    return InvalidInput("{}: 'pads' {} must have {} values (2 x {} axes)", node.Where(),
                        DimsString(pads), 2 * n, n);
  }
  if (node.has_input(2)) {
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "data", 2, "constant_value"));
    const TensorType& value = node.input(2)->type();
    if (value.rank() > 1 || !value.NumElements().ok() || *value.NumElements() != 1) {
      return InvalidInput("{}: input 'constant_value' must be a scalar, got {}", node.Where(),
                          value.ToString());
    }
  }
  std::vector<int64_t> dims = x.dims;
  for (size_t i = 0; i < n; ++i) {
    const int64_t dim = x.dims[axes[i]], begin = pads[i], end = pads[i + n];
    if (begin < -kMaxAttrDim || begin > kMaxAttrDim || end < -kMaxAttrDim || end > kMaxAttrDim) {
      return InvalidInput("{}: 'pads' {} is out of range", node.Where(), DimsString(pads));
    }
    if (mode == "reflect" && ((begin > 0 && begin >= dim) || (end > 0 && end >= dim))) {
      return InvalidInput("{}: reflect pads {} and {} must be smaller than dim {} ({})",
                          node.Where(), begin, end, axes[i], dim);
    }
    if ((mode == "edge" || mode == "wrap") && dim == 0 && (begin > 0 || end > 0)) {
      return InvalidInput("{}: {} padding of the empty dim {}", node.Where(), mode, axes[i]);
    }
    if (mode == "wrap" && (begin < 0 || end < 0)) {
      return Unsupported("{}: Pad mode 'wrap' with a negative pad ({} in 'pads' {})", node.Where(),
                         std::min(begin, end), DimsString(pads));
    }
    const __int128 size = __int128{dim} + begin + end;
    if (size < 0) {
      return InvalidInput("{}: 'pads' {} remove more than dim {} ({}) holds", node.Where(),
                          DimsString(pads), axes[i], dim);
    }
    dims[axes[i]] = static_cast<int64_t>(size);
  }
  return SetOutputs(node, out, {{x.dtype, dims}});
}

Status InferShape(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const int64_t rank = node.input(0)->type().rank();
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp(node.GetInt("start", 0));
  const int64_t end = node.has_attr("end") ? clamp(node.GetInt("end", rank)) : rank;
  return SetOutputs(node, out, {{DType::kI64, {std::max<int64_t>(0, end - start)}}});
}

Status InferSize(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  return SetOutputs(node, out, {{DType::kI64, {}}});
}

Status InferConstantOfShape(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ConstantShape(node, 0, "input"));
  DType dtype = DType::kF32;
  if (const Attribute* value = node.attr("value")) {
    if (value->kind() != AttrKind::kTensor || value->tensor() == nullptr ||
        value->tensor()->type.rank() > 1 || value->tensor()->num_elements() != 1) {
      return InvalidInput("{}: attribute 'value' must be a one-element tensor", node.Where());
    }
    dtype = value->tensor()->type.dtype;
  }
  return SetOutputs(node, out, {{dtype, shape}});
}

Status InferConstant(const OpNode& node, std::vector<TensorType>* out) {
  const Attribute* found = nullptr;
  std::string found_name;
  for (const auto& [name, attr] : node.attrs()) {
    if (name.rfind("a8.", 0) == 0) continue;
    if (found != nullptr) {
      return InvalidInput("{}: exactly one value attribute is allowed, got '{}' and '{}'",
                          node.Where(), found_name, name);
    }
    found = &attr;
    found_name = name;
  }
  if (found == nullptr) return InvalidInput("{}: has no value attribute", node.Where());
  TensorType type;
  if (found_name == "value" && found->kind() == AttrKind::kTensor && found->tensor()) {
    type = found->tensor()->type;
  } else if (found_name == "value_float" && found->kind() == AttrKind::kFloat) {
    type = {DType::kF32, {}};
  } else if (found_name == "value_floats" && found->kind() == AttrKind::kFloats) {
    type = {DType::kF32, {static_cast<int64_t>(found->floats().size())}};
  } else if (found_name == "value_int" && found->kind() == AttrKind::kInt) {
    type = {DType::kI64, {}};
  } else if (found_name == "value_ints" && found->kind() == AttrKind::kInts) {
    type = {DType::kI64, {static_cast<int64_t>(found->ints().size())}};
  } else if (found_name == "value_string" || found_name == "value_strings") {
    return Unsupported("{}: string constants are not supported", node.Where());
  } else {
    return InvalidInput("{}: attribute '{}' ({}) is not a constant value", node.Where(), found_name,
                        AttrKindName(found->kind()));
  }
  return SetOutputs(node, out, {type});
}

Status InferRange(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "start", 1, "limit"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "start", 2, "delta"));
  const DType dtype = node.input(0)->dtype();
  if (dtype == DType::kBool || IsUnsigned(dtype) || dtype == DType::kI8) {
    return InvalidInput("{}: Range does not take {} inputs", node.Where(), DTypeName(dtype));
  }
  A8_ASSIGN_OR_RETURN(TensorDataPtr start, ConstantScalar(node, 0, "start"));
  A8_ASSIGN_OR_RETURN(TensorDataPtr limit, ConstantScalar(node, 1, "limit"));
  A8_ASSIGN_OR_RETURN(TensorDataPtr delta, ConstantScalar(node, 2, "delta"));
  int64_t count = 0;
  if (IsFloat(dtype)) {
    const double s = start->GetDouble(0), l = limit->GetDouble(0), d = delta->GetDouble(0);
    const double n = std::ceil((l - s) / d);
    if (d == 0 || !std::isfinite(n) || n > 9.0e18) {
      return InvalidInput("{}: Range({}, {}, {}) has no finite length", node.Where(), s, l, d);
    }
    count = n > 0 ? static_cast<int64_t>(n) : 0;
  } else {
    const __int128 s = start->GetInt64(0), l = limit->GetInt64(0), d = delta->GetInt64(0);
    if (d == 0) return InvalidInput("{}: input 'delta' is 0", node.Where());
    const __int128 span = l - s;
    // ceil(span / d) for either sign of d.
    __int128 n = span / d;
    if (span % d != 0 && ((span > 0) == (d > 0))) ++n;
    if (n > std::numeric_limits<int64_t>::max()) {
      return InvalidInput("{}: Range has more than 2^63 elements", node.Where());
    }
    count = n > 0 ? static_cast<int64_t>(n) : 0;
  }
  return SetOutputs(node, out, {{dtype, {count}}});
}

Status InferTrilu(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  if (x.rank() < 2) {
    return InvalidInput("{}: input 'input' must have rank >= 2, got {}", node.Where(),
                        x.ToString());
  }
  if (node.has_input(1)) {
    const TensorType& k = node.input(1)->type();
    if (k.dtype != DType::kI64 || k.rank() != 0) {
      return InvalidInput("{}: input 'k' must be an i64 scalar, got {}", node.Where(),
                          k.ToString());
    }
  }
  return SetOutputs(node, out, {x});
}

Status InferOneHot(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  const TensorType& indices = node.input(0)->type();
  const TensorType& values = node.input(2)->type();
  if (indices.dtype == DType::kBool) {
    return InvalidInput("{}: input 'indices' must be numeric, got {}", node.Where(),
                        indices.ToString());
  }
  if (values.dims != std::vector<int64_t>{2}) {
    return InvalidInput("{}: input 'values' must be [2] (off, on), got {}", node.Where(),
                        values.ToString());
  }
  A8_ASSIGN_OR_RETURN(TensorDataPtr depth_data, ConstantScalar(node, 1, "depth"));
  const double depth_value = depth_data->GetDouble(0);
  if (!(depth_value >= 1) || depth_value > static_cast<double>(kMaxAttrDim)) {
    return InvalidInput("{}: input 'depth' must be from 1 to {}, got {}", node.Where(), kMaxAttrDim,
                        depth_value);
  }
  const int64_t depth = static_cast<int64_t>(depth_value);
  A8_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", -1),
                                                  indices.rank() + 1));
  std::vector<int64_t> dims = indices.dims;
  dims.insert(dims.begin() + axis, depth);
  return SetOutputs(node, out, {{values.dtype, dims}});
}

}  // namespace a8

// Shape rules of reductions: Reduce*, ArgMax/ArgMin, CumSum.
#include <fmt/format.h>

#include "compiler/ir/shape_rules.h"

namespace a8 {

Status InferReduce(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  A8_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes_operand,
                      IntsOperand(node, 1, "axes"));
  const bool keepdims = node.GetInt("keepdims", 1) != 0;
  std::vector<int64_t> axes = axes_operand.value_or(std::vector<int64_t>{});
  if (axes.empty()) {
    // No axes: all of them, unless noop_with_empty_axes makes the op an identity.
    if (node.GetInt("noop_with_empty_axes", 0) != 0) return SetOutputs(node, out, {x});
    for (int64_t i = 0; i < x.rank(); ++i) axes.push_back(i);
  }
  A8_ASSIGN_OR_RETURN(axes, NormalizeAxes(node, "axes", axes, x.rank()));
  std::vector<bool> reduced(x.dims.size(), false);
  for (int64_t a : axes) reduced[a] = true;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    if (!reduced[i]) {
      dims.push_back(x.dims[i]);
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  return SetOutputs(node, out, {{x.dtype, dims}});
}

Status InferArgReduce(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  if (x.dtype == DType::kBool) {
    return InvalidInput("{}: input 'data' must be numeric, got {}", node.Where(), x.ToString());
  }
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0), x.rank()));
  std::vector<int64_t> dims = x.dims;
  if (node.GetInt("keepdims", 1) != 0) {
    dims[axis] = 1;
  } else {
    dims.erase(dims.begin() + axis);
  }
  return SetOutputs(node, out, {{DType::kI64, dims}});
}

Status InferCumSum(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  const TensorType& x = node.input(0)->type();
  const TensorType& axis = node.input(1)->type();
  if (x.dtype == DType::kBool) {
    return InvalidInput("{}: input 'x' must be numeric, got {}", node.Where(), x.ToString());
  }
  if ((axis.dtype != DType::kI64 && axis.dtype != DType::kI32) || axis.rank() > 1 ||
      !axis.NumElements().ok() || *axis.NumElements() != 1) {
    return InvalidInput("{}: input 'axis' must be one i32 or i64 value, got {}", node.Where(),
                        axis.ToString());
  }
  if (const TensorDataPtr& data = node.input(1)->data()) {
    A8_RETURN_IF_ERROR(NormalizeAxis(node, "input 'axis'", data->GetInt64(0), x.rank()).status());
  }
  return SetOutputs(node, out, {x});
}

}  // namespace a8

// Shape rules of the ai.onnx.preview.training ops: Gradient, Adam, Momentum, Adagrad.
//
// The optimizers take (R, T, then the tensors grouped by kind: X_1..X_n, G_1..G_n, and one group
// per optimizer state) and return the new X_1..X_n followed by one group per new state. Every
// tensor of a group i has the shape of X_i.
#include <fmt/format.h>

#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

// `groups` input groups after R and T (X, G, and the states), `groups - 1` output groups.
Status InferOptimizer(const OpNode& node, int groups, const char* layout,
                      std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, node.num_inputs()));
  const int tensors = node.num_inputs() - 2;
  if (tensors < groups || tensors % groups != 0) {
    return InvalidInput("{}: has {} inputs; expected R, T and {} groups of n tensors ({})",
                        node.Where(), node.num_inputs(), groups, layout);
  }
  const int n = tensors / groups;
  if (node.num_outputs() != (groups - 1) * n) {
    return InvalidInput("{}: has {} outputs; expected {} ({} groups of {})", node.Where(),
                        node.num_outputs(), (groups - 1) * n, groups - 1, n);
  }
  const TensorType& r = node.input(0)->type();
  const TensorType& t = node.input(1)->type();
  if (!IsFloat(r.dtype) || r.rank() != 0) {
    return InvalidInput("{}: input 'R' (learning rate) must be a float scalar, got {}",
                        node.Where(), r.ToString());
  }
  if (t.dtype != DType::kI64 || t.rank() != 0) {
    return InvalidInput("{}: input 'T' (update count) must be an i64 scalar, got {}", node.Where(),
                        t.ToString());
  }
  for (int i = 0; i < n; ++i) {
    const TensorType& x = node.input(2 + i)->type();
    A8_RETURN_IF_ERROR(RequireFloat(node, 2 + i, node.input(2 + i)->name()));
    for (int g = 1; g < groups; ++g) {
      const TensorType& other = node.input(2 + g * n + i)->type();
      if (other != x) {
        return InvalidInput(
            "{}: input {} {} must have the type of the tensor it updates, "
            "input {} {}",
            node.Where(), 2 + g * n + i, other.ToString(), 2 + i, x.ToString());
      }
    }
  }
  std::vector<TensorType> types;
  for (int g = 0; g < groups - 1; ++g) {
    // Output group 0 is the new X; output group g > 0 is the new state of input group g + 1.
    const int input_group = g == 0 ? 0 : g + 1;
    for (int i = 0; i < n; ++i) types.push_back(node.input(2 + input_group * n + i)->type());
  }
  return SetOutputs(node, out, std::move(types));
}

}  // namespace

Status InferGradient(const OpNode& node, std::vector<TensorType>* out) {
  // Inputs are the values of xs then zs; output i is the gradient of y with respect to xs[i],
  // so it has the type of input i.
  const std::vector<std::string> xs =
      node.attr("xs") != nullptr && node.attr("xs")->kind() == AttrKind::kStrings
          ? node.attr("xs")->strings()
          : std::vector<std::string>{};
  const std::vector<std::string> zs =
      node.attr("zs") != nullptr && node.attr("zs")->kind() == AttrKind::kStrings
          ? node.attr("zs")->strings()
          : std::vector<std::string>{};
  if (xs.empty())
    return InvalidInput("{}: attribute 'xs' must name at least one tensor", node.Where());
  if (node.GetString("y", "").empty()) {
    return InvalidInput("{}: attribute 'y' must name the differentiated tensor", node.Where());
  }
  const int expected_inputs = static_cast<int>(xs.size() + zs.size());
  if (node.num_inputs() != expected_inputs) {
    return InvalidInput("{}: has {} inputs; expected {} (one per name in 'xs' and 'zs')",
                        node.Where(), node.num_inputs(), expected_inputs);
  }
  if (node.num_outputs() != static_cast<int>(xs.size())) {
    return InvalidInput("{}: has {} outputs; expected {} (one per name in 'xs')", node.Where(),
                        node.num_outputs(), xs.size());
  }
  A8_RETURN_IF_ERROR(RequireInputs(node, expected_inputs));
  std::vector<TensorType> types;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!IsFloat(node.input(static_cast<int>(i))->dtype())) {
      return InvalidInput("{}: cannot differentiate with respect to '{}' of type {}", node.Where(),
                          xs[i], node.input(static_cast<int>(i))->type().ToString());
    }
    types.push_back(node.input(static_cast<int>(i))->type());
  }
  return SetOutputs(node, out, std::move(types));
}

Status InferAdam(const OpNode& node, std::vector<TensorType>* out) {
  return InferOptimizer(node, 4, "X, G, V, H", out);
}

Status InferMomentum(const OpNode& node, std::vector<TensorType>* out) {
  const std::string mode = node.GetString("mode", "");
  if (mode != "standard" && mode != "nesterov") {
    return InvalidInput("{}: attribute 'mode' is '{}' (expected standard or nesterov)",
                        node.Where(), mode);
  }
  return InferOptimizer(node, 3, "X, G, V", out);
}

Status InferAdagrad(const OpNode& node, std::vector<TensorType>* out) {
  return InferOptimizer(node, 3, "X, G, H", out);
}

}  // namespace a8

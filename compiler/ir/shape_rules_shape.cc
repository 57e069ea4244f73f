// Shape rules of shape-manipulation ops: Reshape, Flatten, Transpose, Concat, Split, Slice,
// Squeeze, Unsqueeze, Expand, Tile. (Gather, Pad and the ops that make shapes and constants are
// in shape_rules_data.cc.)
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "compiler/ir/shape_rules.h"

namespace a8 {

Status InferReshape(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ConstantInts(node, 1, "shape"));
  const std::vector<int64_t>& in = node.input(0)->dims();
  const bool allowzero = node.GetInt("allowzero", 0) != 0;
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) {
        return InvalidInput("{}: input 'shape' {} has more than one -1", node.Where(),
                            DimsString(shape));
      }
      infer_at = static_cast<int>(i);
    } else if (shape[i] == 0 && !allowzero) {
      if (i >= in.size()) {
        return InvalidInput("{}: input 'shape' {} copies dimension {} (0) but 'data' has rank {}",
                            node.Where(), DimsString(shape), i, in.size());
      }
      shape[i] = in[i];
    } else if (shape[i] < 0) {
      return InvalidInput("{}: input 'shape' {} has invalid dimension {}", node.Where(),
                          DimsString(shape), shape[i]);
    }
  }
  if (allowzero && infer_at >= 0 && std::count(shape.begin(), shape.end(), 0) > 0) {
    return InvalidInput("{}: input 'shape' {} has both 0 and -1 with allowzero=1", node.Where(),
                        DimsString(shape));
  }
  A8_ASSIGN_OR_RETURN(int64_t total, NodeProduct(node, in));
  if (infer_at >= 0) {
    std::vector<int64_t> known = shape;
    known[infer_at] = 1;
    A8_ASSIGN_OR_RETURN(int64_t known_product, NodeProduct(node, known));
    if (known_product == 0 || total % known_product != 0) {
      return InvalidInput("{}: cannot reshape {} to {}", node.Where(),
                          node.input(0)->type().ToString(),
                          DimsString(node.input(1)->data()->ToInt64Vector()));
    }
    shape[infer_at] = total / known_product;
  }
  StatusOr<int64_t> product = CheckedProduct(shape);
  if (!product.ok() || *product != total) {
    return InvalidInput("{}: cannot reshape {} ({} elements) to {}", node.Where(),
                        node.input(0)->type().ToString(), total,
                        DimsString(node.input(1)->data()->ToInt64Vector()));
  }
  return SetOutputs(node, out, {{node.input(0)->dtype(), shape}});
}

Status InferFlatten(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  int64_t axis = node.GetInt("axis", 1);
  // axis may equal rank here: [prod(all), 1].
  if (axis < -x.rank() || axis > x.rank()) {
    return InvalidInput("{}: attribute 'axis' {} is out of range for rank {} (expected [{}, {}])",
                        node.Where(), axis, x.rank(), -x.rank(), x.rank());
  }
  if (axis < 0) axis += x.rank();
  A8_ASSIGN_OR_RETURN(int64_t outer, NodeProduct(node, {x.dims.begin(), x.dims.begin() + axis}));
  A8_ASSIGN_OR_RETURN(int64_t inner, NodeProduct(node, {x.dims.begin() + axis, x.dims.end()}));
  return SetOutputs(node, out, {{x.dtype, {outer, inner}}});
}

Status InferTranspose(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  std::vector<int64_t> perm(x.dims.size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (node.has_attr("perm")) perm = node.GetInts("perm");
  if (static_cast<int64_t>(perm.size()) != x.rank()) {
    return InvalidInput("{}: attribute 'perm' {} must have {} values (the rank of {})",
                        node.Where(), DimsString(perm), x.rank(), x.ToString());
  }
  std::vector<bool> seen(perm.size(), false);
  std::vector<int64_t> dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[p]) {
      return InvalidInput("{}: attribute 'perm' {} is not a permutation of [0, {})", node.Where(),
                          DimsString(perm), x.rank());
    }
    seen[p] = true;
    dims.push_back(x.dims[p]);
  }
  return SetOutputs(node, out, {{x.dtype, dims}});
}

Status InferConcat(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, node.num_inputs()));
  if (node.num_inputs() < 1) return InvalidInput("{}: needs at least one input", node.Where());
  const TensorType& first = node.input(0)->type();
  if (!node.has_attr("axis")) {
    return InvalidInput("{}: required attribute 'axis' is missing", node.Where());
  }
  A8_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0), first.rank()));
  std::vector<int64_t> dims = first.dims;
  dims[axis] = 0;
  for (int i = 0; i < node.num_inputs(); ++i) {
    const TensorType& t = node.input(i)->type();
    if (t.dtype != first.dtype || t.rank() != first.rank()) {
      return InvalidInput("{}: input {} {} does not match input 0 {} in element type and rank",
                          node.Where(), i, t.ToString(), first.ToString());
    }
    for (int64_t d = 0; d < t.rank(); ++d) {
      if (d != axis && t.dims[d] != first.dims[d]) {
        return InvalidInput("{}: input {} {} differs from input 0 {} in dim {} (axis is {})",
                            node.Where(), i, t.ToString(), first.ToString(), d, axis);
      }
    }
    if (__builtin_add_overflow(dims[axis], t.dims[axis], &dims[axis])) {
      return InvalidInput("{}: the concatenated dim overflows int64", node.Where());
    }
  }
  return SetOutputs(node, out, {{first.dtype, dims}});
}

Status InferSplit(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0), x.rank()));
  const int64_t dim = x.dims[axis];
  const int64_t n = node.num_outputs();
  A8_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> split, IntsOperand(node, 1, "split"));
  std::vector<int64_t> sizes;
  if (split.has_value() && !split->empty()) {
    if (node.has_attr("num_outputs")) {
      return InvalidInput("{}: 'split' and attribute 'num_outputs' cannot both be given",
                          node.Where());
    }
    if (static_cast<int64_t>(split->size()) != n) {
      return InvalidInput("{}: 'split' {} has {} sizes but the node has {} outputs", node.Where(),
                          DimsString(*split), split->size(), n);
    }
    int64_t total = 0;
    for (int64_t s : *split) {
      if (s < 0) {
        return InvalidInput("{}: 'split' {} has a negative size", node.Where(), DimsString(*split));
      }
      if (s > dim - total) {
        return InvalidInput("{}: 'split' {} sums to more than dim {} of {} ({})", node.Where(),
                            DimsString(*split), axis, x.ToString(), dim);
      }
      total += s;  // stays <= dim: checked above
    }
    if (total != dim) {
      return InvalidInput("{}: 'split' {} sums to {}, but dim {} of {} is {}", node.Where(),
                          DimsString(*split), total, axis, x.ToString(), dim);
    }
    sizes = *split;
  } else if (node.has_attr("num_outputs")) {
    const int64_t k = node.GetInt("num_outputs", 0);
    if (k < 1 || k != n) {
      return InvalidInput("{}: attribute 'num_outputs' is {} but the node has {} outputs",
                          node.Where(), k, n);
    }
    // Uneven: every chunk has ceil(dim / k) elements but the last, which is smaller.
    const int64_t chunk = dim % k == 0 ? dim / k : dim / k + 1;
    const int64_t last = dim - chunk * (k - 1);
    if (last < 0) {
      return InvalidInput("{}: dim {} of {} ({}) cannot be split into {} chunks of {}",
                          node.Where(), axis, x.ToString(), dim, k, chunk);
    }
    sizes.assign(k, chunk);
    sizes.back() = last;
  } else {
    if (n < 1 || dim % n != 0) {
      return InvalidInput("{}: dim {} of {} ({}) does not split evenly into {} outputs",
                          node.Where(), axis, x.ToString(), dim, n);
    }
    sizes.assign(n, dim / n);
  }
  std::vector<TensorType> types;
  for (int64_t s : sizes) {
    std::vector<int64_t> dims = x.dims;
    dims[axis] = s;
    types.push_back({x.dtype, dims});
  }
  return SetOutputs(node, out, std::move(types));
}

Status InferSlice(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  A8_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> starts, IntsOperand(node, 1, "starts"));
  A8_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> ends, IntsOperand(node, 2, "ends"));
  A8_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes_in, IntsOperand(node, 3, "axes"));
  A8_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> steps_in, IntsOperand(node, 4, "steps"));
  if (!starts.has_value() || !ends.has_value()) {
    return InvalidInput("{}: 'starts' and 'ends' are required", node.Where());
  }
  const size_t n = starts->size();
  std::vector<int64_t> axes(n), steps(n, 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (axes_in.has_value()) axes = *axes_in;
  if (steps_in.has_value()) steps = *steps_in;
  if (ends->size() != n || axes.size() != n || steps.size() != n) {
    return InvalidInput(
        "{}: 'starts' {}, 'ends' {}, 'axes' {} and 'steps' {} must have the same "
        "length",
        node.Where(), DimsString(*starts), DimsString(*ends), DimsString(axes), DimsString(steps));
  }
  A8_ASSIGN_OR_RETURN(axes, NormalizeAxes(node, "axes", axes, x.rank()));
  std::vector<int64_t> dims = x.dims;
  for (size_t i = 0; i < n; ++i) {
    const int64_t step = steps[i];
    if (step == 0) return InvalidInput("{}: 'steps' {} has a 0", node.Where(), DimsString(steps));
    const __int128 dim = x.dims[axes[i]];
    __int128 start = (*starts)[i], end = (*ends)[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    // Clamping per the ONNX spec: [0, dim] going forward, [-1, dim-1] going backward.
    if (step > 0) {
      start = std::clamp<__int128>(start, 0, dim);
      end = std::clamp<__int128>(end, 0, dim);
    } else {
      start = std::clamp<__int128>(start, 0, dim - 1);
      end = std::clamp<__int128>(end, -1, dim - 1);
    }
    const __int128 span = step > 0 ? end - start : start - end;
    const __int128 abs_step = step > 0 ? __int128{step} : -__int128{step};
    dims[axes[i]] = span <= 0 ? 0 : static_cast<int64_t>((span + abs_step - 1) / abs_step);
  }
  return SetOutputs(node, out, {{x.dtype, dims}});
}

Status InferSqueeze(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  A8_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes_in, IntsOperand(node, 1, "axes"));
  std::vector<bool> drop(x.dims.size(), false);
  if (axes_in.has_value()) {
    A8_ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalizeAxes(node, "axes", *axes_in, x.rank()));
    for (int64_t a : axes) {
      if (x.dims[a] != 1) {
        return InvalidInput("{}: cannot squeeze axis {} of {}: its size is {}, not 1", node.Where(),
                            a, x.ToString(), x.dims[a]);
      }
      drop[a] = true;
    }
  } else {
    for (size_t i = 0; i < x.dims.size(); ++i) drop[i] = x.dims[i] == 1;
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    if (!drop[i]) dims.push_back(x.dims[i]);
  }
  return SetOutputs(node, out, {{x.dtype, dims}});
}

Status InferUnsqueeze(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  A8_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes_in, IntsOperand(node, 1, "axes"));
  if (!axes_in.has_value()) {
    return InvalidInput("{}: 'axes' is required (input 1, or the attribute before opset 13)",
                        node.Where());
  }
  const int64_t rank = x.rank() + static_cast<int64_t>(axes_in->size());
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalizeAxes(node, "axes", *axes_in, rank));
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) inserted[a] = true;
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) dims.push_back(inserted[i] ? 1 : x.dims[next++]);
  return SetOutputs(node, out, {{x.dtype, dims}});
}

Status InferExpand(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ConstantShape(node, 1, "shape"));
  A8_ASSIGN_OR_RETURN(
      std::vector<int64_t> dims,
      BroadcastShapes(node.input(0)->dims(), shape, node.Where() + ": input 'input' and 'shape'"));
  return SetOutputs(node, out, {{node.input(0)->dtype(), dims}});
}

Status InferTile(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  const TensorType& x = node.input(0)->type();
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ConstantInts(node, 1, "repeats"));
  if (static_cast<int64_t>(repeats.size()) != x.rank()) {
    return InvalidInput("{}: input 'repeats' {} must have {} values (the rank of {})", node.Where(),
                        DimsString(repeats), x.rank(), x.ToString());
  }
  std::vector<int64_t> dims = x.dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (repeats[i] < 0) {
      return InvalidInput("{}: input 'repeats' {} has a negative value", node.Where(),
                          DimsString(repeats));
    }
    A8_ASSIGN_OR_RETURN(dims[i], NodeProduct(node, {dims[i], repeats[i]}));
  }
  return SetOutputs(node, out, {{x.dtype, dims}});
}

}  // namespace a8

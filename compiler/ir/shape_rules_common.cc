// Helpers shared by the shape rules: broadcasting, axis normalization, constant operands.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <vector>

#include "compiler/ir/shape_rules.h"

namespace a8 {

std::string DimsString(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                               const std::vector<int64_t>& b,
                                               std::string_view where) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right; missing leading dims are 1.
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return InvalidInput("{}: shapes {} and {} are not broadcastable", where, DimsString(a),
                          DimsString(b));
    }
  }
  return out;
}

bool BroadcastsTo(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  if (from.size() > to.size()) return false;
  const size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[offset + i]) return false;
  }
  return true;
}

StatusOr<int64_t> NormalizeAxis(const OpNode& node, std::string_view field, int64_t axis,
                                int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return InvalidInput("{}: {} {} is out of range for rank {} (expected [{}, {}])", node.Where(),
                        field, axis, rank, -rank, rank - 1);
  }
  return axis < 0 ? axis + rank : axis;
}

StatusOr<TensorDataPtr> ConstantData(const OpNode& node, int i, std::string_view field) {
  const OpValue* v = node.input(i);
  if (v == nullptr) return InvalidInput("{}: input '{}' is missing", node.Where(), field);
  if (v->data() == nullptr) {
    // A graph input (or a value computed from one) can be frozen from the command line; say how.
    const std::string in = v->FeedingGraphInput();
    const std::string hint =
        in.empty() ? std::string()
                   : fmt::format("; freeze graph input '{}' with --bind={}=FILE.npy", in, in);
    return Unsupported("{}: input '{}' must be a constant (a800c needs static shapes){}",
                       node.Where(), field, hint);
  }
  return v->data();
}

StatusOr<std::vector<int64_t>> ConstantInts(const OpNode& node, int i, std::string_view field) {
  A8_ASSIGN_OR_RETURN(TensorDataPtr data, ConstantData(node, i, field));
  if (!IsInteger(data->type.dtype)) {
    return InvalidInput("{}: input '{}' must be an integer tensor, got {}", node.Where(), field,
                        data->type.ToString());
  }
  return data->ToInt64Vector();
}

void SameAutoPads(bool upper, bool transpose, const std::vector<int64_t>& spatial,
                  const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& dilations, std::vector<int64_t>* pads) {
  const size_t n = spatial.size();
  for (size_t i = 0; i < n; ++i) {
    const int64_t effective_kernel = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t residual = transpose ? 0 : spatial[i] % strides[i];
    const int64_t total =
        std::max<int64_t>(0, effective_kernel - (residual == 0 ? strides[i] : residual));
    const int64_t small = total / 2, big = total - small;
    (*pads)[i] = upper ? small : big;
    (*pads)[i + n] = upper ? big : small;
  }
}

StatusOr<std::vector<int64_t>> ConstantShape(const OpNode& node, int i, std::string_view field) {
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ConstantInts(node, i, field));
  if (node.input(i)->type().rank() != 1) {
    return InvalidInput("{}: input '{}' must be 1-D, got {}", node.Where(), field,
                        node.input(i)->type().ToString());
  }
  for (int64_t d : shape) {
    if (d < 0) {
      return InvalidInput("{}: input '{}' {} has a negative dim", node.Where(), field,
                          DimsString(shape));
    }
  }
  return shape;
}

StatusOr<std::optional<std::vector<int64_t>>> IntsOperand(const OpNode& node, int i,
                                                          const std::string& name) {
  if (node.has_input(i)) {
    A8_ASSIGN_OR_RETURN(std::vector<int64_t> v, ConstantInts(node, i, name));
    return std::optional<std::vector<int64_t>>(std::move(v));
  }
  if (const Attribute* a = node.attr(name)) {
    if (a->kind() != AttrKind::kInts) {
      return InvalidInput("{}: attribute '{}' must be ints, got {}", node.Where(), name,
                          AttrKindName(a->kind()));
    }
    return std::optional<std::vector<int64_t>>(a->ints());
  }
  return std::optional<std::vector<int64_t>>();
}

StatusOr<std::vector<int64_t>> NormalizeAxes(const OpNode& node, std::string_view field,
                                             const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    A8_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(node, field, axis, rank));
    if (seen[a]) {
      return InvalidInput("{}: {} {} names axis {} twice", node.Where(), field, DimsString(axes),
                          a);
    }
    seen[a] = true;
    out.push_back(a);
  }
  return out;
}

StatusOr<int64_t> NodeProduct(const OpNode& node, const std::vector<int64_t>& dims) {
  StatusOr<int64_t> product = CheckedProduct(dims);
  if (!product.ok()) return InvalidInput("{}: {}", node.Where(), product.status().message());
  return product;
}

Status RequireInputs(const OpNode& node, int count) {
  for (int i = 0; i < count; ++i) {
    if (!node.has_input(i)) {
      return InvalidInput("{}: required input {} is missing", node.Where(), i);
    }
  }
  return Status::Ok();
}

StatusOr<DType> RequiredToAttr(const OpNode& node) {
  const Attribute* to = node.attr("to");
  if (to == nullptr || to->kind() != AttrKind::kInt) {
    return InvalidInput("{}: attribute 'to' (int) is required", node.Where());
  }
  StatusOr<DType> dtype = DTypeFromOnnx(static_cast<int>(to->i()));
  if (!dtype.ok()) return dtype.status().WithContext(node.Where() + ": attribute 'to'");
  return dtype;
}

Status RequireSameDType(const OpNode& node, int a, std::string_view name_a, int b,
                        std::string_view name_b) {
  const DType ta = node.input(a)->dtype(), tb = node.input(b)->dtype();
  if (ta != tb) {
    return InvalidInput("{}: inputs '{}' ({}) and '{}' ({}) must have the same element type",
                        node.Where(), name_a, DTypeName(ta), name_b, DTypeName(tb));
  }
  return Status::Ok();
}

Status RequireRank(const OpNode& node, int i, std::string_view name, int64_t rank) {
  const int64_t r = node.input(i)->type().rank();
  if (r != rank) {
    return InvalidInput("{}: input '{}' must have rank {}, got {}", node.Where(), name, rank,
                        node.input(i)->type().ToString());
  }
  return Status::Ok();
}

Status RequireFloat(const OpNode& node, int i, std::string_view name) {
  if (!IsFloat(node.input(i)->dtype())) {
    return InvalidInput("{}: input '{}' must be a floating-point tensor, got {}", node.Where(),
                        name, node.input(i)->type().ToString());
  }
  return Status::Ok();
}

Status RequireDyDims(const OpNode& node, const std::vector<int64_t>& dims,
                     std::string_view forward_op) {
  if (node.input(0)->dims() == dims) return Status::Ok();
  return InvalidInput("{}: input 'dy' {} must have {}'s output dims {}", node.Where(),
                      node.input(0)->type().ToString(), forward_op, DimsString(dims));
}

Status CheckedType(const OpNode& node, DType dtype, std::vector<int64_t> dims, TensorType* out) {
  for (int64_t d : dims) {
    if (d < 0) {
      return InvalidInput("{}: inferred a negative dimension in {}", node.Where(),
                          DimsString(dims));
    }
  }
  TensorType t{dtype, std::move(dims)};
  if (!CheckedProduct(t.dims).ok()) {
    return InvalidInput("{}: output shape {} has more elements than int64 can count", node.Where(),
                        DimsString(t.dims));
  }
  *out = std::move(t);
  return Status::Ok();
}

Status SetOutputs(const OpNode& node, std::vector<TensorType>* out, std::vector<TensorType> types) {
  out->clear();
  for (TensorType& t : types) {
    TensorType checked;
    A8_RETURN_IF_ERROR(CheckedType(node, t.dtype, std::move(t.dims), &checked));
    out->push_back(std::move(checked));
  }
  return Status::Ok();
}

}  // namespace a8

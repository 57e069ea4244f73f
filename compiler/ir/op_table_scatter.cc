// ScatterND, ScatterElements (ONNX 11/13/16/18) and TopK (ONNX 1/10/11/24), with their shape
// rules. One kernel body each, run by both backends (kernels/device/scatter.h); the gradient
// rules are in passes/autodiff/grad_rules_scatter.cc. The deprecated Scatter (9/11) imports as
// ScatterElements-11 (compiler/onnx/import_decompose.cc); TopK-1's attribute k becomes the
// input K (compiler/onnx/import_upgrade.cc).
#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

const std::vector<DType> kAllTypes = DTypeVector(kAllDTypes);
const std::vector<DType> kNumericTypes = DTypeVector(kNumericDTypes);
const std::vector<DType> kIndexTypes = {DType::kI64, DType::kI32};
constexpr int64_t kMaxRank = 8;  // kernels/device/scatter.h's kMaxRank

Status CheckReduction(const OpNode& node) {
  const std::string r = node.GetString("reduction", "none");
  if (r == "none" || r == "add" || r == "mul" || r == "max" || r == "min") return Status::Ok();
  return InvalidInput("{}: attribute 'reduction' '{}' must be none, add, mul, max or min",
                      node.Where(), r);
}

// The checks ScatterND and ScatterElements share: three inputs, indices i64/i32, updates of
// data's type.
Status CheckScatterInputs(const OpNode& node) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  const TensorType& indices = node.input(1)->type();
  if (indices.dtype != DType::kI64 && indices.dtype != DType::kI32) {
    return InvalidInput("{}: input 'indices' must be i64 or i32, got {}", node.Where(),
                        indices.ToString());
  }
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "data", 2, "updates"));
  return CheckReduction(node);
}

// ScatterND: updates' dims are indices' dims but the last, then data's after the m indexed ones.
Status InferScatterND(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(CheckScatterInputs(node));
  const TensorType& data = node.input(0)->type();
  const TensorType& indices = node.input(1)->type();
  const int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1) {
    return InvalidInput("{}: data and indices must have rank >= 1, got {} and {}", node.Where(), r,
                        q);
  }
  const int64_t m = indices.dims[q - 1];
  if (m < 1 || m > r) {
    return InvalidInput("{}: the last dim of 'indices' {} must be in [1, {}] (data's rank)",
                        node.Where(), DimsString(indices.dims), r);
  }
  if (m > kMaxRank) {
    return Unsupported("{}: index tuples of {} dims (a800c's kernels take up to {})", node.Where(),
                       m, kMaxRank);
  }
  std::vector<int64_t> want(indices.dims.begin(), indices.dims.end() - 1);
  want.insert(want.end(), data.dims.begin() + m, data.dims.end());
  if (node.input(2)->dims() != want) {
    return InvalidInput(
        "{}: input 'updates' {} must have dims {} (indices' but the last, then "
        "data's after the first {})",
        node.Where(), node.input(2)->type().ToString(), DimsString(want), m);
  }
  return SetOutputs(node, out, {data});
}

Status InferScatterElements(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(CheckScatterInputs(node));
  const TensorType& data = node.input(0)->type();
  const TensorType& indices = node.input(1)->type();
  if (data.rank() < 1 || data.rank() > kMaxRank) {
    return Unsupported("{}: data of rank {} (a800c's kernels take 1 to {})", node.Where(),
                       data.rank(), kMaxRank);
  }
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0), data.rank()));
  if (indices.rank() != data.rank() || node.input(2)->dims() != indices.dims) {
    return InvalidInput(
        "{}: inputs 'indices' {} and 'updates' {} must have one shape of data's rank {}",
        node.Where(), indices.ToString(), node.input(2)->type().ToString(), data.rank());
  }
  for (int64_t d = 0; d < data.rank(); ++d) {
    if (d != axis && indices.dims[d] > data.dims[d]) {
      return InvalidInput("{}: input 'indices' {} exceeds data {} in dim {}", node.Where(),
                          DimsString(indices.dims), DimsString(data.dims), d);
    }
  }
  return SetOutputs(node, out, {data});
}

// TopK (x, K) -> values, indices: x's dims with k along the axis; K must be a constant.
Status InferTopK(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  const TensorType& x = node.input(0)->type();
  if (x.dtype == DType::kBool) {
    return InvalidInput("{}: input 'X' must be numeric, got {}", node.Where(), x.ToString());
  }
  if (x.rank() < 1) {
    return InvalidInput("{}: input 'X' must have rank >= 1, got {}", node.Where(), x.ToString());
  }
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", -1), x.rank()));
  if (node.has_attr("k")) {
    return InvalidInput("{}: attribute 'k' belongs to TopK-1 (from TopK-10 on, k is input 'K')",
                        node.Where());
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> k, ConstantInts(node, 1, "K"));
  if (k.size() != 1) {
    return InvalidInput("{}: input 'K' must hold one value, got {}", node.Where(), k.size());
  }
  if (k[0] < 0 || k[0] > x.dims[axis]) {
    return InvalidInput("{}: input 'K' {} must be in [0, {}] (the length of axis {})", node.Where(),
                        k[0], x.dims[axis], axis);
  }
  std::vector<int64_t> dims = x.dims;
  dims[axis] = k[0];
  return SetOutputs(node, out, {TensorType{x.dtype, dims}, TensorType{DType::kI64, dims}});
}

}  // namespace

void AddScatterOps(std::vector<OpDef>* ops) {
  const Arity three{3, 3, 1, 1};
  OpDef nd =
      Op("ScatterND", three, {Opt("reduction", "none")}, {11, 13, 16, 18}, 18, InferScatterND,
         "data with updates written (or combined by reduction) at index tuples; repeated "
         "tuples apply in order");
  OpDef el = Op("ScatterElements", three, {Opt("axis", 0), Opt("reduction", "none")},
                {11, 13, 16, 18}, 18, InferScatterElements,
                "data with updates written (or combined by reduction) along axis at same-rank "
                "indices; repeats apply in order");
  for (OpDef* op : {&nd, &el}) {
    op->precision = OpPrecisionClass::kFollow;
    op->kernel = KernelRowSpec{"T,I,T", "T", {{'T', kAllTypes}, {'I', kIndexTypes}}};
    ops->push_back(std::move(*op));
  }
  // TopK-1 has k as an attribute (the importer moves it to the input); its precision class is
  // PRECISION.md's (deny: passes/mixed_precision/policy.cc).
  OpDef topk =
      Op("TopK", {1, 2, 2, 2},
         {Opt("axis", -1), Opt("largest", 1), Opt("sorted", 1), OptNoDefault("k", AttrKind::kInt)},
         {1, 10, 11, 24}, 11, InferTopK,
         "k largest/smallest along axis (constant K), sorted, ties to the lower index");
  topk.kernel = KernelRowSpec{"T,i64", "T,i64", {{'T', kNumericTypes}}};
  ops->push_back(std::move(topk));
}

}  // namespace a8

// GatherND (ONNX 11/12/13) and its gradient a8.GatherNDGrad, with their shape rules. One kernel
// body each, run by both backends (kernels/device/gather_nd.h); the gradient rule is in
// passes/autodiff/grad_rules_math_shape.cc.
#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

const std::vector<DType> kAllTypes = DTypeVector(kAllDTypes);
const std::vector<DType> kIndexTypes = {DType::kI64, DType::kI32};

// The dims GatherND gives data of `data` gathered at `indices` with `batch_dims` (ONNX: the
// batch dims, indices' dims up to the last, data's dims after the m indexed ones), or an error
// naming the field.
StatusOr<std::vector<int64_t>> GatheredDims(const OpNode& node, const std::vector<int64_t>& data,
                                            const TensorType& indices) {
  if (indices.dtype != DType::kI64 && indices.dtype != DType::kI32) {
    return InvalidInput("{}: input 'indices' must be i64 or i32, got {}", node.Where(),
                        indices.ToString());
  }
  const int64_t r = static_cast<int64_t>(data.size()), q = indices.rank();
  const int64_t b = node.GetInt("batch_dims", 0);
  if (r < 1 || q < 1) {
    return InvalidInput("{}: data and indices must have rank >= 1, got {} and {}", node.Where(), r,
                        q);
  }
  if (b < 0 || b >= std::min(r, q)) {
    return InvalidInput("{}: attribute 'batch_dims' {} must be in [0, {})", node.Where(), b,
                        std::min(r, q));
  }
  const int64_t m = indices.dims[q - 1];
  if (m < 1 || m > r - b) {
    return InvalidInput(
        "{}: the last dim of 'indices' {} must be in [1, {}] (data rank {} less "
        "batch_dims {})",
        node.Where(), DimsString(indices.dims), r - b, r, b);
  }
  if (m > 8) {
    return Unsupported("{}: index tuples of {} dims (a800c's kernels take up to 8)", node.Where(),
                       m);
  }
  for (int64_t i = 0; i < b; ++i) {
    if (indices.dims[i] != data[i]) {
      return InvalidInput("{}: batch dim {} differs: data {}, indices {}", node.Where(), i,
                          DimsString(data), DimsString(indices.dims));
    }
  }
  std::vector<int64_t> out(indices.dims.begin(), indices.dims.end() - 1);
  out.insert(out.end(), data.begin() + b + m, data.end());
  return out;
}

Status InferGatherND(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  const TensorType& data = node.input(0)->type();
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      GatheredDims(node, data.dims, node.input(1)->type()));
  return SetOutputs(node, out, {TensorType{data.dtype, std::move(dims)}});
}

// (dy, indices) {batch_dims, shape} -> dx of `shape` (GatherND's data).
Status InferGatherNDGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dy"));
  const std::vector<int64_t> shape = node.GetInts("shape");
  for (int64_t d : shape) {
    if (d < 0) {
      return InvalidInput("{}: attribute 'shape' {} has a negative dim", node.Where(),
                          DimsString(shape));
    }
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, GatheredDims(node, shape, node.input(1)->type()));
  A8_RETURN_IF_ERROR(RequireDyDims(node, dims, "GatherND"));
  return SetOutputs(node, out, {TensorType{node.input(0)->dtype(), shape}});
}

}  // namespace

void AddGatherNdOps(std::vector<OpDef>* ops) {
  OpDef fwd = Op("GatherND", kBinary, {Opt("batch_dims", 0)}, {11, 12, 13}, 12, InferGatherND,
                 "take slices of data at index tuples (the last dim of indices), batch_dims");
  fwd.precision = OpPrecisionClass::kFollow;
  fwd.kernel = KernelRowSpec{"T,I", "T", {{'T', kAllTypes}, {'I', kIndexTypes}}};
  OpDef grad = InternalOp("GatherNDGrad", kBinary,
                          {Opt("batch_dims", 0), Req("shape", AttrKind::kInts)}, InferGatherNDGrad,
                          "gradient of GatherND's data: zeros of `shape`, dy added at the tuples");
  grad.precision = OpPrecisionClass::kFollow;
  grad.gradient = GradDecision::kNone;
  grad.kernel =
      KernelRowSpec{"T,I", "T", {{'T', kKernelFloats}, {'I', {DType::kI64, DType::kI32}}}};
  ops->push_back(std::move(fwd));
  ops->push_back(std::move(grad));
}

}  // namespace a8

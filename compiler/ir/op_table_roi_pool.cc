// MaxUnpool (ONNX 9/11/22) and RoiAlign (ONNX 10/16/22) with their gradients a8.MaxUnpoolGrad and
// a8.RoiAlignGrad, and their shape rules. One kernel body each, run by both backends
// (kernels/device/roi_pool.h); the gradient rules are in passes/autodiff/grad_rules_roi_pool.cc.
// RoiAlign is pinned to FP32 (precision class deny), as GridSample: its sample coordinates are
// computed in the input's precision, and an f16 coordinate near 1,000 pixels is a half-pixel
// step. RoiAlign-10 has no coordinate_transformation_mode: the importer gives it 16's
// 'output_half_pixel' (compiler/onnx/import_upgrade.cc).
#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

// The inferred output dims of MaxUnpool on X dims `x` (onnx's: (X_d - 1) * stride - pads +
// kernel), from the node's kernel_shape, pads and strides.
StatusOr<std::vector<int64_t>> InferredUnpoolDims(const OpNode& node,
                                                  const std::vector<int64_t>& x) {
  const int64_t r = static_cast<int64_t>(x.size()), s = r - 2;
  if (s < 1 || s > 3) {
    return InvalidInput("{}: input 'X' must be [N, C, D1 (, D2 (, D3))], got rank {}", node.Where(),
                        r);
  }
  const std::vector<int64_t> kernel = node.GetInts("kernel_shape");
  const std::vector<int64_t> pads = node.GetInts("pads", std::vector<int64_t>(2 * s, 0));
  const std::vector<int64_t> strides = node.GetInts("strides", std::vector<int64_t>(s, 1));
  if (static_cast<int64_t>(kernel.size()) != s) {
    return InvalidInput("{}: attribute 'kernel_shape' {} must have {} dims", node.Where(),
                        DimsString(kernel), s);
  }
  if (static_cast<int64_t>(pads.size()) != 2 * s) {
    return InvalidInput("{}: attribute 'pads' {} must have {} values", node.Where(),
                        DimsString(pads), 2 * s);
  }
  if (static_cast<int64_t>(strides.size()) != s) {
    return InvalidInput("{}: attribute 'strides' {} must have {} values", node.Where(),
                        DimsString(strides), s);
  }
  std::vector<int64_t> out = {x[0], x[1]};
  for (int64_t d = 0; d < s; ++d) {
    if (kernel[d] < 1 || strides[d] < 1 || pads[d] < 0 || pads[s + d] < 0) {
      return InvalidInput("{}: kernel_shape, strides must be >= 1 and pads >= 0", node.Where());
    }
    const int64_t v = (x[2 + d] - 1) * strides[d] - pads[d] - pads[s + d] + kernel[d];
    if (v < 1) {
      return InvalidInput("{}: spatial dim {} of the output would be {}", node.Where(), d, v);
    }
    out.push_back(v);
  }
  return out;
}

// `out` (output_shape, or dY's dims) must hold the inferred dims: same N, C, each spatial >=.
Status CheckHoldsInferred(const OpNode& node, std::string_view field,
                          const std::vector<int64_t>& out, const std::vector<int64_t>& inferred) {
  bool ok = out.size() == inferred.size() && out[0] == inferred[0] && out[1] == inferred[1];
  for (size_t d = 2; ok && d < out.size(); ++d) ok = out[d] >= inferred[d];
  if (!ok) {
    return InvalidInput("{}: {} {} must be [N, C, ...] at least the inferred {}", node.Where(),
                        field, DimsString(out), DimsString(inferred));
  }
  return Status::Ok();
}

Status RequireIndices(const OpNode& node, int i, const std::vector<int64_t>& dims) {
  const TensorType& t = node.input(i)->type();
  if (t.dtype != DType::kI64 || t.dims != dims) {
    return InvalidInput("{}: input 'I' must be i64{}, got {}", node.Where(), DimsString(dims),
                        t.ToString());
  }
  return Status::Ok();
}

Status InferMaxUnpool(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "X"));
  const TensorType& x = node.input(0)->type();
  A8_RETURN_IF_ERROR(RequireIndices(node, 1, x.dims));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, InferredUnpoolDims(node, x.dims));
  if (node.has_input(2)) {
    A8_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ConstantShape(node, 2, "output_shape"));
    A8_RETURN_IF_ERROR(CheckHoldsInferred(node, "input 'output_shape'", shape, dims));
    dims = std::move(shape);
  }
  return SetOutputs(node, out, {TensorType{x.dtype, std::move(dims)}});
}

// (dY, I) {kernel_shape, pads, strides} -> dX of I's dims.
Status InferMaxUnpoolGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dy"));
  const std::vector<int64_t>& idims = node.input(1)->dims();
  A8_RETURN_IF_ERROR(RequireIndices(node, 1, idims));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> inferred, InferredUnpoolDims(node, idims));
  A8_RETURN_IF_ERROR(CheckHoldsInferred(node, "input 'dy'", node.input(0)->dims(), inferred));
  return SetOutputs(node, out, {TensorType{node.input(0)->dtype(), idims}});
}

// RoiAlign's output dims [R, C, output_height, output_width], checking X, rois, batch_indices
// (inputs 0-2) and the attributes.
StatusOr<std::vector<int64_t>> RoiAlignDims(const OpNode& node) {
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "X"));
  const TensorType &x = node.input(0)->type(), &rois = node.input(1)->type(),
                   &bi = node.input(2)->type();
  if (x.rank() != 4) {
    return InvalidInput("{}: input 'X' must be [N, C, H, W], got {}", node.Where(), x.ToString());
  }
  if (rois.dtype != x.dtype || rois.rank() != 2 || rois.dims[1] != 4) {
    return InvalidInput("{}: input 'rois' must be {}[num_rois, 4], got {}", node.Where(),
                        DTypeName(x.dtype), rois.ToString());
  }
  if (bi.dtype != DType::kI64 || bi.rank() != 1 || bi.dims[0] != rois.dims[0]) {
    return InvalidInput("{}: input 'batch_indices' must be i64[{}], got {}", node.Where(),
                        rois.dims[0], bi.ToString());
  }
  const std::string mode = node.GetString("mode", "avg");
  if (mode != "avg" && mode != "max") {
    return InvalidInput("{}: attribute 'mode' '{}' must be avg or max", node.Where(), mode);
  }
  const std::string ctm = node.GetString("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return InvalidInput(
        "{}: attribute 'coordinate_transformation_mode' '{}' must be half_pixel or "
        "output_half_pixel",
        node.Where(), ctm);
  }
  const int64_t h = node.GetInt("output_height", 1), w = node.GetInt("output_width", 1);
  if (h < 1 || w < 1) {
    return InvalidInput("{}: attributes 'output_height' {} and 'output_width' {} must be >= 1",
                        node.Where(), h, w);
  }
  if (node.GetInt("sampling_ratio", 0) < 0) {
    return InvalidInput("{}: attribute 'sampling_ratio' must be >= 0", node.Where());
  }
  return std::vector<int64_t>{rois.dims[0], x.dims[1], h, w};
}

Status InferRoiAlign(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, RoiAlignDims(node));
  return SetOutputs(node, out, {TensorType{node.input(0)->dtype(), std::move(dims)}});
}

// (X, rois, batch_indices, dY) -> dX like X (avg mode only).
Status InferRoiAlignGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 4));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, RoiAlignDims(node));
  if (node.GetString("mode", "avg") != "avg") {
    return Unsupported("{}: RoiAlign's mode 'max' is not differentiable", node.Where());
  }
  const TensorType& dy = node.input(3)->type();
  if (dy.dtype != node.input(0)->dtype() || dy.dims != dims) {
    return InvalidInput("{}: input 'dy' {} must be {}{}", node.Where(), dy.ToString(),
                        DTypeName(node.input(0)->dtype()), DimsString(dims));
  }
  return SetOutputs(node, out, {node.input(0)->type()});
}

std::vector<AttrSpec> UnpoolAttrs() {
  return {Req("kernel_shape", AttrKind::kInts), OptNoDefault("pads", AttrKind::kInts),
          OptNoDefault("strides", AttrKind::kInts)};
}

std::vector<AttrSpec> RoiAlignAttrs() {
  return {Opt("coordinate_transformation_mode", "half_pixel"),
          Opt("mode", "avg"),
          Opt("output_height", 1),
          Opt("output_width", 1),
          Opt("sampling_ratio", 0),
          Opt("spatial_scale", 1.0f)};
}

}  // namespace

void AddRoiPoolOps(std::vector<OpDef>* ops) {
  using P = OpPrecisionClass;
  ops->push_back(WithFloatKernel(
      P::kFollow, "T,i64,i64?", "T",
      Op("MaxUnpool", {2, 3, 1, 1}, UnpoolAttrs(), {9, 11, 22}, 11, InferMaxUnpool,
         "X written at MaxPool's indices, zeros elsewhere (constant output_shape)")));
  ops->push_back(NotDifferentiable(WithFloatKernel(
      P::kFollow, "T,i64", "T",
      InternalOp("MaxUnpoolGrad", kBinary, UnpoolAttrs(), InferMaxUnpoolGrad,
                 "gradient of MaxUnpool's X: dy gathered at the indices that stay"))));
  ops->push_back(
      WithFloatKernel(P::kDeny, "T,T,i64", "T",
                      Op("RoiAlign", {3, 3, 1, 1}, RoiAlignAttrs(), {10, 16, 22}, 16, InferRoiAlign,
                         "bilinear avg/max pooling of X over each roi's bins (pinned FP32)")));
  ops->push_back(NotDifferentiable(WithFloatKernel(
      P::kDeny, "T,T,i64,T", "T",
      InternalOp("RoiAlignGrad", {4, 4, 1, 1}, RoiAlignAttrs(), InferRoiAlignGrad,
                 "gradient of RoiAlign's X (mode avg): dy spread to the samples"))));
}

}  // namespace a8

// GridSample (ONNX 16/20/22) and its gradient a8.GridSampleGrad, Col2Im (ONNX 18) and its
// gradient a8.Col2ImGrad, DeformConv (ONNX 19/22) and its gradient a8.DeformConvGrad, with their
// shape rules. One kernel body each, run by both backends (kernels/device/grid_sample.h); the
// gradient rules are in passes/autodiff/grad_rules_grid_sample.cc. GridSample-16's modes
// 'bilinear'/'bicubic' become 20's 'linear'/'cubic' at import (compiler/onnx/import_upgrade.cc).
//
// Precision: GridSample and its gradient are pinned to FP32 (deny). They compute sampling
// coordinates from the grid: an f16 grid value near 1 is spaced 2^-11 apart, which is a pixel
// in 2,048 (half a pixel at 1,024 pixels), so the coordinates, the interpolation weights and the
// gradient w.r.t. the grid (a difference of neighbouring pixels) would lose the precision that
// makes them useful. DeformConv (a convolution whose sampling positions come from `offset`) is
// deny for the same reason, Col2Im (a sum of overlapping columns) as PRECISION.md's sums are.
#include <algorithm>
#include <map>
#include <string>

#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

constexpr int64_t kMaxSpatial = 3;  // kernels/device/grid_sample.h's kMaxSpatial

Status CheckGridSampleAttrs(const OpNode& node) {
  const std::string mode = node.GetString("mode", "linear");
  if (mode != "linear" && mode != "nearest" && mode != "cubic") {
    return InvalidInput("{}: attribute 'mode' '{}' must be linear, nearest or cubic", node.Where(),
                        mode);
  }
  const std::string pad = node.GetString("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection") {
    return InvalidInput("{}: attribute 'padding_mode' '{}' must be zeros, border or reflection",
                        node.Where(), pad);
  }
  return Status::Ok();
}

// X [N, C, D...] and grid [N, O..., r] (inputs `xi`, `xi + 1`): Y's dims [N, C, O...].
StatusOr<std::vector<int64_t>> GridSampleOutDims(const OpNode& node, int xi) {
  A8_RETURN_IF_ERROR(CheckGridSampleAttrs(node));
  A8_RETURN_IF_ERROR(RequireFloat(node, xi, "X"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, xi, "X", xi + 1, "grid"));
  const TensorType& x = node.input(xi)->type();
  const TensorType& grid = node.input(xi + 1)->type();
  const int64_t r = x.rank() - 2;
  if (r < 1 || r > kMaxSpatial) {
    return Unsupported("{}: input 'X' {} has {} spatial dims (a800c's kernel takes 1 to {})",
                       node.Where(), x.ToString(), r, kMaxSpatial);
  }
  if (grid.rank() != r + 2 || grid.dims[0] != x.dims[0] || grid.dims[r + 1] != r) {
    return InvalidInput("{}: input 'grid' {} must be [{}, spatial dims x {}, {}] for X {}",
                        node.Where(), grid.ToString(), x.dims[0], r, r, x.ToString());
  }
  std::vector<int64_t> dims = {x.dims[0], x.dims[1]};
  dims.insert(dims.end(), grid.dims.begin() + 1, grid.dims.end() - 1);
  return dims;
}

Status InferGridSample(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, GridSampleOutDims(node, 0));
  return SetOutputs(node, out, {TensorType{node.input(0)->dtype(), dims}});
}

// a8.GridSampleGrad (dy, X, grid) -> (dX, dgrid).
Status InferGridSampleGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, GridSampleOutDims(node, 1));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "dy", 1, "X"));
  A8_RETURN_IF_ERROR(RequireDyDims(node, dims, "GridSample"));
  return SetOutputs(node, out, {node.input(1)->type(), node.input(2)->type()});
}

// The spatial attribute `name` of `n` values (default `dflt` each), each at least `min`.
StatusOr<std::vector<int64_t>> SpatialAttr(const OpNode& node, const char* name, size_t n,
                                           int64_t dflt, int64_t min) {
  std::vector<int64_t> v = node.GetInts(name, std::vector<int64_t>(n, dflt));
  if (v.size() != n) {
    return InvalidInput("{}: attribute '{}' must have {} values, got {}", node.Where(), name, n,
                        v.size());
  }
  for (int64_t e : v) {
    if (e < min) {
      return InvalidInput("{}: attribute '{}' {} must hold values >= {}", node.Where(), name,
                          DimsString(v), min);
    }
  }
  return v;
}

// Col2Im's geometry: image_shape, the block size and the number of block positions L.
struct Col2ImGeometry {
  std::vector<int64_t> image;
  int64_t block_size = 1, positions = 1;
};

StatusOr<Col2ImGeometry> Col2ImGeometryOf(const OpNode& node) {
  Col2ImGeometry geo;
  A8_ASSIGN_OR_RETURN(geo.image, ConstantInts(node, 1, "image_shape"));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> block, ConstantInts(node, 2, "block_shape"));
  const std::vector<int64_t>& image = geo.image;
  const size_t r = image.size();
  if (r < 1 || block.size() != r) {
    return InvalidInput("{}: inputs 'image_shape' {} and 'block_shape' {} must have one length",
                        node.Where(), DimsString(image), DimsString(block));
  }
  if (r > static_cast<size_t>(kMaxSpatial)) {
    return Unsupported("{}: {} spatial dims (a800c's kernel takes 1 to {})", node.Where(), r,
                       kMaxSpatial);
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dil, SpatialAttr(node, "dilations", r, 1, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> strides, SpatialAttr(node, "strides", r, 1, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> pads, SpatialAttr(node, "pads", 2 * r, 0, 0));
  for (size_t d = 0; d < r; ++d) {
    if (image[d] < 1 || block[d] < 1) {
      return InvalidInput("{}: image_shape {} and block_shape {} must be positive", node.Where(),
                          DimsString(image), DimsString(block));
    }
    const int64_t span = image[d] + pads[d] + pads[d + r] - (dil[d] * (block[d] - 1) + 1);
    if (span < 0) {
      return InvalidInput("{}: block {} (dilated) does not fit the padded image in dim {}",
                          node.Where(), block[d], d);
    }
    geo.block_size *= block[d];
    geo.positions *= span / strides[d] + 1;
  }
  return geo;
}

// Col2Im (input [N, C * prod(block), L], image_shape, block_shape) -> [N, C, image_shape...].
Status InferCol2Im(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "input"));
  A8_ASSIGN_OR_RETURN(Col2ImGeometry geo, Col2ImGeometryOf(node));
  const TensorType& x = node.input(0)->type();
  if (x.rank() != 3 || x.dims[1] % geo.block_size != 0 || x.dims[2] != geo.positions) {
    return InvalidInput("{}: input 'input' {} must be [N, C * {}, {}] (block size, positions)",
                        node.Where(), x.ToString(), geo.block_size, geo.positions);
  }
  std::vector<int64_t> dims = {x.dims[0], x.dims[1] / geo.block_size};
  dims.insert(dims.end(), geo.image.begin(), geo.image.end());
  return SetOutputs(node, out, {TensorType{x.dtype, dims}});
}

// a8.Col2ImGrad (dy [N, C, image_shape...], image_shape, block_shape) -> [N, C * block, L].
Status InferCol2ImGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "dy"));
  A8_ASSIGN_OR_RETURN(Col2ImGeometry geo, Col2ImGeometryOf(node));
  const TensorType& dy = node.input(0)->type();
  if (dy.rank() != static_cast<int64_t>(geo.image.size()) + 2 ||
      !std::equal(geo.image.begin(), geo.image.end(), dy.dims.begin() + 2)) {
    return InvalidInput("{}: input 'dy' {} must be [N, C, {}]", node.Where(), dy.ToString(),
                        DimsString(geo.image));
  }
  return SetOutputs(
      node, out, {TensorType{dy.dtype, {dy.dims[0], dy.dims[1] * geo.block_size, geo.positions}}});
}

// DeformConv (X, W, offset, B?, mask?) -> Y, 2-D only.
Status InferDeformConv(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "X"));
  const char* names[] = {"X", "W", "offset", "B", "mask"};
  for (int i = 1; i < node.num_inputs(); ++i) {
    if (node.has_input(i)) A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "X", i, names[i]));
  }
  const TensorType& x = node.input(0)->type();
  const TensorType& w = node.input(1)->type();
  const TensorType& off = node.input(2)->type();
  if (x.rank() != 4) {
    return Unsupported("{}: input 'X' {}: a800c's DeformConv is 2-D only", node.Where(),
                       x.ToString());
  }
  if (w.rank() != 4 || off.rank() != 4) {
    return InvalidInput("{}: inputs 'W' {} and 'offset' {} must have rank 4", node.Where(),
                        w.ToString(), off.ToString());
  }
  const int64_t group = node.GetInt("group", 1), og = node.GetInt("offset_group", 1);
  const std::vector<int64_t> ks = node.GetInts("kernel_shape", {w.dims[2], w.dims[3]});
  if (ks != std::vector<int64_t>{w.dims[2], w.dims[3]}) {
    return InvalidInput("{}: attribute 'kernel_shape' {} differs from W {}", node.Where(),
                        DimsString(ks), w.ToString());
  }
  if (group < 1 || og < 1 || w.dims[1] * group != x.dims[1] || w.dims[0] % group != 0 ||
      x.dims[1] % og != 0) {
    return InvalidInput("{}: X {} and W {} do not match group {} and offset_group {}", node.Where(),
                        x.ToString(), w.ToString(), group, og);
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> st, SpatialAttr(node, "strides", 2, 1, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dl, SpatialAttr(node, "dilations", 2, 1, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> pads, SpatialAttr(node, "pads", 4, 0, 0));
  std::vector<int64_t> o(2);
  for (int d = 0; d < 2; ++d) {
    const int64_t span = x.dims[2 + d] + pads[d] + pads[d + 2] - (dl[d] * (ks[d] - 1) + 1);
    if (span < 0) {
      return InvalidInput("{}: the dilated kernel does not fit the padded input in dim {}",
                          node.Where(), d);
    }
    o[d] = span / st[d] + 1;
  }
  const int64_t taps = ks[0] * ks[1];
  const std::vector<int64_t> want_off = {x.dims[0], 2 * og * taps, o[0], o[1]};
  if (off.dims != want_off) {
    return InvalidInput("{}: input 'offset' {} must be {}", node.Where(), off.ToString(),
                        DimsString(want_off));
  }
  if (node.has_input(3) && node.input(3)->dims() != std::vector<int64_t>{w.dims[0]}) {
    return InvalidInput("{}: input 'B' {} must be [{}]", node.Where(),
                        node.input(3)->type().ToString(), w.dims[0]);
  }
  const std::vector<int64_t> want_mask = {x.dims[0], og * taps, o[0], o[1]};
  if (node.has_input(4) && node.input(4)->dims() != want_mask) {
    return InvalidInput("{}: input 'mask' {} must be {}", node.Where(),
                        node.input(4)->type().ToString(), DimsString(want_mask));
  }
  return SetOutputs(node, out, {TensorType{x.dtype, {x.dims[0], w.dims[0], o[0], o[1]}}});
}

// a8.DeformConvGrad (dy, X, W, offset, mask?) -> (dX, dW, doffset, dmask?): DeformConv's checks
// on (X, W, offset, mask), dy of its output's type.
Status InferDeformConvGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 4));
  // DeformConv's operands (X, W, offset, B absent, mask?) viewed straight from this node's.
  std::vector<const OpValue*> ins;
  for (int i = 1; i < node.num_inputs(); ++i) ins.push_back(node.input(i));
  if (ins.size() == 4) ins.insert(ins.begin() + 3, nullptr);  // no bias
  std::map<std::string, Attribute> attrs;
  for (const char* name :
       {"dilations", "group", "kernel_shape", "offset_group", "pads", "strides"}) {
    if (const Attribute* a = node.attr(name)) attrs[name] = *a;
  }
  const std::string y_name = "y";
  const TensorType y_type;
  const TensorDataPtr no_data;
  const OpValue y_value(&y_name, &y_type, &no_data, false);
  const OpNode fwd("", "DeformConv", node.name(), node.version(), ins, {&y_value}, &attrs);
  std::vector<TensorType> y;
  A8_RETURN_IF_ERROR(InferDeformConv(fwd, &y));
  if (node.input(0)->type() != y[0]) {
    return InvalidInput("{}: input 'dy' {} must be DeformConv's output {}", node.Where(),
                        node.input(0)->type().ToString(), y[0].ToString());
  }
  std::vector<TensorType> types = {node.input(1)->type(), node.input(2)->type(),
                                   node.input(3)->type()};
  if (node.has_input(4)) types.push_back(node.input(4)->type());
  return SetOutputs(node, out, types);
}

}  // namespace

void AddGridSampleOps(std::vector<OpDef>* ops) {
  OpDef gs = Op("GridSample", kBinary,
                {Opt("align_corners", int64_t{0}), Opt("mode", std::string("linear")),
                 Opt("padding_mode", std::string("zeros"))},
                {16, 20, 22}, 22, InferGridSample,
                "X sampled at grid's normalized coordinates (1-3 spatial dims; linear, nearest, "
                "cubic; zeros, border, reflection)");
  gs.precision = OpPrecisionClass::kDeny;
  gs.kernel = KernelRowSpec{"T,T", "T", {{'T', kKernelFloats}}};
  ops->push_back(std::move(gs));
  OpDef grad =
      InternalOp("GridSampleGrad", {3, 3, 2, 2},
                 {Opt("align_corners", int64_t{0}), Opt("mode", std::string("linear")),
                  Opt("padding_mode", std::string("zeros"))},
                 InferGridSampleGrad, "gradient of GridSample: (dy, X, grid) -> (dX, dgrid)");
  grad.precision = OpPrecisionClass::kDeny;
  grad.gradient = GradDecision::kNone;
  grad.kernel = KernelRowSpec{"T,T,T", "T,T", {{'T', kKernelFloats}}};
  ops->push_back(std::move(grad));
  // Their gradients: a8.Col2ImGrad (Im2Col) and a8.DeformConvGrad (grad_rules_grid_sample.cc).
  const std::vector<AttrSpec> col_attrs = {OptNoDefault("dilations", AttrKind::kInts),
                                           OptNoDefault("pads", AttrKind::kInts),
                                           OptNoDefault("strides", AttrKind::kInts)};
  OpDef col = Op("Col2Im", {3, 3, 1, 1}, col_attrs, {18}, 18, InferCol2Im,
                 "columns [N, C*prod(block), L] summed into an image [N, C, image_shape] "
                 "(constant shapes)");
  OpDef col_grad = InternalOp("Col2ImGrad", {3, 3, 1, 1}, col_attrs, InferCol2ImGrad,
                              "gradient of Col2Im's input: Im2Col of dy");
  col_grad.gradient = GradDecision::kNone;
  for (OpDef* op : {&col, &col_grad}) {
    op->precision = OpPrecisionClass::kDeny;
    op->kernel = KernelRowSpec{"T,i64,i64", "T", {{'T', kKernelFloats}}};
    ops->push_back(std::move(*op));
  }
  const std::vector<AttrSpec> dc_attrs = {
      OptNoDefault("dilations", AttrKind::kInts),    Opt("group", int64_t{1}),
      OptNoDefault("kernel_shape", AttrKind::kInts), Opt("offset_group", int64_t{1}),
      OptNoDefault("pads", AttrKind::kInts),         OptNoDefault("strides", AttrKind::kInts)};
  OpDef dc = Op("DeformConv", {3, 5, 1, 1}, dc_attrs, {19, 22}, 22, InferDeformConv,
                "2-D deformable convolution: bilinear samples at offset positions, optional mask");
  dc.precision = OpPrecisionClass::kDeny;
  dc.kernel = KernelRowSpec{"T,T,T,T?,T?", "T", {{'T', kKernelFloats}}};
  OpDef dc_grad = InternalOp("DeformConvGrad", {4, 5, 3, 4}, dc_attrs, InferDeformConvGrad,
                             "gradient of DeformConv: (dy, X, W, offset, mask?) -> (dX, dW, "
                             "doffset, dmask?)");
  dc_grad.precision = OpPrecisionClass::kDeny;
  dc_grad.gradient = GradDecision::kNone;
  dc_grad.kernel = KernelRowSpec{"T,T,T,T,T?", "T,T,T,T?", {{'T', kKernelFloats}}};
  ops->push_back(std::move(dc_grad));
  ops->push_back(std::move(dc));
}

}  // namespace a8

// Device entries of GridSample, Col2Im, DeformConv and their gradients (a8.GridSampleGrad,
// a8.Col2ImGrad, a8.DeformConvGrad)
// (kernels/device/grid_sample.h). The CPU backend has no entries of its own for them: it runs
// these through its host launch, so the CPU, the CUDA backend and cuda-emu give the same bits.
// The checks repeat the shape rules' (compiler/ir/op_table_grid_sample.cc), since a plan may have
// been edited.
#include "kernels/common/kernel_types.h"
#include "kernels/device/grid_sample.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

namespace gs = grid_sample;

StatusOr<gs::GridSampleParams> GridSampleOperands(const KernelArgs& a, const TensorArg& x,
                                                  const TensorArg& grid, const char* op) {
  gs::GridSampleParams p;  // the choices in the order of gs::Mode and gs::Padding
  A8_ASSIGN_OR_RETURN(p.mode, AttrChoice(a, op, "mode", {"linear", "nearest", "cubic"}));
  A8_ASSIGN_OR_RETURN(p.padding,
                      AttrChoice(a, op, "padding_mode", {"zeros", "border", "reflection"}));
  p.align_corners = a.Int("align_corners") != 0;
  const int64_t r = static_cast<int64_t>(x.dims.size()) - 2;
  if (r < 1 || r > gs::kMaxSpatial)
    return InvalidInput("{}: X must have 1 to {} spatial dims", op, gs::kMaxSpatial);
  if (grid.dtype != x.dtype) return InvalidInput("{}: X and grid must have one dtype", op);
  if (static_cast<int64_t>(grid.dims.size()) != r + 2 || grid.dims[0] != x.dims[0] ||
      grid.dims[r + 1] != r)
    return InvalidInput("{}: grid must be [N, spatial..., {}]", op, r);
  p.dtype = x.dtype;
  p.rank = static_cast<int>(r);
  p.n = x.dims[0];
  p.c = x.dims[1];
  for (int64_t k = 0; k < r; ++k) {
    p.in_dims[k] = x.dims[2 + k];
    p.out_dims[k] = grid.dims[1 + k];
  }
  p.x = x.data;
  p.grid = grid.data;
  return p;
}

Dims OutputDims(const gs::GridSampleParams& p) {
  Dims d = {p.n, p.c};
  for (int k = 0; k < p.rank; ++k) d.push_back(p.out_dims[k]);
  return d;
}

Status GridSample(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &grid = a.in(1), &y = a.out(0);
  A8_ASSIGN_OR_RETURN(gs::GridSampleParams p, GridSampleOperands(a, x, grid, "GridSample"));
  if (y.dtype != x.dtype || y.dims != OutputDims(p))
    return InvalidInput("GridSample: Y must be [N, C, grid's spatial dims] of X's dtype");
  p.y = y.data;
  return FromDev(gs::GridSample(ctx, p));
}

// (dy, X, grid) -> (dX, dgrid).
Status GridSampleGrad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &dy = a.in(0), &x = a.in(1), &grid = a.in(2);
  A8_ASSIGN_OR_RETURN(gs::GridSampleParams p, GridSampleOperands(a, x, grid, "GridSampleGrad"));
  if (dy.dtype != x.dtype || dy.dims != OutputDims(p))
    return InvalidInput("GridSampleGrad: dy must be [N, C, grid's spatial dims] of X's dtype");
  gs::GridSampleGradParams gp;
  gp.fwd = p;
  gp.dy = dy.data;
  if (a.has_out(0)) {
    if (a.out(0).dtype != x.dtype || a.out(0).dims != x.dims)
      return InvalidInput("GridSampleGrad: dX must have X's dtype and dims");
    gp.dx = a.out(0).data;
  }
  if (a.has_out(1)) {
    if (a.out(1).dtype != x.dtype || a.out(1).dims != grid.dims)
      return InvalidInput("GridSampleGrad: dgrid must have grid's dims and X's dtype");
    gp.dgrid = a.out(1).data;
  }
  return FromDev(gs::GridSampleGrad(ctx, gp));
}

// The spatial attribute `name` (`n` values, default `dflt` each when absent).
StatusOr<std::vector<int64_t>> SpatialAttr(const KernelArgs& a, const char* op, const char* name,
                                           size_t n, int64_t dflt) {
  std::vector<int64_t> v = a.Ints(name);
  if (v.empty()) v.assign(n, dflt);
  if (v.size() != n) return InvalidInput("{}: attribute '{}' must have {} values", op, name, n);
  return v;
}

// Col2Im's geometry from its constant inputs 1 and 2 and attributes, checked against the columns
// tensor `cols` [N, C * prod(block), L] and the image tensor `img` [N, C, image_shape...].
StatusOr<gs::Col2ImParams> Col2ImGeometry(const KernelArgs& a, const char* op,
                                          const TensorArg& cols, const TensorArg& img) {
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> image, HostInts(a, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> block, HostInts(a, 2));
  const size_t r = image.size();
  if (r < 1 || r > static_cast<size_t>(gs::kMaxSpatial) || block.size() != r)
    return InvalidInput("{}: image_shape and block_shape must have one length in [1, {}]", op,
                        gs::kMaxSpatial);
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dil, SpatialAttr(a, op, "dilations", r, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> strides, SpatialAttr(a, op, "strides", r, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> pads, SpatialAttr(a, op, "pads", 2 * r, 0));
  gs::Col2ImParams p;
  p.rank = static_cast<int>(r);
  int64_t block_size = 1, positions = 1;
  for (size_t d = 0; d < r; ++d) {
    if (image[d] < 1 || block[d] < 1 || dil[d] < 1 || strides[d] < 1 || pads[d] < 0 ||
        pads[d + r] < 0)
      return InvalidInput("{}: image, block, dilations and strides must be >= 1, pads >= 0", op);
    p.image[d] = image[d];
    p.block[d] = block[d];
    p.dilations[d] = dil[d];
    p.strides[d] = strides[d];
    p.pads_begin[d] = pads[d];
    const int64_t span = image[d] + pads[d] + pads[d + r] - (dil[d] * (block[d] - 1) + 1);
    if (span < 0) return InvalidInput("{}: the block does not fit the padded image", op);
    p.blocks_out[d] = span / strides[d] + 1;
    block_size *= block[d];
    positions *= p.blocks_out[d];
  }
  if (cols.dims.size() != 3 || cols.dims[1] % block_size != 0 || cols.dims[2] != positions)
    return InvalidInput("{}: the columns must be [N, C * {}, {}]", op, block_size, positions);
  p.n = cols.dims[0];
  p.c = cols.dims[1] / block_size;
  Dims want = {p.n, p.c};
  want.insert(want.end(), image.begin(), image.end());
  if (img.dtype != cols.dtype || img.dims != want)
    return InvalidInput("{}: the image must be [N, C, image_shape...] of the columns' dtype", op);
  p.dtype = cols.dtype;
  return p;
}

Status Col2Im(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(gs::Col2ImParams p, Col2ImGeometry(a, "Col2Im", a.in(0), a.out(0)));
  p.x = a.in(0).data;
  p.y = a.out(0).data;
  return FromDev(gs::Col2Im(ctx, p));
}

// (dy, image_shape, block_shape) -> dx, the columns.
Status Col2ImGrad(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(gs::Col2ImParams p, Col2ImGeometry(a, "Col2ImGrad", a.out(0), a.in(0)));
  p.x = a.in(0).data;
  p.y = a.out(0).data;
  return FromDev(gs::Col2ImGrad(ctx, p));
}

// DeformConv's operands: x, w, offset, the optional bias and mask (null when absent) and y (or
// dy: the [N, M, oH, oW] tensor).
StatusOr<gs::DeformConvParams> DeformConvOperands(const KernelArgs& a, const char* op,
                                                  const TensorArg& x, const TensorArg& w,
                                                  const TensorArg& off, const TensorArg* bias,
                                                  const TensorArg* mask, const TensorArg& y) {
  if (x.dims.size() != 4 || w.dims.size() != 4 || off.dims.size() != 4 || y.dims.size() != 4)
    return Unsupported("{}: only 2-D (X, W, offset and Y of rank 4)", op);
  gs::DeformConvParams p;
  p.group = a.Int("group");
  p.offset_group = a.Int("offset_group");
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> st, SpatialAttr(a, op, "strides", 2, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dl, SpatialAttr(a, op, "dilations", 2, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> pads, SpatialAttr(a, op, "pads", 4, 0));
  p.n = x.dims[0];
  p.c = x.dims[1];
  p.h = x.dims[2];
  p.w = x.dims[3];
  p.m = w.dims[0];
  p.kh = w.dims[2];
  p.kw = w.dims[3];
  p.oh = y.dims[2];
  p.ow = y.dims[3];
  if (p.group < 1 || p.offset_group < 1 || w.dims[1] * p.group != p.c || p.m % p.group != 0 ||
      p.c % p.offset_group != 0)
    return InvalidInput("{}: channels do not match group {} / offset_group {}", op, p.group,
                        p.offset_group);
  const Dims want_off = {p.n, 2 * p.offset_group * p.kh * p.kw, p.oh, p.ow};
  if (off.dims != want_off || y.dims[0] != p.n || y.dims[1] != p.m)
    return InvalidInput("{}: offset or Y do not have the dims the kernel needs", op);
  for (const TensorArg* t : {&w, &off, &y}) {
    if (t->dtype != x.dtype) return InvalidInput("{}: every tensor must have X's dtype", op);
  }
  if (bias != nullptr) {
    if (bias->dtype != x.dtype || bias->dims != Dims{p.m})
      return InvalidInput("{}: B must be [{}] of X's dtype", op, p.m);
    p.bias = bias->data;
  }
  if (mask != nullptr) {
    if (mask->dtype != x.dtype || mask->dims != Dims{p.n, p.offset_group * p.kh * p.kw, p.oh, p.ow})
      return InvalidInput("{}: mask does not have the dims the kernel needs", op);
    p.mask = mask->data;
  }
  for (int d = 0; d < 2; ++d) {
    p.stride[d] = st[d];
    p.dilation[d] = dl[d];
    p.pad[d] = pads[d];
  }
  p.dtype = x.dtype;
  p.x = x.data;
  p.weight = w.data;
  p.offset = off.data;
  return p;
}

// (X, W, offset, B?, mask?) -> Y, 2-D.
Status DeformConv(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(gs::DeformConvParams p,
                      DeformConvOperands(a, "DeformConv", a.in(0), a.in(1), a.in(2),
                                         a.in_or_null(3), a.in_or_null(4), a.out(0)));
  p.y = a.out(0).data;
  return FromDev(gs::DeformConv(ctx, p));
}

// (dy, X, W, offset, mask?) -> (dX, dW, doffset, dmask?).
Status DeformConvGrad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg* mask = a.in_or_null(4);
  gs::DeformConvGradParams gp;
  A8_ASSIGN_OR_RETURN(gp.fwd, DeformConvOperands(a, "DeformConvGrad", a.in(1), a.in(2), a.in(3),
                                                 nullptr, mask, a.in(0)));
  const TensorArg* want[] = {&a.in(1), &a.in(2), &a.in(3), mask};
  for (int i = 0; i < 4; ++i) {
    if (want[i] == nullptr) continue;
    if (!a.has_out(i) || a.out(i).dtype != want[i]->dtype || a.out(i).dims != want[i]->dims)
      return InvalidInput("DeformConvGrad: output {} must have the dims of input {}", i, i + 1);
  }
  if (mask == nullptr && a.has_out(3)) return InvalidInput("DeformConvGrad: dmask without a mask");
  gp.dy = a.in(0).data;
  gp.dx = a.out(0).data;
  gp.dw = a.out(1).data;
  gp.doffset = a.out(2).data;
  gp.dmask = mask != nullptr ? a.out(3).data : nullptr;
  return FromDev(gs::DeformConvGrad(ctx, gp));
}

}  // namespace

std::vector<DevKernelEntry> DeviceGridSampleOps() {
  return {
      {"GridSample", kFloatTypes, 0, GridSample,
       "one thread an output element; 1 to 3 spatial dims; math in float (f64: double)"},
      {"a8.GridSampleGrad", kFloatTypes, 1, GridSampleGrad,
       "dX: one thread an (n, c) plane (no atomics); dgrid: one thread a grid point"},
      {"Col2Im", kFloatTypes, 0, Col2Im,
       "one thread an image pixel gathering its column entries in block order"},
      {"a8.Col2ImGrad", kFloatTypes, 0, Col2ImGrad,
       "Im2Col: one thread a column entry reading its pixel (0 in the padding)"},
      {"DeformConv", kFloatTypes, 0, DeformConv,
       "2-D; one thread an output element, bilinear taps recomputed per channel"},
      {"a8.DeformConvGrad", kFloatTypes, 1, DeformConvGrad,
       "dX one thread an (n, c) plane; dW one a weight; doffset/dmask one a tap and pixel"},
  };
}

}  // namespace a8::A8_DEV_NS

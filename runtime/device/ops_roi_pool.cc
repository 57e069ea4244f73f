// Device entries of MaxUnpool, a8.MaxUnpoolGrad, RoiAlign and a8.RoiAlignGrad
// (kernels/device/roi_pool.h). The CPU backend has no entries of its own for them: it runs these
// through its host launch, so the CPU, the CUDA backend and cuda-emu give the same bits. Each
// checks what the shape rule checked (the plan may have been edited).
#include "kernels/common/kernel_types.h"
#include "kernels/device/roi_pool.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

// The unpool view of X/I dims `xdims` (N, C, spatial) and Y dims `ydims`, with the attributes.
Status UnpoolSetUp(const KernelArgs& a, const char* op, const Dims& xdims, const TensorArg& idx,
                   const Dims& ydims, roi_pool::MaxUnpoolParams* p) {
  const int64_t r = static_cast<int64_t>(xdims.size()), s = r - 2;
  if (idx.dtype != DType::kI64 || idx.dims != xdims)
    return InvalidInput("{}: I must be i64 with X's dims", op);
  if (s < 1 || s > roi_pool::kMaxUnpoolDims || static_cast<int64_t>(ydims.size()) != r ||
      ydims[0] != xdims[0] || ydims[1] != xdims[1])
    return InvalidInput("{}: X and Y must be [N, C, 1 to 3 spatial dims] alike", op);
  const std::vector<int64_t> kernel = a.Ints("kernel_shape");
  std::vector<int64_t> pads = a.Ints("pads"), strides = a.Ints("strides");
  if (pads.empty()) pads.assign(2 * s, 0);
  if (strides.empty()) strides.assign(s, 1);
  if (static_cast<int64_t>(kernel.size()) != s || static_cast<int64_t>(pads.size()) != 2 * s ||
      static_cast<int64_t>(strides.size()) != s)
    return InvalidInput("{}: kernel_shape, pads and strides must match {} spatial dims", op, s);
  p->spatial = static_cast<int>(s);
  p->planes = xdims[0] * xdims[1];
  p->in_plane = 1;
  p->out_plane = 1;
  for (int64_t d = 0; d < s; ++d) {
    p->inferred[d] = (xdims[2 + d] - 1) * strides[d] - pads[d] - pads[s + d] + kernel[d];
    p->out_dims[d] = ydims[2 + d];
    if (p->inferred[d] < 1 || p->out_dims[d] < p->inferred[d])
      return InvalidInput("{}: output dim {} is {}, below the inferred {}", op, 2 + d,
                          p->out_dims[d], p->inferred[d]);
    p->in_plane *= xdims[2 + d];
    p->out_plane *= ydims[2 + d];
  }
  p->indices = reinterpret_cast<const int64_t*>(idx.data);
  return Status::Ok();
}

// MaxUnpool (X, I) -> Y and its gradient (dY, I) -> dX of I's dims: the same geometry, the
// pooled side first; `names` are the src and dst operands' names for the dtype error.
template <typename Launch>
Status Unpool(const KernelArgs& a, DevCtx& ctx, const char* op, const char* names,
              const TensorArg& pooled, const TensorArg& unpooled, Launch launch) {
  const TensorArg &src = a.in(0), &idx = a.in(1), &dst = a.out(0);
  if (src.dtype != dst.dtype) return InvalidInput("{}: {} dtypes differ", op, names);
  roi_pool::MaxUnpoolParams p;
  A8_RETURN_IF_ERROR(UnpoolSetUp(a, op, pooled.dims, idx, unpooled.dims, &p));
  p.err = ErrOf(ctx);
  p.dtype = src.dtype;
  p.src = src.data;
  p.dst = dst.data;
  return FromDev(launch(ctx, p));
}

Status MaxUnpool(const KernelArgs& a, DevCtx& ctx) {
  return Unpool(
      a, ctx, "MaxUnpool", "X and Y", a.in(0), a.out(0),
      [](DevCtx& c, const roi_pool::MaxUnpoolParams& p) { return roi_pool::MaxUnpool(c, p); });
}

Status MaxUnpoolGrad(const KernelArgs& a, DevCtx& ctx) {
  return Unpool(
      a, ctx, "a8.MaxUnpoolGrad", "dY and dX", a.out(0), a.in(0),
      [](DevCtx& c, const roi_pool::MaxUnpoolParams& p) { return roi_pool::MaxUnpoolGrad(c, p); });
}

// X [N, C, H, W], rois [R, 4], batch_indices [R] (i64), Y [R, C, out_h, out_w].
Status RoiSetUp(const KernelArgs& a, const char* op, const TensorArg& x, const Dims& ydims,
                roi_pool::RoiAlignParams* p) {
  const TensorArg &boxes = a.in(1), &bi = a.in(2);
  if (x.dims.size() != 4 || boxes.dims.size() != 2 || boxes.dims[1] != 4 ||
      boxes.dtype != x.dtype || bi.dtype != DType::kI64 || bi.dims.size() != 1 ||
      bi.dims[0] != boxes.dims[0])
    return InvalidInput("{}: X [N, C, H, W], rois [R, 4] of X's dtype, batch_indices i64 [R]", op);
  const std::string mode = a.Str("mode"), ctm = a.Str("coordinate_transformation_mode");
  if ((mode != "avg" && mode != "max") || (ctm != "half_pixel" && ctm != "output_half_pixel"))
    return InvalidInput("{}: mode '{}' or coordinate_transformation_mode '{}' unknown", op, mode,
                        ctm);
  p->dtype = x.dtype;
  p->max_mode = mode == "max";
  p->half_pixel = ctm == "half_pixel";
  p->sampling_ratio = a.Int("sampling_ratio");
  p->spatial_scale = a.Float("spatial_scale");
  p->batch = x.dims[0];
  p->channels = x.dims[1];
  p->height = x.dims[2];
  p->width = x.dims[3];
  p->rois = boxes.dims[0];
  p->out_h = a.Int("output_height");
  p->out_w = a.Int("output_width");
  if (ydims != Dims{p->rois, p->channels, p->out_h, p->out_w})
    return InvalidInput("{}: Y must be [R, C, output_height, output_width]", op);
  p->boxes = boxes.data;
  p->batch_indices = reinterpret_cast<const int64_t*>(bi.data);
  return Status::Ok();
}

Status RoiAlign(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &y = a.out(0);
  if (x.dtype != y.dtype) return InvalidInput("RoiAlign: X and Y dtypes differ");
  roi_pool::RoiAlignParams p;
  A8_RETURN_IF_ERROR(RoiSetUp(a, "RoiAlign", x, y.dims, &p));
  p.err = ErrOf(ctx);
  p.x = x.data;
  p.dst = y.data;
  return FromDev(roi_pool::RoiAlign(ctx, p));
}

// (X, rois, batch_indices, dY) -> dX; X is read for its dims only.
Status RoiAlignGrad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &dy = a.in(3), &dx = a.out(0);
  if (dy.dtype != x.dtype || dx.dtype != x.dtype || dx.dims != x.dims)
    return InvalidInput("a8.RoiAlignGrad: dX must be like X, dY of X's dtype");
  roi_pool::RoiAlignParams p;
  A8_RETURN_IF_ERROR(RoiSetUp(a, "a8.RoiAlignGrad", x, dy.dims, &p));
  if (p.max_mode) return InvalidInput("a8.RoiAlignGrad: mode max is not differentiable");
  p.err = ErrOf(ctx);
  p.dy = dy.data;
  p.dst = dx.data;
  return FromDev(roi_pool::RoiAlignGrad(ctx, p));
}

}  // namespace

std::vector<DevKernelEntry> DeviceRoiPoolOps() {
  return {
      {"MaxUnpool", kFloatTypes, 0, MaxUnpool,
       "one thread a plane, indices in element order; one body with the CPU backend"},
      {"a8.MaxUnpoolGrad", kFloatTypes, 0, MaxUnpoolGrad,
       "dY gathered at each index that stays; one thread a plane"},
      {"RoiAlign", kFloatTypes, 0, RoiAlign,
       "avg/max, half_pixel/output_half_pixel; one thread an output element"},
      {"a8.RoiAlignGrad", kFloatTypes, 0, RoiAlignGrad,
       "avg only; one thread an (image, channel) plane, summed in double"},
  };
}

}  // namespace a8::A8_DEV_NS

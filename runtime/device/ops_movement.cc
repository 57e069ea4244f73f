// Entries of the data-movement family (kernels/device/movement.h), for the CUDA backend and for
// the CPU backend, which has no movement kernel of its own but a8.GatherGrad's: each decodes its
// kernel's operands and attributes and calls the family's host set-up
// (kernels/device/movement_setup.h: the checks, messages and index maps, shared with constant
// folding). Transpose, Slice, Expand, Tile, Concat, Split and a8.SliceGrad become one strided
// copy each (dims of 1 dropped, contiguous dims merged, so a map rarely needs more than a few
// dims); the reshape-likes are device copies; Shape, Size and ConstantOfShape write values known
// on the host through a functor that holds them. Where the host can read the indices (HostBytes:
// the CPU backend, the emulation, a constant), Gather and GatherElements name an index out of
// range and its element.
#include <algorithm>
#include <cstring>

#include "kernels/common/kernel_types.h"
#include "kernels/device/movement.h"
#include "kernels/device/movement_setup.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

Status Copy(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(RequireSameBytesInOut(a));
  if (a.in(0).data == a.out(0).data || a.out(0).bytes() == 0) return Status::Ok();
  return FromDev(CopyOnDevice(a.out(0).data, a.in(0).data, a.out(0).bytes(), ctx.stream));
}

Status Transpose(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &y = a.out(0);
  return movement::Transpose(ctx, x.dtype, x.dims, a.Ints("perm"), x.data, y.data, y.count());
}

Status Concat(const KernelArgs& a, DevCtx& ctx) {
  std::vector<Dims> dims;
  std::vector<const void*> xs;
  for (int i = 0; i < a.num_inputs(); ++i) {
    dims.push_back(a.in(i).dims);
    xs.push_back(a.in(i).data);
  }
  const TensorArg& y = a.out(0);
  return movement::Concat(ctx, y.dtype, dims, xs, a.Int("axis", 0), y.data, y.count());
}

Status Split(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(0);
  A8_ASSIGN_OR_RETURN(int64_t ax,
                      NormalizeAxis(a.Int("axis"), static_cast<int64_t>(x.dims.size()), "Split"));
  std::vector<int64_t> sizes;
  std::vector<void*> ys;
  for (int i = 0; i < a.num_outputs(); ++i) {
    if (!a.has_out(i) || a.out(i).dims.size() != x.dims.size())
      return InvalidInput("Split: output {} is missing or has the wrong rank", i);
    sizes.push_back(a.out(i).dims[ax]);
    ys.push_back(a.out(i).data);
  }
  return movement::Split(ctx, x.dtype, x.dims, ax, sizes, x.data, ys);
}

Status Slice(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> starts, HostInts(a, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> ends, HostInts(a, 2));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> axes, HostInts(a, 3));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> steps, HostInts(a, 4));
  if (!a.has_in(1)) {  // Slice-1 attributes
    starts = a.Ints("starts");
    ends = a.Ints("ends");
    axes = a.Ints("axes");
  }
  const TensorArg &x = a.in(0), &y = a.out(0);
  A8_ASSIGN_OR_RETURN(SliceSpec spec, ResolveSlice(x.dims, starts, ends, axes, steps));
  if (spec.out_dims() != y.dims)
    return InvalidInput("Slice: the resolved output dims differ from the output buffer's");
  return movement::Slice(ctx, x.dtype, x.dims, spec, x.data, y.data, y.count());
}

Status Expand(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &y = a.out(0);
  return movement::Expand(ctx, x.dtype, x.dims, x.data, y.dims, y.data, y.count());
}

Status Tile(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, HostInts(a, 1));
  const TensorArg &x = a.in(0), &y = a.out(0);
  return movement::Tile(ctx, x.dtype, x.dims, repeats, x.data, y.data, y.count());
}

Status SliceGrad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &dy = a.in(0), &dx = a.out(0);
  if (dy.dtype != dx.dtype) return InvalidInput("a8.SliceGrad: dy and dx dtypes differ");
  return movement::SliceGrad(ctx, dy.dtype, dy.dims, dy.data, a.Ints("starts"), a.Ints("steps"),
                             dx.dims, dx.data);
}

Status Gather(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &idx = a.in(1), &y = a.out(0);
  return movement::Gather(ctx, x.dtype, x.dims, x.data, a.Int("axis"), idx.dtype, idx.dims,
                          idx.data, HostBytes(idx), y.data, y.count());
}

Status GatherElements(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &idx = a.in(1), &y = a.out(0);
  return movement::GatherElements(ctx, x.dtype, x.dims, x.data, a.Int("axis"), idx.dtype, idx.dims,
                                  idx.data, HostBytes(idx), y.data, y.count());
}

Status Pad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &y = a.out(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> pads, HostInts(a, 1));
  if (!a.has_in(1)) pads = a.Ints("pads");
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> axes, HostInts(a, 3));
  A8_RETURN_IF_ERROR(ExpandPadAxes(rank, axes, &pads));
  const std::string mode = a.Str("mode");
  PadMode m;
  if (mode == "constant")
    m = PadMode::kConstant;
  else if (mode == "reflect")
    m = PadMode::kReflect;
  else if (mode == "edge")
    m = PadMode::kEdge;
  else if (mode == "wrap")
    m = PadMode::kWrap;
  else
    return Unsupported("Pad: mode '{}' (constant, reflect, edge or wrap)", mode);
  const bool has_value = a.has_in(2) && a.in(2).count() > 0;
  if (has_value && a.in(2).dtype != x.dtype)
    return InvalidInput("Pad: constant_value is {}, the data {}", DTypeName(a.in(2).dtype),
                        DTypeName(x.dtype));
  // The value is read by the kernel.
  return movement::Pad(ctx, x.dtype, x.dims, pads, m, has_value ? a.in(2).data : nullptr, x.data,
                       y.data, y.count());
}

Status Trilu(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &y = a.out(0);
  if (x.dims.size() < 2) return InvalidInput("Trilu: rank {} < 2", x.dims.size());
  if (y.count() != x.count())
    return InvalidInput("Trilu: the output buffer has {} elements, the input {}", y.count(),
                        x.count());
  movement::TriluParams p;
  p.elem_size = static_cast<int>(DTypeSize(x.dtype));
  p.upper = a.Int("upper") != 0;
  if (a.has_in(1) && a.in(1).count() > 0) {
    const TensorArg& k = a.in(1);
    if (k.count() != 1 || (k.dtype != DType::kI64 && k.dtype != DType::kI32))
      return InvalidInput("Trilu: k must be one i64 or i32 value, got {} values of {}", k.count(),
                          ElemName(k.dtype));
    p.k_ptr = k.data;  // read by the kernel
    p.k_i32 = k.dtype == DType::kI32;
  }
  p.count = x.count();
  p.rows = x.dims[x.dims.size() - 2];
  p.cols = x.dims.back();
  p.x = x.data;
  p.y = y.data;
  return FromDev(movement::Trilu(ctx, p));
}

Status OneHot(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &idx = a.in(0), &y = a.out(0);
  A8_ASSIGN_OR_RETURN(int64_t ax,
                      NormalizeAxis(a.Int("axis"), static_cast<int64_t>(y.dims.size()), "OneHot"));
  if (a.in(2).count() != 2 || a.in(2).dtype != y.dtype)
    return InvalidInput("OneHot: values must be 2 elements of the output dtype");
  // The values are read by the kernel.
  return movement::OneHot(ctx, idx.dtype, idx.dims, idx.data, y.dims[ax], ax, y.dtype, a.in(2).data,
                          y.data, y.count());
}

Status Range(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& y = a.out(0);
  if (a.in(0).dtype != y.dtype || a.in(2).dtype != y.dtype || a.in(0).count() != 1 ||
      a.in(2).count() != 1)
    return InvalidInput("Range: start and delta must be one element of the output dtype");
  DType stash = DType::kF32;
  if (y.dtype == DType::kF16 || y.dtype == DType::kBF16) {
    const int64_t stash_type = a.Int("stash_type");
    if (stash_type != 1 && stash_type != 11)
      return InvalidInput("Range: stash_type {} is neither 1 (FLOAT) nor 11 (DOUBLE)", stash_type);
    stash = stash_type == 11 ? DType::kF64 : DType::kF32;
  }
  // start and delta are read by the kernel.
  return movement::Range(ctx, y.dtype, a.in(0).data, a.in(2).data, y.count(), y.data, stash);
}

Status ShapeOp(const KernelArgs& a, DevCtx& ctx) {
  const Dims& d = a.in(0).dims;
  const int64_t rank = static_cast<int64_t>(d.size());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(a.Int("start")), end = clamp(a.Int("end", rank));
  const int64_t n = std::max<int64_t>(end - start, 0);
  if (a.out(0).count() != n || a.out(0).dtype != DType::kI64)
    return InvalidInput("Shape: the output buffer is not i64[{}]", n);
  if (n > movement::kMaxShapeValues)
    return Unsupported("Shape: {} dims (the kernel writes up to {})", n, movement::kMaxShapeValues);
  movement::WriteInt64sParams p;
  p.n = static_cast<int>(n);
  for (int64_t i = 0; i < n; ++i) p.values[i] = d[start + i];
  p.y = a.out(0).data;
  return FromDev(movement::WriteInt64s(ctx, p));
}

Status Size(const KernelArgs& a, DevCtx& ctx) {
  if (a.out(0).count() != 1 || a.out(0).dtype != DType::kI64)
    return InvalidInput("Size: the output buffer is not an i64 scalar");
  movement::FillValueParams p;
  p.elem_size = 8;
  p.bits = static_cast<uint64_t>(a.in(0).count());
  p.n = 1;
  p.y = a.out(0).data;
  return FromDev(movement::FillValue(ctx, p));
}

Status ConstantOfShape(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& y = a.out(0);
  movement::FillValueParams p;
  p.elem_size = static_cast<int>(DTypeSize(y.dtype));
  if (const TensorArg* v = a.TensorAttr("value")) {
    if (v->count() != 1 || v->dtype != y.dtype)
      return InvalidInput("ConstantOfShape: value must be one element of the output dtype");
    const uint8_t* bytes = HostBytes(*v);
    if (bytes == nullptr)
      return Unsupported("ConstantOfShape: the value has no host copy on the CUDA backend");
    std::memcpy(&p.bits, bytes, static_cast<size_t>(p.elem_size));  // little endian
  }
  p.n = y.count();
  p.y = y.data;
  return FromDev(movement::FillValue(ctx, p));
}

Status GatherGrad(const KernelArgs& a, DevCtx& ctx) {
  const char* op = "a8.GatherGrad";
  const TensorArg &dy = a.in(0), &idx = a.in(1), &dx = a.out(0);
  if (dy.dtype != dx.dtype) return InvalidInput("a8.GatherGrad: dy and dx dtypes differ");
  const Dims& data_dims = dx.dims;
  const int64_t rank = static_cast<int64_t>(data_dims.size());
  int64_t axis = a.Int("axis");
  if (axis < -rank || axis >= rank)
    return InvalidInput("{}: axis {} is out of range for rank {}", op, axis, rank);
  if (axis < 0) axis += rank;
  Dims want(data_dims.begin(), data_dims.begin() + axis);
  want.insert(want.end(), idx.dims.begin(), idx.dims.end());
  want.insert(want.end(), data_dims.begin() + axis + 1, data_dims.end());
  if (want != dy.dims)
    return InvalidInput("{}: dy has {} dims, expected {} from data and indices", op, dy.dims.size(),
                        want.size());
  A8_RETURN_IF_ERROR(RequireIndexDType(idx, op, StatusCode::kUnsupported));
  movement::GatherGradParams p;
  movement::SetGatherView(ctx, data_dims, axis, idx.dtype, idx.count(), idx.data, &p);
  p.dtype = dy.dtype;
  p.dy = dy.data;
  p.dx = dx.data;
  return FromDev(movement::GatherGrad(ctx, p));
}

}  // namespace

std::vector<DevKernelEntry> DeviceMovementOps() {
  static const std::vector<DType> kRangeTypes = {DType::kF32,  DType::kF64, DType::kF16,
                                                 DType::kBF16, DType::kI64, DType::kI32};
  return {
      {"Transpose", kAllTypes, 0, Transpose, "strided copy"},
      {"Concat", kAllTypes, 0, Concat, "N inputs; a strided copy each"},
      {"Split", kAllTypes, 0, Split, "sizes from the outputs"},
      {"Slice", kAllTypes, 0, Slice, "starts/ends/axes/steps: constant i32/i64"},
      {"Expand", kAllTypes, 0, Expand, "shape: constant i64"},
      {"Tile", kAllTypes, 0, Tile, "repeats: constant i64"},
      {"Identity", kAllTypes, 0, Copy, "device copy (none in place)"},
      {"Reshape", kAllTypes, 0, Copy, "a device copy (none in place)"},
      {"Flatten", kAllTypes, 0, Copy, "a device copy (none in place)"},
      {"Squeeze", kAllTypes, 0, Copy, "a device copy (none in place)"},
      {"Unsqueeze", kAllTypes, 0, Copy, "a device copy (none in place)"},
      {"Gather", kAllTypes, 0, Gather, "indices: i32/i64 (out of range: error/0)"},
      {"GatherElements", kAllTypes, 0, GatherElements, "indices: i32/i64 (out of range: error/0)"},
      {"Pad", kAllTypes, 0, Pad, "modes constant, reflect, edge, wrap"},
      {"Trilu", kAllTypes, 0, Trilu, "k: optional i64 scalar, read by the kernel"},
      {"OneHot", kAllTypes, -1, OneHot,
       "indices: numeric (float truncated); depth from the output"},
      {"Range", kRangeTypes, -1, Range,
       "start/delta read on the device; f16/bf16: in stash_type, as numpy arange"},
      {"Shape", kAllTypes, 0, ShapeOp, "-> i64"},
      {"Size", kAllTypes, 0, Size, "-> i64"},
      {"ConstantOfShape", kAllTypes, -1, ConstantOfShape, "value: tensor attribute"},
      {"a8.GatherGrad", kFloatTypes, 0, GatherGrad,
       "indices: i64 or i32; stable sort, one thread per dx element"},
      {"a8.SliceGrad", kFloatTypes, 0, SliceGrad, "zero fill, strided copy"},
  };
}

}  // namespace a8::A8_DEV_NS

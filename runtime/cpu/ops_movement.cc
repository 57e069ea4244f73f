// CPU registry entries: data movement (Transpose ... Range), the reshape-likes (Reshape,
// Flatten, Squeeze, Unsqueeze: a copy, dims come from the buffers), Shape, Size,
// ConstantOfShape. Trilu has none: the CPU backend runs the device entry (one body).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/kernels.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

Status Copy(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(RequireSameBytesInOut(a));
  if (a.in(0).data != a.out(0).data && a.out(0).bytes() > 0)
    std::memmove(a.out(0).data, a.in(0).data, a.out(0).bytes());
  return Status::Ok();
}

Status RunTranspose(const KernelArgs& a) {
  return cpu::Transpose(a.in(0).dtype, a.in(0).dims, a.Ints("perm"), a.in(0).data, a.out(0).data);
}

Status RunConcat(const KernelArgs& a) {
  std::vector<cpu::Dims> dims;
  std::vector<const void*> xs;
  for (int i = 0; i < a.num_inputs(); ++i) {
    dims.push_back(a.in(i).dims);
    xs.push_back(a.in(i).data);
  }
  return cpu::Concat(a.out(0).dtype, dims, xs, a.Int("axis", 0), a.out(0).data);
}

Status RunSplit(const KernelArgs& a) {
  const TensorArg& x = a.in(0);
  A8_ASSIGN_OR_RETURN(
      int64_t axis,
      cpu::NormalizeAxis(a.Int("axis"), static_cast<int64_t>(x.dims.size()), "Split"));
  std::vector<int64_t> sizes;
  std::vector<void*> ys;
  for (int i = 0; i < a.num_outputs(); ++i) {
    if (!a.has_out(i) || a.out(i).dims.size() != x.dims.size())
      return InvalidInput("Split: output {} is missing or has the wrong rank", i);
    sizes.push_back(a.out(i).dims[axis]);
    ys.push_back(a.out(i).data);
  }
  return cpu::Split(x.dtype, x.dims, axis, sizes, x.data, ys);
}

Status RunSlice(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> starts, a.ConstInts(1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> ends, a.ConstInts(2));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> axes, a.ConstInts(3));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> steps, a.ConstInts(4));
  if (!a.has_in(1)) {  // Slice-1 attributes
    starts = a.Ints("starts");
    ends = a.Ints("ends");
    axes = a.Ints("axes");
  }
  A8_ASSIGN_OR_RETURN(cpu::SliceSpec spec,
                      cpu::ResolveSlice(a.in(0).dims, starts, ends, axes, steps));
  if (spec.out_dims() != a.out(0).dims)
    return InvalidInput("Slice: the resolved output dims differ from the output buffer's");
  return cpu::Slice(a.in(0).dtype, a.in(0).dims, spec, a.in(0).data, a.out(0).data);
}

Status RunGather(const KernelArgs& a) {
  return cpu::Gather(a.in(0).dtype, a.in(0).dims, a.in(0).data, a.Int("axis"), a.in(1).dtype,
                     a.in(1).dims, a.in(1).data, a.out(0).data);
}

Status RunGatherElements(const KernelArgs& a) {
  return cpu::GatherElements(a.in(0).dtype, a.in(0).dims, a.in(0).data, a.Int("axis"),
                             a.in(1).dtype, a.in(1).dims, a.in(1).data, a.out(0).data);
}

Status RunExpand(const KernelArgs& a) {
  return cpu::Expand(a.in(0).dtype, a.in(0).dims, a.in(0).data, a.out(0).dims, a.out(0).data);
}

Status RunTile(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, a.ConstInts(1));
  return cpu::Tile(a.in(0).dtype, a.in(0).dims, repeats, a.in(0).data, a.out(0).data);
}

// Pad mode 'wrap' (numpy's): output coordinate o reads x at (o - pads_begin) mod dim along each
// dim, pads non-negative (the shape rule's check). An element copy each, in output order.
Status PadWrap(const TensorArg& x, const std::vector<int64_t>& pads, const TensorArg& y) {
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return InvalidInput("Pad: {} pads for rank {}", pads.size(), rank);
  cpu::Dims out_dims(rank), in_strides(rank, 1);
  for (int64_t i = rank - 1; i >= 0; --i) {
    if (pads[i] < 0 || pads[rank + i] < 0)
      return InvalidInput("Pad: mode 'wrap' takes no negative pads (dim {})", i);
    out_dims[i] = x.dims[i] + pads[i] + pads[rank + i];
    if (out_dims[i] > 0 && x.dims[i] == 0)
      return InvalidInput("Pad: dim {} is empty and cannot be padded by wrap", i);
    if (i + 1 < rank) in_strides[i] = in_strides[i + 1] * x.dims[i + 1];
  }
  const int64_t n = NumElements(out_dims);
  if (n != y.count())
    return InvalidInput("Pad: the output buffer has {} elements, the op writes {}", y.count(), n);
  const size_t es = DTypeSize(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  for (int64_t o = 0; o < n; ++o) {
    int64_t rest = o, off = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t i = rest % out_dims[d] - pads[d];
      rest /= out_dims[d];
      off += (((i % x.dims[d]) + x.dims[d]) % x.dims[d]) * in_strides[d];
    }
    std::memcpy(dst + o * es, src + off * es, es);
  }
  return Status::Ok();
}

Status RunPad(const KernelArgs& a) {
  const TensorArg& x = a.in(0);
  int64_t rank = static_cast<int64_t>(x.dims.size());
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> pads, a.ConstInts(1));
  if (!a.has_in(1)) pads = a.Ints("pads");
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> axes, a.ConstInts(3));
  A8_RETURN_IF_ERROR(ExpandPadAxes(rank, axes, &pads));
  std::string mode = a.Str("mode");
  cpu::PadMode m;
  if (mode == "constant")
    m = cpu::PadMode::kConstant;
  else if (mode == "reflect")
    m = cpu::PadMode::kReflect;
  else if (mode == "edge")
    m = cpu::PadMode::kEdge;
  else if (mode == "wrap")
    return PadWrap(x, pads, a.out(0));
  else
    return Unsupported("Pad: mode '{}' is not supported by the CPU backend", mode);
  const void* value = a.has_in(2) && a.in(2).count() > 0 ? a.in(2).data : nullptr;
  return cpu::Pad(x.dtype, x.dims, pads, m, value, x.data, a.out(0).data);
}

Status RunOneHot(const KernelArgs& a) {
  const TensorArg& y = a.out(0);
  int64_t rank = static_cast<int64_t>(y.dims.size());
  A8_ASSIGN_OR_RETURN(int64_t axis, cpu::NormalizeAxis(a.Int("axis"), rank, "OneHot"));
  if (a.in(2).count() != 2 || a.in(2).dtype != y.dtype)
    return InvalidInput("OneHot: values must be 2 elements of the output dtype");
  const TensorArg& idx = a.in(0);
  if (idx.dtype == DType::kI64 || idx.dtype == DType::kI32)
    return cpu::OneHot(idx.dtype, idx.dims, idx.data, y.dims[axis], axis, y.dtype, a.in(2).data,
                       y.data);
  // Float indices (ONNX allows any numeric type): truncated to i64 like a Cast.
  std::vector<int64_t> i64(static_cast<size_t>(idx.count()));
  A8_RETURN_IF_ERROR(cpu::Cast(idx.dtype, DType::kI64, idx.count(), idx.data, i64.data()));
  return cpu::OneHot(DType::kI64, idx.dims, i64.data(), y.dims[axis], axis, y.dtype, a.in(2).data,
                     y.data);
}

Status RunRange(const KernelArgs& a) {
  return cpu::Range(a.out(0).dtype, a.in(0).data, a.in(2).data, a.out(0).count(), a.out(0).data);
}

Status RunShape(const KernelArgs& a) {
  const cpu::Dims& d = a.in(0).dims;
  int64_t rank = static_cast<int64_t>(d.size());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t start = clamp(a.Int("start")), end = clamp(a.Int("end", rank));
  int64_t n = std::max<int64_t>(end - start, 0);
  if (a.out(0).count() != n || a.out(0).dtype != DType::kI64)
    return InvalidInput("Shape: the output buffer is not i64[{}]", n);
  auto* y = reinterpret_cast<int64_t*>(a.out(0).data);
  for (int64_t i = 0; i < n; ++i) y[i] = d[start + i];
  return Status::Ok();
}

Status RunSize(const KernelArgs& a) {
  if (a.out(0).count() != 1 || a.out(0).dtype != DType::kI64)
    return InvalidInput("Size: the output buffer is not an i64 scalar");
  *reinterpret_cast<int64_t*>(a.out(0).data) = a.in(0).count();
  return Status::Ok();
}

Status RunConstantOfShape(const KernelArgs& a) {
  const TensorArg& y = a.out(0);
  size_t esize = DTypeSize(y.dtype);
  uint8_t value[8] = {0};
  if (const TensorArg* v = a.TensorAttr("value")) {
    if (v->count() != 1 || v->dtype != y.dtype)
      return InvalidInput("ConstantOfShape: value must be one element of the output dtype");
    std::memcpy(value, v->data, esize);
  }
  for (int64_t i = 0; i < y.count(); ++i) std::memcpy(y.data + i * esize, value, esize);
  return Status::Ok();
}

}  // namespace

std::vector<CpuKernelEntry> MovementKernels() {
  static const std::vector<DType> kRangeTypes = {DType::kF32, DType::kF64, DType::kI64,
                                                 DType::kI32};
  return {
      {"Transpose", kAllTypes, 0, RunTranspose, ""},
      {"Concat", kAllTypes, 0, RunConcat, "N inputs"},
      {"Split", kAllTypes, 0, RunSplit, "sizes from the outputs"},
      {"Slice", kAllTypes, 0, RunSlice, "starts/ends/axes/steps: constant i32/i64"},
      {"Gather", kAllTypes, 0, RunGather, "indices: i32/i64"},
      {"GatherElements", kAllTypes, 0, RunGatherElements, "indices: i32/i64"},
      {"Expand", kAllTypes, 0, RunExpand, "shape: constant i64"},
      {"Tile", kAllTypes, 0, RunTile, "repeats: constant i64"},
      {"Pad", kAllTypes, 0, RunPad, "modes constant, reflect, edge, wrap"},
      {"OneHot", kAllTypes, -1, RunOneHot,
       "indices: numeric (float truncated); depth from the output"},
      {"Range", kRangeTypes, -1, RunRange, "constant start/limit/delta"},
      {"Identity", kAllTypes, 0, Copy, "a copy (none in place)"},
      {"Reshape", kAllTypes, 0, Copy, "a copy (none in place)"},
      {"Flatten", kAllTypes, 0, Copy, "a copy (none in place)"},
      {"Squeeze", kAllTypes, 0, Copy, "a copy (none in place)"},
      {"Unsqueeze", kAllTypes, 0, Copy, "a copy (none in place)"},
      {"Shape", kAllTypes, 0, RunShape, "-> i64"},
      {"Size", kAllTypes, 0, RunSize, "-> i64"},
      {"ConstantOfShape", kAllTypes, -1, RunConstantOfShape, "value: tensor attribute"},
  };
}

}  // namespace a8

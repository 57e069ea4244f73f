// Device entries of the data-movement family (kernels/device/movement.h): the CPU entries of
// runtime/cpu/ops_movement.cc (and a8.GatherGrad, a8.SliceGrad of ops_grad_math.cc) with the
// same attribute defaults, checks and messages. Transpose, Slice, Expand, Tile, Concat, Split
// and a8.SliceGrad become one strided copy each (dims of 1 dropped, contiguous dims merged, so
// a map rarely needs more than a few dims); the reshape-likes are device copies; Shape, Size
// and ConstantOfShape write values known on the host through a functor that holds them.
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "kernels/common/kernel_types.h"
#include "kernels/device/movement.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

// One dim of an index map: coordinate c reads src at (c % src_mod or c) * src_stride and writes
// dst at c * dst_stride.
struct MapDim {
  int64_t dim, src_stride, src_mod, dst_stride;
};

// Runs dst[...] = src[...] over the map `dims` (outermost first) after dropping dims of 1 and
// merging neighbours that are contiguous on both sides.
Status RunStridedCopy(DevCtx& ctx, const char* op, const std::vector<MapDim>& dims,
                      int64_t src_base, int64_t dst_base, DType dtype, const void* src, void* dst) {
  std::vector<MapDim> m;
  for (MapDim d : dims) {
    if (d.dim == 0) return Status::Ok();  // nothing to move
    if (d.dim == 1) continue;
    if (d.src_mod == d.dim) d.src_mod = 0;  // no wrap within the dim
    if (!m.empty()) {
      MapDim& outer = m.back();
      if (outer.src_mod == 0 && d.src_mod == 0 && outer.src_stride == d.src_stride * d.dim &&
          outer.dst_stride == d.dst_stride * d.dim) {
        outer = {outer.dim * d.dim, d.src_stride, 0, d.dst_stride};
        continue;
      }
    }
    m.push_back(d);
  }
  if (m.size() > static_cast<size_t>(movement::kMaxMapRank))
    return Unsupported("{}: the CUDA kernel moves at most {} non-contiguous dims, this needs {}",
                       op, movement::kMaxMapRank, m.size());
  movement::StridedCopyParams p;
  p.rank = static_cast<int>(m.size());
  p.elem_size = static_cast<int>(DTypeSize(dtype));
  for (size_t k = 0; k < m.size(); ++k) {
    p.dims[k] = m[k].dim;
    p.src_strides[k] = m[k].src_stride;
    p.src_mod[k] = m[k].src_mod;
    p.dst_strides[k] = m[k].dst_stride;
  }
  p.src_base = src_base;
  p.dst_base = dst_base;
  p.src = src;
  p.dst = dst;
  return FromDev(movement::StridedCopy(ctx, p));
}

// A gather-style map: y (contiguous over `out_dims`) reads x with `src_strides` (and wraps).
Status RunGatherMap(DevCtx& ctx, const char* op, const Dims& out_dims, const Dims& src_strides,
                    const Dims& src_mod, int64_t src_base, const TensorArg& x, const TensorArg& y) {
  if (NumElements(out_dims) != y.count())
    return InvalidInput("{}: the output buffer has {} elements, the op writes {}", op, y.count(),
                        NumElements(out_dims));
  const Dims dst = Strides(out_dims);
  std::vector<MapDim> m;
  for (size_t i = 0; i < out_dims.size(); ++i)
    m.push_back({out_dims[i], src_strides[i], src_mod.empty() ? 0 : src_mod[i], dst[i]});
  return RunStridedCopy(ctx, op, m, src_base, 0, x.dtype, x.data, y.data);
}

Status CheckIndexDType(DType dt, const char* op) {
  if (dt != DType::kI32 && dt != DType::kI64)
    return Unsupported("{}: index dtype {} (i32 or i64 expected)", op, ElemName(dt));
  return Status::Ok();
}

Status Copy(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(RequireSameBytesInOut(a));
  if (a.in(0).data == a.out(0).data || a.out(0).bytes() == 0) return Status::Ok();
  return FromDev(CopyOnDevice(a.out(0).data, a.in(0).data, a.out(0).bytes(), ctx.stream));
}

Status Transpose(const KernelArgs& a, DevCtx& ctx) {
  const Dims& dims = a.in(0).dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> p = a.Ints("perm");
  if (p.empty())
    for (int64_t i = rank - 1; i >= 0; --i) p.push_back(i);
  if (static_cast<int64_t>(p.size()) != rank)
    return InvalidInput("Transpose: perm has {} entries for rank {}", p.size(), rank);
  std::vector<bool> seen(dims.size(), false);
  for (int64_t v : p) {
    if (v < 0 || v >= rank || seen[v])
      return InvalidInput("Transpose: perm [{}] is not a permutation", fmt::join(p, ","));
    seen[v] = true;
  }
  const Dims strides = Strides(dims);
  Dims out_dims(rank), in_strides(rank);
  for (int64_t i = 0; i < rank; ++i) out_dims[i] = dims[p[i]], in_strides[i] = strides[p[i]];
  return RunGatherMap(ctx, "Transpose", out_dims, in_strides, {}, 0, a.in(0), a.out(0));
}

Status Concat(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& y = a.out(0);
  if (a.num_inputs() == 0) return InvalidInput("Concat: 0 inputs with 0 shapes");
  const Dims& d0 = a.in(0).dims;
  A8_ASSIGN_OR_RETURN(int64_t ax,
                      NormalizeAxis(a.Int("axis", 0), static_cast<int64_t>(d0.size()), "Concat"));
  int64_t outer = 1, inner = 1, total = 0;
  for (int i = 0; i < a.num_inputs(); ++i) {
    const Dims& d = a.in(i).dims;
    bool ok = d.size() == d0.size();
    for (size_t k = 0; ok && k < d.size(); ++k) ok = static_cast<int64_t>(k) == ax || d[k] == d0[k];
    if (!ok)
      return InvalidInput("Concat: shapes [{}] and [{}] differ off axis {}", fmt::join(d0, ","),
                          fmt::join(d, ","), ax);
    total += d[ax];
  }
  for (int64_t i = 0; i < ax; ++i) outer *= d0[i];
  for (size_t i = ax + 1; i < d0.size(); ++i) inner *= d0[i];
  if (outer * total * inner != y.count())
    return InvalidInput("Concat: the output buffer has {} elements, the inputs {}", y.count(),
                        outer * total * inner);
  // Input k is the [outer, chunk] block at column `at` of y viewed as [outer, total * inner].
  int64_t at = 0;
  for (int i = 0; i < a.num_inputs(); ++i) {
    const int64_t chunk = a.in(i).dims[ax] * inner;
    A8_RETURN_IF_ERROR(RunStridedCopy(ctx, "Concat",
                                      {{outer, chunk, 0, total * inner}, {chunk, 1, 0, 1}}, 0, at,
                                      y.dtype, a.in(i).data, y.data));
    at += chunk;
  }
  return Status::Ok();
}

Status Split(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(0);
  const Dims& dims = x.dims;
  A8_ASSIGN_OR_RETURN(int64_t ax,
                      NormalizeAxis(a.Int("axis"), static_cast<int64_t>(dims.size()), "Split"));
  std::vector<int64_t> sizes;
  for (int i = 0; i < a.num_outputs(); ++i) {
    if (!a.has_out(i) || a.out(i).dims.size() != dims.size())
      return InvalidInput("Split: output {} is missing or has the wrong rank", i);
    sizes.push_back(a.out(i).dims[ax]);
  }
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s < 0 ? dims[ax] + 1 : s;
  if (sum != dims[ax])
    return InvalidInput("Split: sizes [{}] do not split dim {} of {} into {} outputs",
                        fmt::join(sizes, ","), ax, dims[ax], sizes.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < ax; ++i) outer *= dims[i];
  for (size_t i = ax + 1; i < dims.size(); ++i) inner *= dims[i];
  int64_t at = 0;
  for (int i = 0; i < a.num_outputs(); ++i) {
    const int64_t chunk = sizes[i] * inner;
    A8_RETURN_IF_ERROR(RunStridedCopy(ctx, "Split",
                                      {{outer, dims[ax] * inner, 0, chunk}, {chunk, 1, 0, 1}}, at,
                                      0, x.dtype, x.data, a.out(i).data));
    at += chunk;
  }
  return Status::Ok();
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
  const Dims& dims = a.in(0).dims;
  A8_ASSIGN_OR_RETURN(SliceSpec spec, ResolveSlice(dims, starts, ends, axes, steps));
  if (spec.out_dims() != a.out(0).dims)
    return InvalidInput("Slice: the resolved output dims differ from the output buffer's");
  const Dims strides = Strides(dims);
  Dims in_strides(dims.size());
  int64_t base = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    in_strides[i] = strides[i] * spec.step[i];
    if (spec.count[i] > 0) base += spec.start[i] * strides[i];
  }
  return RunGatherMap(ctx, "Slice", spec.count, in_strides, {}, base, a.in(0), a.out(0));
}

Status Expand(const KernelArgs& a, DevCtx& ctx) {
  const Dims &d = a.in(0).dims, &out = a.out(0).dims;
  const size_t rank = out.size();
  if (d.size() > rank)
    return InvalidInput("Expand: input rank {} exceeds output rank {}", d.size(), rank);
  const size_t pad = rank - d.size();
  const Dims xs = Strides(d);
  Dims strides(rank, 0);
  for (size_t i = pad; i < rank; ++i) {
    const int64_t di = d[i - pad];
    if (di != out[i] && di != 1)
      return InvalidInput("Expand: input dims [{}] do not broadcast to [{}]", fmt::join(d, ","),
                          fmt::join(out, ","));
    strides[i] = di == 1 ? 0 : xs[i - pad];
  }
  return RunGatherMap(ctx, "Expand", out, strides, {}, 0, a.in(0), a.out(0));
}

Status Tile(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, HostInts(a, 1));
  const Dims& dims = a.in(0).dims;
  if (repeats.size() != dims.size())
    return InvalidInput("Tile: {} repeats for rank {}", repeats.size(), dims.size());
  // Output coordinate c of dim i reads x at c % dims[i].
  Dims out_dims, mods;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (repeats[i] < 0) return InvalidInput("Tile: repeat {} of dim {} is negative", repeats[i], i);
    out_dims.push_back(repeats[i] * dims[i]);
    mods.push_back(dims[i]);
  }
  return RunGatherMap(ctx, "Tile", out_dims, Strides(dims), mods, 0, a.in(0), a.out(0));
}

Status SliceGrad(const KernelArgs& a, DevCtx& ctx) {
  const char* op = "a8.SliceGrad";
  const TensorArg &dy = a.in(0), &dx = a.out(0);
  if (dy.dtype != dx.dtype) return InvalidInput("a8.SliceGrad: dy and dx dtypes differ");
  const std::vector<int64_t> starts = a.Ints("starts"), steps = a.Ints("steps");
  const Dims &dy_dims = dy.dims, &data_dims = dx.dims;
  const size_t rank = data_dims.size();
  if (dy_dims.size() != rank || starts.size() != rank || steps.size() != rank)
    return InvalidInput("{}: dy, starts, steps and the data must have the same rank {}", op, rank);
  for (size_t d = 0; d < rank; ++d) {
    if (dy_dims[d] == 0) continue;
    const __int128 last = __int128{starts[d]} + __int128{dy_dims[d] - 1} * steps[d];  // no wrap
    if (steps[d] == 0 || starts[d] < 0 || starts[d] >= data_dims[d] || last < 0 ||
        last >= data_dims[d])
      return InvalidInput("{}: dim {}: {} elements from {} step {} do not fit in {}", op, d,
                          dy_dims[d], starts[d], steps[d], data_dims[d]);
  }
  // Zero bits are 0.0 in every float dtype; then dy lands on its strided positions.
  if (dx.bytes() > 0) A8_RETURN_IF_ERROR(FromDev(Fill(dx.data, 0, dx.bytes(), ctx.stream)));
  const Dims stride = Strides(data_dims), src = Strides(dy_dims);
  std::vector<MapDim> m;
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    m.push_back({dy_dims[d], src[d], 0, steps[d] * stride[d]});
    base += starts[d] * stride[d];
  }
  return RunStridedCopy(ctx, op, m, 0, base, dy.dtype, dy.data, dx.data);
}

// The view Gather and a8.GatherGrad share: the data viewed as [outer, dim, inner] around `axis`
// (normalized), and the indices `idx` (i32 or i64, checked by the caller) gathered along it.
template <typename Params>
void SetGatherView(DevCtx& ctx, const Dims& data_dims, int64_t axis, const TensorArg& idx,
                   Params* p) {
  p->err = ErrOf(ctx);
  p->index_i32 = idx.dtype == DType::kI32;
  p->outer = NumElements(Dims(data_dims.begin(), data_dims.begin() + axis));
  p->dim = data_dims[axis];
  p->nidx = idx.count();
  p->inner = NumElements(Dims(data_dims.begin() + axis + 1, data_dims.end()));
  p->indices = idx.data;
}

Status Gather(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &idx = a.in(1), &y = a.out(0);
  A8_ASSIGN_OR_RETURN(int64_t ax,
                      NormalizeAxis(a.Int("axis"), static_cast<int64_t>(x.dims.size()), "Gather"));
  A8_RETURN_IF_ERROR(CheckIndexDType(idx.dtype, "Gather"));
  movement::GatherParams p;
  SetGatherView(ctx, x.dims, ax, idx, &p);
  p.elem_size = static_cast<int>(DTypeSize(x.dtype));
  if (p.outer * p.nidx * p.inner != y.count())
    return InvalidInput("Gather: the output buffer has {} elements, the op writes {}", y.count(),
                        p.outer * p.nidx * p.inner);
  p.data = x.data;
  p.y = y.data;
  return FromDev(movement::Gather(ctx, p));
}

Status GatherElements(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &idx = a.in(1), &y = a.out(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(a.Int("axis"), rank, "GatherElements"));
  if (static_cast<int64_t>(idx.dims.size()) != rank)
    return InvalidInput("GatherElements: indices rank {} differs from data rank {}",
                        idx.dims.size(), rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (i != ax && idx.dims[i] > x.dims[i])
      return InvalidInput("GatherElements: indices dim {} ({}) exceeds data dim ({})", i,
                          idx.dims[i], x.dims[i]);
  }
  A8_RETURN_IF_ERROR(CheckIndexDType(idx.dtype, "GatherElements"));
  if (rank > movement::kMaxMapRank)
    return Unsupported("GatherElements: rank {} (the CUDA kernel takes up to {})", rank,
                       movement::kMaxMapRank);
  if (y.count() != idx.count())
    return InvalidInput("GatherElements: the output buffer has {} elements, indices {}", y.count(),
                        idx.count());
  movement::GatherElementsParams p;
  p.err = ErrOf(ctx);
  p.elem_size = static_cast<int>(DTypeSize(x.dtype));
  p.index_i32 = idx.dtype == DType::kI32;
  p.rank = static_cast<int>(rank);
  p.axis = static_cast<int>(ax);
  const Dims strides = Strides(x.dims);
  for (int64_t i = 0; i < rank; ++i) {
    p.index_dims[i] = idx.dims[i];
    p.data_strides[i] = strides[i];
  }
  p.axis_dim = x.dims[ax];
  p.data = x.data;
  p.indices = idx.data;
  p.y = y.data;
  return FromDev(movement::GatherElements(ctx, p));
}

Status Pad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &y = a.out(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> pads, HostInts(a, 1));
  if (!a.has_in(1)) pads = a.Ints("pads");
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> axes, HostInts(a, 3));
  A8_RETURN_IF_ERROR(ExpandPadAxes(rank, axes, &pads));
  const std::string mode = a.Str("mode");
  movement::PadParams p;
  if (mode == "constant")
    p.mode = 0;
  else if (mode == "reflect")
    p.mode = 1;
  else if (mode == "edge")
    p.mode = 2;
  else if (mode == "wrap")
    p.mode = 3;
  else
    return Unsupported("Pad: mode '{}' is not supported by the CPU backend", mode);
  // cpu::Pad's checks.
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return InvalidInput("Pad: {} pads for rank {}", pads.size(), rank);
  Dims out_dims(rank);
  for (int64_t i = 0; i < rank; ++i) {
    out_dims[i] = x.dims[i] + pads[i] + pads[rank + i];
    if (out_dims[i] < 0) return InvalidInput("Pad: dim {} would be {}", i, out_dims[i]);
    if (p.mode != 0 && out_dims[i] > 0 && x.dims[i] == 0)
      return InvalidInput("Pad: dim {} is empty and cannot be padded by edge or reflect", i);
    if (p.mode == 3 && (pads[i] < 0 || pads[rank + i] < 0))
      return InvalidInput("Pad: mode 'wrap' takes no negative pads (dim {})", i);
    if (p.mode == 1 && (pads[i] >= x.dims[i] || pads[rank + i] >= x.dims[i]) && x.dims[i] > 1)
      return InvalidInput("Pad: reflect pads {}+{} must be smaller than dim {} ({})", pads[i],
                          pads[rank + i], i, x.dims[i]);
  }
  if (NumElements(out_dims) != y.count())
    return InvalidInput("Pad: the output buffer has {} elements, the op writes {}", y.count(),
                        NumElements(out_dims));
  if (y.count() == 0) return Status::Ok();
  if (rank > movement::kMaxMapRank)
    return Unsupported("Pad: rank {} (the CUDA kernel takes up to {})", rank,
                       movement::kMaxMapRank);
  const bool has_value = a.has_in(2) && a.in(2).count() > 0;
  if (has_value && a.in(2).dtype != x.dtype)
    return InvalidInput("Pad: constant_value is {}, the data {}", DTypeName(a.in(2).dtype),
                        DTypeName(x.dtype));
  p.elem_size = static_cast<int>(DTypeSize(x.dtype));
  p.rank = static_cast<int>(rank);
  for (int64_t i = 0; i < rank; ++i) {
    p.in_dims[i] = x.dims[i];
    p.out_dims[i] = out_dims[i];
    p.pads_begin[i] = pads[i];
  }
  p.x = x.data;
  p.value = has_value ? a.in(2).data : nullptr;  // read by the kernel
  p.y = y.data;
  return FromDev(movement::Pad(ctx, p));
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
  const int64_t rank = static_cast<int64_t>(y.dims.size());
  A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(a.Int("axis"), rank, "OneHot"));
  if (a.in(2).count() != 2 || a.in(2).dtype != y.dtype)
    return InvalidInput("OneHot: values must be 2 elements of the output dtype");
  movement::OneHotParams p;
  p.depth = y.dims[ax];
  if (p.depth < 1) return InvalidInput("OneHot: depth {} < 1", p.depth);
  A8_RETURN_IF_ERROR(
      NormalizeAxis(ax, static_cast<int64_t>(idx.dims.size()) + 1, "OneHot").status());
  p.outer = NumElements(Dims(idx.dims.begin(), idx.dims.begin() + ax));
  p.inner = NumElements(Dims(idx.dims.begin() + ax, idx.dims.end()));
  if (p.outer * p.depth * p.inner != y.count())
    return InvalidInput("OneHot: the output buffer has {} elements, the op writes {}", y.count(),
                        p.outer * p.depth * p.inner);
  p.index_dtype = idx.dtype;
  p.elem_size = static_cast<int>(DTypeSize(y.dtype));
  p.indices = idx.data;
  p.values = a.in(2).data;  // read by the kernel
  p.y = y.data;
  return FromDev(movement::OneHot(ctx, p));
}

Status Range(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& y = a.out(0);
  if (a.in(0).dtype != y.dtype || a.in(2).dtype != y.dtype || a.in(0).count() != 1 ||
      a.in(2).count() != 1)
    return InvalidInput("Range: start and delta must be one element of the output dtype");
  movement::RangeParams p;
  p.dtype = y.dtype;
  if (y.dtype == DType::kF16 || y.dtype == DType::kBF16) {
    const int64_t stash = a.Int("stash_type");
    if (stash != 1 && stash != 11)
      return InvalidInput("Range: stash_type {} is neither 1 (FLOAT) nor 11 (DOUBLE)", stash);
    p.stash = stash == 11 ? DType::kF64 : DType::kF32;
  }
  p.n = y.count();
  p.start = a.in(0).data;  // read by the kernel
  p.delta = a.in(2).data;
  p.y = y.data;
  return FromDev(movement::Range(ctx, p));
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
    return Unsupported("Shape: {} dims (the CUDA kernel writes up to {})", n,
                       movement::kMaxShapeValues);
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
    if (v->host == nullptr)
      return Unsupported("ConstantOfShape: the value has no host copy on the CUDA backend");
    std::memcpy(&p.bits, v->host, static_cast<size_t>(p.elem_size));  // little endian
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
  SetGatherView(ctx, data_dims, axis, idx, &p);
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
      {"Gather", kAllTypes, 0, Gather, "indices: i32/i64 (out of range: 0)"},
      {"GatherElements", kAllTypes, 0, GatherElements, "indices: i32/i64 (out of range: 0)"},
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

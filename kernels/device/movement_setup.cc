#include "kernels/device/movement_setup.h"

#include <fmt/ranges.h>

#include "kernels/cpu/dtype.h"  // ElemSize
#include "kernels/device/host_status.h"

namespace a8::A8_DEV_NS::movement {
namespace {

Status CheckCount(const char* op, int64_t writes, int64_t y_count) {
  if (writes != y_count)
    return InvalidInput("{}: the output buffer has {} elements, the op writes {}", op, y_count,
                        writes);
  return Status::Ok();
}

int64_t IndexAt(DType dt, const void* p, int64_t i) {
  return dt == DType::kI32 ? static_cast<const int32_t*>(p)[i] : static_cast<const int64_t*>(p)[i];
}

// One dim of an index map: coordinate c reads src at (c % src_mod, or c) * src_stride and writes
// dst at c * dst_stride.
struct MapDim {
  int64_t dim, src_stride, src_mod, dst_stride;
};

// dst[...] = src[...] over the map `dims` (outermost first) after dropping dims of 1 and merging
// neighbours that are contiguous on both sides; Unsupported naming `op` when more than
// kMaxMapRank dims are left.
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
  if (m.size() > static_cast<size_t>(kMaxMapRank))
    return Unsupported(
        "{}: the movement kernel moves at most {} non-contiguous dims, this needs {}", op,
        kMaxMapRank, m.size());
  StridedCopyParams p;
  p.rank = static_cast<int>(m.size());
  p.elem_size = static_cast<int>(cpu::ElemSize(dtype));
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
  return FromDev(StridedCopy(ctx, p));
}

// Unsupported naming `op` for an index dtype other than i32 and i64.
Status CheckIndexDType(DType dt, const char* op) {
  if (dt != DType::kI32 && dt != DType::kI64)
    return Unsupported("{}: index dtype {} (i32 or i64 expected)", op, ElemName(dt));
  return Status::Ok();
}

// Every one of the `n` indices at `host_indices` (i32 or i64, host memory) in [-len, len):
// InvalidInput naming `op`, the index and its element otherwise. Gather and GatherElements call
// it where the host can read the indices; elsewhere the kernel raises DevErr and writes 0.
Status CheckIndicesOnHost(const char* op, DType dt, const void* host_indices, int64_t n,
                          int64_t len) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = IndexAt(dt, host_indices, i);
    if (v < -len || v >= len)
      return InvalidInput("{}: index {} (element {}) is out of range [-{}, {})", op, v, i, len,
                          len);
  }
  return Status::Ok();
}

// A gather-style map: y (contiguous over `out_dims`) reads x with `src_strides` (and wraps at
// `src_mod`, where given) from `src_base`.
Status RunGatherMap(DevCtx& ctx, const char* op, const Dims& out_dims, const Dims& src_strides,
                    const Dims& src_mod, int64_t src_base, DType dtype, const void* x, void* y,
                    int64_t y_count) {
  A8_RETURN_IF_ERROR(CheckCount(op, NumElements(out_dims), y_count));
  const Dims dst = Strides(out_dims);
  std::vector<MapDim> m;
  for (size_t i = 0; i < out_dims.size(); ++i)
    m.push_back({out_dims[i], src_strides[i], src_mod.empty() ? 0 : src_mod[i], dst[i]});
  return RunStridedCopy(ctx, op, m, src_base, 0, dtype, x, y);
}

}  // namespace

Status Transpose(DevCtx& ctx, DType dtype, const Dims& dims, const std::vector<int64_t>& perm,
                 const void* x, void* y, int64_t y_count) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> p = perm;
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
  return RunGatherMap(ctx, "Transpose", out_dims, in_strides, {}, 0, dtype, x, y, y_count);
}

Status Concat(DevCtx& ctx, DType dtype, const std::vector<Dims>& in_dims,
              const std::vector<const void*>& xs, int64_t axis, void* y, int64_t y_count) {
  if (in_dims.empty() || in_dims.size() != xs.size())
    return InvalidInput("Concat: {} inputs with {} shapes", xs.size(), in_dims.size());
  const Dims& d0 = in_dims[0];
  A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(axis, static_cast<int64_t>(d0.size()), "Concat"));
  int64_t outer = 1, inner = 1, total = 0;
  for (const Dims& d : in_dims) {
    bool ok = d.size() == d0.size();
    for (size_t k = 0; ok && k < d.size(); ++k) ok = static_cast<int64_t>(k) == ax || d[k] == d0[k];
    if (!ok)
      return InvalidInput("Concat: shapes [{}] and [{}] differ off axis {}", fmt::join(d0, ","),
                          fmt::join(d, ","), ax);
    total += d[ax];
  }
  for (int64_t i = 0; i < ax; ++i) outer *= d0[i];
  for (size_t i = ax + 1; i < d0.size(); ++i) inner *= d0[i];
  A8_RETURN_IF_ERROR(CheckCount("Concat", outer * total * inner, y_count));
  // Input k is the [outer, chunk] block at column `at` of y viewed as [outer, total * inner].
  int64_t at = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const int64_t chunk = in_dims[k][ax] * inner;
    A8_RETURN_IF_ERROR(RunStridedCopy(ctx, "Concat",
                                      {{outer, chunk, 0, total * inner}, {chunk, 1, 0, 1}}, 0, at,
                                      dtype, xs[k], y));
    at += chunk;
  }
  return Status::Ok();
}

Status Split(DevCtx& ctx, DType dtype, const Dims& dims, int64_t axis,
             const std::vector<int64_t>& sizes, const void* x, const std::vector<void*>& ys) {
  A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(axis, static_cast<int64_t>(dims.size()), "Split"));
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s < 0 ? dims[ax] + 1 : s;
  if (sizes.size() != ys.size() || sum != dims[ax])
    return InvalidInput("Split: sizes [{}] do not split dim {} of {} into {} outputs",
                        fmt::join(sizes, ","), ax, dims[ax], ys.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < ax; ++i) outer *= dims[i];
  for (size_t i = ax + 1; i < dims.size(); ++i) inner *= dims[i];
  int64_t at = 0;
  for (size_t k = 0; k < ys.size(); ++k) {
    const int64_t chunk = sizes[k] * inner;
    A8_RETURN_IF_ERROR(RunStridedCopy(ctx, "Split",
                                      {{outer, dims[ax] * inner, 0, chunk}, {chunk, 1, 0, 1}}, at,
                                      0, dtype, x, ys[k]));
    at += chunk;
  }
  return Status::Ok();
}

Status Slice(DevCtx& ctx, DType dtype, const Dims& dims, const SliceSpec& spec, const void* x,
             void* y, int64_t y_count) {
  const size_t rank = dims.size();
  if (spec.start.size() != rank || spec.step.size() != rank || spec.count.size() != rank)
    return InvalidInput("Slice: spec has rank {} for input rank {}", spec.start.size(), rank);
  const Dims strides = Strides(dims);
  Dims in_strides(rank);
  int64_t base = 0;
  for (size_t i = 0; i < rank; ++i) {
    in_strides[i] = strides[i] * spec.step[i];
    if (spec.count[i] > 0) base += spec.start[i] * strides[i];
  }
  return RunGatherMap(ctx, "Slice", spec.count, in_strides, {}, base, dtype, x, y, y_count);
}

Status Expand(DevCtx& ctx, DType dtype, const Dims& dims, const void* x, const Dims& out_dims,
              void* y, int64_t y_count) {
  const size_t rank = out_dims.size();
  if (dims.size() > rank)
    return InvalidInput("Expand: input rank {} exceeds output rank {}", dims.size(), rank);
  const size_t pad = rank - dims.size();
  const Dims xs = Strides(dims);
  Dims strides(rank, 0);
  for (size_t i = pad; i < rank; ++i) {
    const int64_t di = dims[i - pad];
    if (di != out_dims[i] && di != 1)
      return InvalidInput("Expand: input dims [{}] do not broadcast to [{}]", fmt::join(dims, ","),
                          fmt::join(out_dims, ","));
    strides[i] = di == 1 ? 0 : xs[i - pad];
  }
  return RunGatherMap(ctx, "Expand", out_dims, strides, {}, 0, dtype, x, y, y_count);
}

Status Tile(DevCtx& ctx, DType dtype, const Dims& dims, const std::vector<int64_t>& repeats,
            const void* x, void* y, int64_t y_count) {
  if (repeats.size() != dims.size())
    return InvalidInput("Tile: {} repeats for rank {}", repeats.size(), dims.size());
  // Output coordinate c of dim i reads x at c % dims[i].
  Dims out_dims, mods;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (repeats[i] < 0) return InvalidInput("Tile: repeat {} of dim {} is negative", repeats[i], i);
    out_dims.push_back(repeats[i] * dims[i]);
    mods.push_back(dims[i]);
  }
  return RunGatherMap(ctx, "Tile", out_dims, Strides(dims), mods, 0, dtype, x, y, y_count);
}

Status SliceGrad(DevCtx& ctx, DType dtype, const Dims& dy_dims, const void* dy,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
                 const Dims& data_dims, void* dx) {
  const char* op = "a8.SliceGrad";
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
  const size_t bytes = static_cast<size_t>(NumElements(data_dims)) * cpu::ElemSize(dtype);
  if (bytes > 0) A8_RETURN_IF_ERROR(FromDev(Fill(dx, 0, bytes, ctx.stream)));
  const Dims stride = Strides(data_dims), src = Strides(dy_dims);
  std::vector<MapDim> m;
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    m.push_back({dy_dims[d], src[d], 0, steps[d] * stride[d]});
    base += starts[d] * stride[d];
  }
  return RunStridedCopy(ctx, op, m, 0, base, dtype, dy, dx);
}

Status Gather(DevCtx& ctx, DType dtype, const Dims& data_dims, const void* data, int64_t axis,
              DType index_dtype, const Dims& index_dims, const void* indices,
              const void* host_indices, void* y, int64_t y_count) {
  A8_ASSIGN_OR_RETURN(int64_t ax,
                      NormalizeAxis(axis, static_cast<int64_t>(data_dims.size()), "Gather"));
  A8_RETURN_IF_ERROR(CheckIndexDType(index_dtype, "Gather"));
  GatherParams p;
  SetGatherView(ctx, data_dims, ax, index_dtype, NumElements(index_dims), indices, &p);
  A8_RETURN_IF_ERROR(CheckCount("Gather", p.outer * p.nidx * p.inner, y_count));
  if (host_indices != nullptr)
    A8_RETURN_IF_ERROR(CheckIndicesOnHost("Gather", index_dtype, host_indices, p.nidx, p.dim));
  p.elem_size = static_cast<int>(cpu::ElemSize(dtype));
  p.data = data;
  p.y = y;
  return FromDev(Gather(ctx, p));
}

Status GatherElements(DevCtx& ctx, DType dtype, const Dims& data_dims, const void* data,
                      int64_t axis, DType index_dtype, const Dims& index_dims, const void* indices,
                      const void* host_indices, void* y, int64_t y_count) {
  const int64_t rank = static_cast<int64_t>(data_dims.size());
  A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(axis, rank, "GatherElements"));
  if (static_cast<int64_t>(index_dims.size()) != rank)
    return InvalidInput("GatherElements: indices rank {} differs from data rank {}",
                        index_dims.size(), rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (i != ax && index_dims[i] > data_dims[i])
      return InvalidInput("GatherElements: indices dim {} ({}) exceeds data dim ({})", i,
                          index_dims[i], data_dims[i]);
  }
  A8_RETURN_IF_ERROR(CheckIndexDType(index_dtype, "GatherElements"));
  if (rank > kMaxMapRank)
    return Unsupported("GatherElements: rank {} (the kernel takes up to {})", rank, kMaxMapRank);
  const int64_t n = NumElements(index_dims);
  A8_RETURN_IF_ERROR(CheckCount("GatherElements", n, y_count));
  if (host_indices != nullptr) {
    A8_RETURN_IF_ERROR(
        CheckIndicesOnHost("GatherElements", index_dtype, host_indices, n, data_dims[ax]));
  }
  GatherElementsParams p;
  p.err = ErrOf(ctx);
  p.elem_size = static_cast<int>(cpu::ElemSize(dtype));
  p.index_i32 = index_dtype == DType::kI32;
  p.rank = static_cast<int>(rank);
  p.axis = static_cast<int>(ax);
  const Dims strides = Strides(data_dims);
  for (int64_t i = 0; i < rank; ++i) {
    p.index_dims[i] = index_dims[i];
    p.data_strides[i] = strides[i];
  }
  p.axis_dim = data_dims[ax];
  p.data = data;
  p.indices = indices;
  p.y = y;
  return FromDev(GatherElements(ctx, p));
}

Status Pad(DevCtx& ctx, DType dtype, const Dims& dims, const std::vector<int64_t>& pads,
           PadMode mode, const void* value, const void* x, void* y, int64_t y_count) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return InvalidInput("Pad: {} pads for rank {}", pads.size(), rank);
  Dims out_dims(rank);
  for (int64_t i = 0; i < rank; ++i) {
    out_dims[i] = dims[i] + pads[i] + pads[rank + i];
    if (out_dims[i] < 0) return InvalidInput("Pad: dim {} would be {}", i, out_dims[i]);
    if (mode != PadMode::kConstant && out_dims[i] > 0 && dims[i] == 0)
      return InvalidInput("Pad: dim {} is empty and cannot be padded by {}", i,
                          mode == PadMode::kWrap ? "wrap" : "edge or reflect");
    if (mode == PadMode::kWrap && (pads[i] < 0 || pads[rank + i] < 0))
      return InvalidInput("Pad: mode 'wrap' takes no negative pads (dim {})", i);
    if (mode == PadMode::kReflect && (pads[i] >= dims[i] || pads[rank + i] >= dims[i]) &&
        dims[i] > 1)
      return InvalidInput("Pad: reflect pads {}+{} must be smaller than dim {} ({})", pads[i],
                          pads[rank + i], i, dims[i]);
  }
  A8_RETURN_IF_ERROR(CheckCount("Pad", NumElements(out_dims), y_count));
  if (y_count == 0) return Status::Ok();
  if (rank > kMaxMapRank)
    return Unsupported("Pad: rank {} (the kernel takes up to {})", rank, kMaxMapRank);
  static_assert(static_cast<int>(PadMode::kReflect) == 1 && static_cast<int>(PadMode::kEdge) == 2 &&
                    static_cast<int>(PadMode::kWrap) == 3,
                "PadParams::mode numbers the modes as PadMode does (movement_impl.h PadSource)");
  PadParams p;
  p.mode = static_cast<int>(mode);
  p.elem_size = static_cast<int>(cpu::ElemSize(dtype));
  p.rank = static_cast<int>(rank);
  for (int64_t i = 0; i < rank; ++i) {
    p.in_dims[i] = dims[i];
    p.out_dims[i] = out_dims[i];
    p.pads_begin[i] = pads[i];
  }
  p.x = x;
  p.value = value;
  p.y = y;
  return FromDev(Pad(ctx, p));
}

Status OneHot(DevCtx& ctx, DType index_dtype, const Dims& index_dims, const void* indices,
              int64_t depth, int64_t axis, DType dtype, const void* values, void* y,
              int64_t y_count) {
  A8_ASSIGN_OR_RETURN(int64_t ax,
                      NormalizeAxis(axis, static_cast<int64_t>(index_dims.size()) + 1, "OneHot"));
  if (depth < 1) return InvalidInput("OneHot: depth {} < 1", depth);
  OneHotParams p;
  p.depth = depth;
  p.outer = NumElements(Dims(index_dims.begin(), index_dims.begin() + ax));
  p.inner = NumElements(Dims(index_dims.begin() + ax, index_dims.end()));
  A8_RETURN_IF_ERROR(CheckCount("OneHot", p.outer * p.depth * p.inner, y_count));
  p.index_dtype = index_dtype;
  p.elem_size = static_cast<int>(cpu::ElemSize(dtype));
  p.indices = indices;
  p.values = values;
  p.y = y;
  return FromDev(OneHot(ctx, p));
}

Status Range(DevCtx& ctx, DType dtype, const void* start, const void* delta, int64_t n, void* y,
             DType stash) {
  return FromDev(Range(
      ctx,
      RangeParams{.dtype = dtype, .stash = stash, .n = n, .start = start, .delta = delta, .y = y}));
}

}  // namespace a8::A8_DEV_NS::movement

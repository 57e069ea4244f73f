// Device kernels of the data-movement family (movement_setup.h sets them up):
// Transpose, Slice, Expand, Tile, Concat, Split and a8.SliceGrad are all one strided copy (an
// index map from each element of an iteration space to a source and a destination offset);
// Gather, GatherElements, Pad, Trilu, OneHot and Range have their own index functors; Shape,
// Size and ConstantOfShape write values the host knows, captured by value in the functor; and
// a8.GatherGrad is a deterministic two-pass scatter-add (no atomics).
//
// Indices are read on the device: the kernels make an element whose index is out of range 0
// (Gather, GatherElements) or drop its contribution (GatherGrad) and raise DevErr, never read or
// write out of bounds. Where the host can read the indices (the CPU backend, the emulation, a
// constant), the set-up names such an index before the kernel runs (movement_setup.cc).
//
// Declarations only: this header is included by host setup code and compiled by nvcc.
#pragma once

#include <cstdint>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS::movement {

// The most dims an index map may have after merging contiguous dims (launch.h's kMaxRank).
constexpr int kMaxMapRank = 8;
// The most values Shape writes.
constexpr int kMaxShapeValues = 16;

// For every coordinate c of `dims` (row-major; n = prod dims):
//   dst[dst_base + sum c_k * dst_strides[k]] = src[src_base + sum w_k * src_strides[k]]
// with w_k = c_k % src_mod[k] where src_mod[k] > 0 (Tile) and c_k otherwise. Strides may be 0
// (broadcast) or negative (negative Slice steps). Elements are moved as `elem_size` bytes.
struct StridedCopyParams {
  int rank = 0;
  int elem_size = 0;  // 1, 2, 4 or 8
  int64_t dims[kMaxMapRank] = {};
  int64_t src_strides[kMaxMapRank] = {};
  int64_t src_mod[kMaxMapRank] = {};
  int64_t dst_strides[kMaxMapRank] = {};
  int64_t src_base = 0;
  int64_t dst_base = 0;
  const void* src = nullptr;
  void* dst = nullptr;
};
DevStatus StridedCopy(DevCtx& ctx, const StridedCopyParams& p);

// y[o, j, c] = data[o, indices[j], c] for data viewed as [outer, dim, inner] and y as
// [outer, nidx, inner]; indices are i32 or i64, negative ones count from the end.
struct GatherParams {
  DevErr err;  // raised for an index out of range
  int elem_size = 0;
  bool index_i32 = false;
  int64_t outer = 0, dim = 0, nidx = 0, inner = 0;
  const void* data = nullptr;
  const void* indices = nullptr;
  void* y = nullptr;
};
DevStatus Gather(DevCtx& ctx, const GatherParams& p);

// y[c] = data[c with c[axis] replaced by indices[c]]; y has the dims of indices.
struct GatherElementsParams {
  DevErr err;  // raised for an index out of range
  int elem_size = 0;
  bool index_i32 = false;
  int rank = 0;
  int axis = 0;
  int64_t index_dims[kMaxMapRank] = {};
  int64_t data_strides[kMaxMapRank] = {};
  int64_t axis_dim = 0;  // data dims[axis]
  const void* data = nullptr;
  const void* indices = nullptr;
  void* y = nullptr;
};
DevStatus GatherElements(DevCtx& ctx, const GatherElementsParams& p);

// Pad (modes as PadMode, kernel_types.h): out_dims = in_dims + pads_begin + pads_end; `value` is one
// element in device memory or null (zero).
struct PadParams {
  int elem_size = 0;
  int mode = 0;  // 0 constant, 1 reflect, 2 edge, 3 wrap (pads >= 0)
  int rank = 0;
  int64_t in_dims[kMaxMapRank] = {};
  int64_t out_dims[kMaxMapRank] = {};
  int64_t pads_begin[kMaxMapRank] = {};
  const void* x = nullptr;
  const void* value = nullptr;
  void* y = nullptr;
};
DevStatus Pad(DevCtx& ctx, const PadParams& p);

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each [rows, cols] matrix.
// k is read by the kernel from device memory (`k_ptr`, an i64 or i32 scalar, constant or a
// graph input: no host sync in a captured step), 0 when `k_ptr` is null.
struct TriluParams {
  int elem_size = 0;
  bool upper = true;
  const void* k_ptr = nullptr;
  bool k_i32 = false;
  int64_t count = 0, rows = 0, cols = 0;
  const void* x = nullptr;
  void* y = nullptr;
};
DevStatus Trilu(DevCtx& ctx, const TriluParams& p);

// y[o, d, i] = d == index[o, i] ? values[1] : values[0] (negative indices count from the end;
// float indices truncate like a Cast to i64). `values`: two elements of y's type, on the device.
struct OneHotParams {
  DType index_dtype = DType::kI64;
  int elem_size = 0;
  int64_t outer = 0, depth = 0, inner = 0;
  const void* indices = nullptr;
  const void* values = nullptr;
  void* y = nullptr;
};
DevStatus OneHot(DevCtx& ctx, const OneHotParams& p);

// y[0] = *start, y[i] = y[i - 1] + *delta, accumulated in the dtype as ONNX's function body and
// onnxruntime do (so float ranges run on one thread; integer ones compute start + i * delta, the
// same values).
// f16 / bf16 ranges are computed as onnx's reference (Range-27) computes them: numpy's arange in
// `stash` (f32 or f64; the stash_type attribute), a0 = start, a1 = start + delta, then
// a0 + i * (a1 - a0) for i >= 2, each element rounded once to the dtype (one thread each).
struct RangeParams {
  DType dtype = DType::kF32;
  DType stash = DType::kF32;  // f16 / bf16 only: f32 or f64
  int64_t n = 0;
  const void* start = nullptr;  // device
  const void* delta = nullptr;  // device
  void* y = nullptr;
};
DevStatus Range(DevCtx& ctx, const RangeParams& p);

// y[0..n) = the element whose bytes are the low `elem_size` bytes of `bits` (host value).
struct FillValueParams {
  int elem_size = 0;
  uint64_t bits = 0;
  int64_t n = 0;
  void* y = nullptr;
};
DevStatus FillValue(DevCtx& ctx, const FillValueParams& p);

// y[0..n) = values[0..n) as i64 (host values: Shape).
struct WriteInt64sParams {
  int n = 0;
  int64_t values[kMaxShapeValues] = {};
  void* y = nullptr;
};
DevStatus WriteInt64s(DevCtx& ctx, const WriteInt64sParams& p);

// dx[o, d, c] = sum over j with indices[j] == d (in increasing j) of dy[o, j, c]: dx viewed as
// [outer, dim, inner], dy as [outer, nidx, inner]. Pass 1 sorts the positions j stably by
// index into scratch; pass 2 gives each dx element one thread that sums its run in order, the
// CPU kernel's order, so results match it bit for bit. Float dtypes only.
struct GatherGradParams {
  DevErr err;  // raised for an index out of range
  DType dtype = DType::kF32;
  bool index_i32 = false;
  int64_t outer = 0, dim = 0, nidx = 0, inner = 0;
  const void* dy = nullptr;
  const void* indices = nullptr;
  void* dx = nullptr;
};
DevStatus GatherGrad(DevCtx& ctx, const GatherGradParams& p);

}  // namespace a8::A8_DEV_NS::movement

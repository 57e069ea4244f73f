// Data movement: Transpose, Concat, Split, Slice, Gather, GatherElements, Expand, Tile, Pad,
// OneHot, Range. (Trilu has one body for both backends: kernels/device/movement_impl.h.)
//
// Most of these never look at values, so they run on any dtype by element size. Index inputs
// (Gather, GatherElements, OneHot) are i32 or i64, may be negative (counted from the end) and
// are checked: an index out of range is InvalidInput naming the op, never a wild read.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

// y = transpose(x, perm); y's dims are x's permuted. An empty perm reverses the dims.
Status Transpose(DType dtype, const Dims& dims, const std::vector<int64_t>& perm, const void* x,
                 void* y);

// Inputs agree on every dim but `axis` (which may be negative).
Status Concat(DType dtype, const std::vector<Dims>& in_dims, const std::vector<const void*>& xs,
              int64_t axis, void* y);

// Splits along `axis` into pieces of `sizes` (summing to dims[axis]).
Status Split(DType dtype, const Dims& dims, int64_t axis, const std::vector<int64_t>& sizes,
             const void* x, const std::vector<void*>& ys);

// ONNX Slice resolved to a start, step and count per dim (kernels/common/kernel_types.h).
using a8::ResolveSlice;
using a8::SliceSpec;

Status Slice(DType dtype, const Dims& dims, const SliceSpec& spec, const void* x, void* y);

// y = take(data, indices, axis): dims data[:axis] + indices + data[axis+1:].
Status Gather(DType dtype, const Dims& data_dims, const void* data, int64_t axis, DType index_dtype,
              const Dims& index_dims, const void* indices, void* y);

// y[i...] = data[i... with i[axis] replaced by indices[i...]]; y has the dims of indices.
Status GatherElements(DType dtype, const Dims& data_dims, const void* data, int64_t axis,
                      DType index_dtype, const Dims& index_dims, const void* indices, void* y);

// Broadcasts x to `out_dims` (Expand after the broadcast of x and the shape is computed).
Status Expand(DType dtype, const Dims& dims, const void* x, const Dims& out_dims, void* y);

// y = x repeated `repeats[i]` times along every dim i.
Status Tile(DType dtype, const Dims& dims, const std::vector<int64_t>& repeats, const void* x,
            void* y);

using a8::PadMode;  // kernels/common/kernel_types.h

// pads: ONNX order (begins of every dim, then ends); negative pads crop. `value` (one element of
// dtype, or null for zero) fills kConstant. Reflect needs dims > pads on each side.
Status Pad(DType dtype, const Dims& dims, const std::vector<int64_t>& pads, PadMode mode,
           const void* value, const void* x, void* y);

// y has the dims of indices with `depth` inserted at `axis`; values = {off, on} of dtype.
// Indices in [-depth, depth) select (negative ones count from the end); others give all off.
Status OneHot(DType index_dtype, const Dims& index_dims, const void* indices, int64_t depth,
              int64_t axis, DType dtype, const void* values, void* y);

// Number of elements of Range(start, limit, delta): max(ceil((limit - start) / delta), 0).
StatusOr<int64_t> RangeCount(double start, double limit, double delta);

// y[0] = start, y[i] = y[i - 1] + delta (accumulated in the dtype, as the ONNX function body
// and onnxruntime do). start/delta point to one element of dtype.
Status Range(DType dtype, const void* start, const void* delta, int64_t n, void* y);

}  // namespace a8::cpu

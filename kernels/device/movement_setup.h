// The host set-up of the data-movement kernels (movement.h) from dims, dtypes and ONNX
// attributes: the one copy of their checks and messages. The backends' entries
// (runtime/device/ops_movement.cc, which the CPU backend runs too), the CPU backend's kernels that
// move data (the integer Gemm, the variadic elementwise ops) and constant folding call these;
// the last two run them on the host (kernels/emu/run_on_host.h). Data pointers are device memory
// (host memory on the host). `y_count` is the number of elements the caller's output holds:
// InvalidInput naming the op when the op writes another number.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/common/kernel_types.h"
#include "kernels/device/movement.h"

namespace a8::A8_DEV_NS::movement {

// y = transpose(x, perm); an empty perm reverses the dims.
Status Transpose(DevCtx& ctx, DType dtype, const Dims& dims, const std::vector<int64_t>& perm,
                 const void* x, void* y, int64_t y_count);

// The inputs (`in_dims`, agreeing on every dim but `axis`, which may be negative) one after the
// other along `axis`.
Status Concat(DevCtx& ctx, DType dtype, const std::vector<Dims>& in_dims,
              const std::vector<const void*>& xs, int64_t axis, void* y, int64_t y_count);

// x split along `axis` into pieces of `sizes` (summing to dims[axis]; -1 counts as dims[axis] + 1,
// so that it never sums right).
Status Split(DevCtx& ctx, DType dtype, const Dims& dims, int64_t axis,
             const std::vector<int64_t>& sizes, const void* x, const std::vector<void*>& ys);

// ONNX Slice resolved to a start, step and count per dim (kernel_types.h ResolveSlice).
Status Slice(DevCtx& ctx, DType dtype, const Dims& dims, const SliceSpec& spec, const void* x,
             void* y, int64_t y_count);

// x broadcast to `out_dims` (numpy rules, x's dims aligned to the right).
Status Expand(DevCtx& ctx, DType dtype, const Dims& dims, const void* x, const Dims& out_dims,
              void* y, int64_t y_count);

// x repeated `repeats[i]` times along every dim i.
Status Tile(DevCtx& ctx, DType dtype, const Dims& dims, const std::vector<int64_t>& repeats,
            const void* x, void* y, int64_t y_count);

// The gradient of a Slice resolved to a start and step per dim (the starts and steps of every dim
// of the forward input, steps non-zero): dx (of `data_dims`) is zero but for
// dx[start + k * step] = dy[k] (per dim), dy having the slice's dims.
Status SliceGrad(DevCtx& ctx, DType dtype, const Dims& dy_dims, const void* dy,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
                 const Dims& data_dims, void* dx);

// The view Gather and a8.GatherGrad share: the data viewed as [outer, dim, inner] around `axis`
// (normalized), and the indices (i32 or i64, `count` of them) gathered along it.
template <typename Params>
void SetGatherView(const DevCtx& ctx, const Dims& data_dims, int64_t axis, DType index_dtype,
                   int64_t count, const void* indices, Params* p) {
  p->err = ErrOf(ctx);
  p->index_i32 = index_dtype == DType::kI32;
  p->outer = NumElements(Dims(data_dims.begin(), data_dims.begin() + axis));
  p->dim = data_dims[axis];
  p->nidx = count;
  p->inner = NumElements(Dims(data_dims.begin() + axis + 1, data_dims.end()));
  p->indices = indices;
}

// y = take(data, indices, axis): dims data[:axis] + indices + data[axis+1:]. `host_indices`: the
// indices where the host can read them (checked, CheckIndicesOnHost), or null.
Status Gather(DevCtx& ctx, DType dtype, const Dims& data_dims, const void* data, int64_t axis,
              DType index_dtype, const Dims& index_dims, const void* indices,
              const void* host_indices, void* y, int64_t y_count);

// y[i...] = data[i... with i[axis] replaced by indices[i...]]; y has the dims of the indices.
Status GatherElements(DevCtx& ctx, DType dtype, const Dims& data_dims, const void* data,
                      int64_t axis, DType index_dtype, const Dims& index_dims, const void* indices,
                      const void* host_indices, void* y, int64_t y_count);

// pads: ONNX order (begins of every dim, then ends); negative pads crop (not with kWrap). `value`
// (one element of dtype, read by the kernel, or null for zero) fills kConstant; kReflect needs
// dims > pads on each side.
Status Pad(DevCtx& ctx, DType dtype, const Dims& dims, const std::vector<int64_t>& pads,
           PadMode mode, const void* value, const void* x, void* y, int64_t y_count);

// y has the dims of the indices with `depth` inserted at `axis` (of y's rank; may be negative);
// values = {off, on} of dtype, read by the kernel. Indices of any numeric dtype (float ones
// truncate); those outside [-depth, depth) give all off.
Status OneHot(DevCtx& ctx, DType index_dtype, const Dims& index_dims, const void* indices,
              int64_t depth, int64_t axis, DType dtype, const void* values, void* y,
              int64_t y_count);

// y[0] = *start, y[i] = y[i - 1] + *delta in the dtype (RangeParams; `stash` for f16 / bf16).
Status Range(DevCtx& ctx, DType dtype, const void* start, const void* delta, int64_t n, void* y,
             DType stash = DType::kF32);

}  // namespace a8::A8_DEV_NS::movement

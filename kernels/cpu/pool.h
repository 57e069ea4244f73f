// Pooling: MaxPool (with ONNX indices), AveragePool, GlobalAveragePool, GlobalMaxPool over 1 to 3
// spatial dims. Sums accumulate in float for f16/bf16/f32 (double for f64) and round once.
//
// Output size: floor((in + pads - ((k - 1) * d + 1)) / s) + 1, or ceil with ceil_mode, where a
// last window that would start past the input and its begin pad is dropped (as onnxruntime and
// PyTorch do). AveragePool divides by the taps inside the input, or with count_include_pad by the
// taps inside the padded input [-pad_begin, in + pad_end).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

using a8::PoolParams;  // kernels/common/kernel_types.h

StatusOr<Dims> PoolOutputSpatial(const PoolParams& p);

// Y [N, C, out...]; `indices` (may be null) gets, per output, the flat index into X of the first
// maximum: plane * spatial size + the spatial offset, row major (ONNX storage_order 0) or column
// major (storage_order 1, as onnxruntime numbers it). Padding never wins. f16/bf16/f32/f64, i8,
// u8.
Status MaxPool(const PoolParams& p, const void* x, void* y, int64_t* indices);

Status AveragePool(const PoolParams& p, const void* x, void* y);

// Y [N, C] (the caller adds the trailing 1s) over `spatial` elements per (n, c).
Status GlobalAveragePool(DType dtype, int64_t batch, int64_t channels, int64_t spatial,
                         const void* x, void* y);
Status GlobalMaxPool(DType dtype, int64_t batch, int64_t channels, int64_t spatial, const void* x,
                     void* y);

}  // namespace a8::cpu

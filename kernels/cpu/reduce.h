// Reductions and the ops built on them: ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2/LogSumExp
// over a set of axes, ArgMax/ArgMin, Softmax/LogSoftmax along any axis. (CumSum has one body for
// both backends: kernels/device/reduce_impl.h, which the CPU backend runs on the host.)
//
// Sums accumulate in float for f16/bf16/f32 (double for f64), visiting the reduced elements in
// row-major order in chunks of kernels/common/sum_order.h's kSumChunk (each chunk summed from 0,
// then the chunks' sums in order: the device kernels' order), and the result is rounded once;
// integers accumulate in int64 and wrap.
// keepdims only changes the output dims, never the data layout, so the kernels ignore it.
// Axes may be negative; an empty axis list reduces all axes (noop_with_empty_axes is the
// caller's business).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSumExp };

StatusOr<Dims> ReduceOutputDims(const Dims& in_dims, const std::vector<int64_t>& axes,
                                bool keepdims);

// Float types for every op; i64, i32, i8, u8 for all but L2 and LogSumExp (Mean divides with
// truncation). An empty reduction gives 0 (sum-like), 1 (Prod), -inf/+inf (Max/Min; lowest/
// highest for integers), NaN (Mean).
Status Reduce(ReduceOp op, DType dtype, const Dims& in_dims, const std::vector<int64_t>& axes,
              const void* x, void* y);

// Index of the first (or, with select_last_index, last) maximum / minimum along `axis`; y is
// int64 with dims of x without `axis` (or with it as 1). NaN compares false (never selected
// after the first element).
Status ArgReduce(bool is_max, DType dtype, const Dims& in_dims, int64_t axis,
                 bool select_last_index, const void* x, int64_t* y);

// Softmax (or LogSoftmax with `log`) along one axis (ONNX opset >= 13): y = exp(x - max) / sum,
// log: (x - max) - log(sum), in float for f16/bf16/f32, double for f64.
Status Softmax(DType dtype, const Dims& dims, int64_t axis, bool log, const void* x, void* y);

using a8::NormalizeAxis;  // kernels/common/kernel_types.h

}  // namespace a8::cpu

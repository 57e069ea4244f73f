// Softmax/LogSoftmax along any axis: the CPU backend's fast path (a vectorised exp over rows of
// f32 in the fast kernel mode), checked against the shared body that the CUDA backend runs
// (kernels/device/softmax_impl.h; DeviceReduceTest). The reductions, ArgMax/ArgMin and CumSum
// have one body for both backends (kernels/device/reduce_impl.h), which the CPU backend runs on
// the host.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

// Softmax (or LogSoftmax with `log`) along one axis (ONNX opset >= 13): y = exp(x - max) / sum,
// log: (x - max) - log(sum), in float for f16/bf16/f32, double for f64.
Status Softmax(DType dtype, const Dims& dims, int64_t axis, bool log, const void* x, void* y);

}  // namespace a8::cpu

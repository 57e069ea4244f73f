// Pooling geometry over 1 to 3 spatial dims: the ONNX attributes and their validation. The pools
// themselves have one body, shared by the CPU and CUDA backends: kernels/device/nn_pool_impl.h.
//
// Output size: floor((in + pads - ((k - 1) * d + 1)) / s) + 1, or ceil with ceil_mode, where a
// last window that would start past the input and its begin pad is dropped (as onnxruntime and
// PyTorch do). AveragePool divides by the taps inside the input, or with count_include_pad by the
// taps inside the padded input [-pad_begin, in + pad_end).
#pragma once

#include <cstdint>

#include "compiler/ir/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

struct PoolParams {
  DType dtype = DType::kF32;
  int64_t batch = 1, channels = 1;
  Dims in_spatial, kernel;
  Dims strides, dilations, pads;  // empty: 1s, 1s, 0s; pads ONNX order (begins, then ends)
  bool ceil_mode = false;
  bool count_include_pad = false;     // AveragePool
  bool column_major_indices = false;  // MaxPool storage_order=1
};

// The pooled spatial dims; an error names the bad attribute.
StatusOr<Dims> PoolOutputSpatial(const PoolParams& p);

}  // namespace a8::cpu

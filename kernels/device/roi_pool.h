// MaxUnpool (ONNX 9/11/22) with its gradient a8.MaxUnpoolGrad, and RoiAlign (ONNX 10/16/22) with
// its gradient a8.RoiAlignGrad: one body each (roi_pool_impl.h),
// run by the CUDA backend, its host emulation (cuda-emu) and the CPU backend (through its host
// launch), so all three give the same bits.
//
// MaxUnpool, as onnx's reference: each index of I is a flat index into the tensor of the inferred
// dims [N, C, (X_d - 1) * stride_d - pad_begin_d - pad_end_d + kernel_d]; X's element is written
// there (a later element at the same index overwrites an earlier one), every other element is 0,
// and with output_shape that tensor sits at the start of each spatial axis of the larger output.
// An index must fall in its own (n, c) plane (MaxPool's Indices always do): one thread a plane,
// in element order, so the result is deterministic without atomics; an index outside its plane
// raises the kernel's error and is skipped.
// MaxUnpoolGrad: dX[i] = dY at X[i]'s position when X[i] is the element that stays there, else 0
// (one thread a plane, the plane's winners in scratch).
//
// RoiAlign, as onnx's reference (and onnxruntime): per roi r (x1, y1, x2, y2 scaled by
// spatial_scale, less 0.5 for half_pixel; at least 1 x 1 for output_half_pixel) and output bin,
// a grid of sampling_ratio^2 points (0: ceil(roi size / bins) per axis), each bilinear from the
// four pixels around it (a point beyond [-1, size] reads nothing; one in [-1, 0) reads the edge);
// avg: the mean of the samples; max: the largest of the four weighted pixels over the samples
// (onnxruntime's definition). One thread an output element, the bin's samples in order.
// RoiAlignGrad (avg only): dX gets dY / count * weight at each sample's four pixels: one thread a
// (batch image, channel) plane, the rois in order, summed in double in scratch (deterministic).
//
// Declarations only: included by host setup code and compiled by nvcc.
#pragma once

#include <cstdint>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS::roi_pool {

constexpr int kMaxUnpoolDims = 3;

struct MaxUnpoolParams {
  DevErr err;  // raised for an index outside its plane
  DType dtype = DType::kF32;
  int spatial = 0;                                  // 1 to 3
  int64_t inferred[kMaxUnpoolDims] = {};            // the inferred spatial dims
  int64_t out_dims[kMaxUnpoolDims] = {};            // the output's spatial dims (each >= inferred)
  int64_t planes = 0, in_plane = 0, out_plane = 0;  // N * C, X's and Y's spatial sizes
  const int64_t* indices = nullptr;                 // I, X's dims
  const void* src = nullptr;                        // MaxUnpool: X; MaxUnpoolGrad: dY
  void* dst = nullptr;                              // MaxUnpool: Y; MaxUnpoolGrad: dX
};

DevStatus MaxUnpool(DevCtx& ctx, const MaxUnpoolParams& p);
DevStatus MaxUnpoolGrad(DevCtx& ctx, const MaxUnpoolParams& p);

struct RoiAlignParams {
  DevErr err;                 // raised for a batch index out of range
  DType dtype = DType::kF32;  // of X, rois, Y (dY, dX)
  bool max_mode = false;
  bool half_pixel = true;
  int64_t sampling_ratio = 0;
  float spatial_scale = 1;
  int64_t batch = 0, channels = 0, height = 0, width = 0;  // X
  int64_t rois = 0, out_h = 0, out_w = 0;
  const void* x = nullptr;      // RoiAlign: X
  const void* boxes = nullptr;  // rois [rois, 4]
  const int64_t* batch_indices = nullptr;
  const void* dy = nullptr;  // RoiAlignGrad: dY [rois, C, out_h, out_w]
  void* dst = nullptr;       // RoiAlign: Y; RoiAlignGrad: dX
};

DevStatus RoiAlign(DevCtx& ctx, const RoiAlignParams& p);
DevStatus RoiAlignGrad(DevCtx& ctx, const RoiAlignParams& p);

}  // namespace a8::A8_DEV_NS::roi_pool

// GridSample (ONNX 16/20/22), Col2Im (ONNX 18), DeformConv (ONNX 19/22) and their gradients
// (a8.GridSampleGrad, a8.Col2ImGrad, a8.DeformConvGrad): one body each (grid_sample_impl.h,
// image_impl.h), run by the CUDA
// backend, its host emulation (cuda-emu) and the CPU backend (through its host launch), so all
// three give the same bits.
//
// GridSample: X [N, C, D_1..D_r] (r = 1..3 spatial dims), grid [N, O_1..O_r, r] whose last dim
// holds normalized coordinates in reverse dim order (grid[..., 0] indexes D_r, as onnx and
// PyTorch), Y [N, C, O_1..O_r]. Each coordinate is denormalized ((g + 1) (d - 1) / 2 with
// align_corners, ((g + 1) d - 1) / 2 without), rounded half to even for nearest, clamped
// (border) or reflected (reflection) when outside [lo, hi] (lo/hi = 0/d-1 with align_corners,
// -1/2 and d-1/2 without), then interpolated from 1 (nearest), 2 (linear) or 4 (cubic, Keys
// a = -0.75) taps a dim; a tap outside the image reads 0 (zeros), the clamped tap (border) or the
// reflected tap (reflection): onnx's reference (onnx/reference/ops/op_grid_sample.py), except
// that cubic with border padding clamps only the taps, not the coordinate, as PyTorch and
// onnxruntime do (the reference clamps the coordinate too: its results differ from
// onnxruntime's by up to 0.3 outside the image; no node test has that case). Math in Acc<T>
// (float for f16/bf16, double for f64). One thread an output element.
//
// The gradient (dy, X, grid) -> (dX, dgrid) differentiates the same sum: dX adds each tap's
// weight times dy at the tap it read; dgrid is the sum over channels of dy times the derivative
// of the interpolation along each coordinate, times the derivative of the clamp / reflection
// (0 where clamped, +-1 in reflection) and of the denormalization (PyTorch's
// grid_sampler_compute_source_index_set_grad); nearest's dgrid is 0. Deterministic without
// atomics: dX runs one thread per (n, c) plane, which zeroes its plane and adds the outputs'
// contributions in output order (parallelism N * C: on the GPU a few thousand threads at most
// for typical shapes, the price of no atomics); dgrid one thread per (n, output point).
//
// Declarations only: included by host setup code and compiled by nvcc.
#pragma once

#include <cstdint>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS::grid_sample {

constexpr int kMaxSpatial = 3;  // the most spatial dims GridSample's X has

enum Mode : int { kLinear = 0, kNearest = 1, kCubic = 2 };
enum Padding : int { kZeros = 0, kBorder = 1, kReflection = 2 };

struct GridSampleParams {
  DType dtype = DType::kF32;  // of X, grid and Y (and the gradient's tensors)
  int mode = kLinear;
  int padding = kZeros;
  bool align_corners = false;
  int rank = 0;  // spatial dims
  int64_t n = 0, c = 0;
  int64_t in_dims[kMaxSpatial] = {};   // X's spatial dims
  int64_t out_dims[kMaxSpatial] = {};  // grid's (and Y's) spatial dims
  const void* x = nullptr;
  const void* grid = nullptr;
  void* y = nullptr;
};
DevStatus GridSample(DevCtx& ctx, const GridSampleParams& p);

// dX (X's dims) and dgrid (grid's dims) from dy (Y's dims); p.y unused.
struct GridSampleGradParams {
  GridSampleParams fwd;
  const void* dy = nullptr;
  void* dx = nullptr;
  void* dgrid = nullptr;
};
DevStatus GridSampleGrad(DevCtx& ctx, const GridSampleGradParams& p);

// Col2Im: x [N, C * prod(block), L] (L = prod of the sliding positions along each dim) summed
// into y [N, C, image...]: each output pixel adds, in block order, every column entry whose
// block position lands on it (a gather: one thread a pixel, no atomics).
struct Col2ImParams {
  DType dtype = DType::kF32;
  int rank = 0;  // spatial dims, 1..kMaxSpatial
  int64_t n = 0, c = 0;
  int64_t image[kMaxSpatial] = {}, block[kMaxSpatial] = {}, dilations[kMaxSpatial] = {};
  int64_t pads_begin[kMaxSpatial] = {}, strides[kMaxSpatial] = {};
  int64_t blocks_out[kMaxSpatial] = {};  // sliding positions along each dim
  const void* x = nullptr;
  void* y = nullptr;
};
DevStatus Col2Im(DevCtx& ctx, const Col2ImParams& p);
// Col2Im's gradient (Im2Col): p.x is dy [N, C, image...], p.y dx [N, C * prod(block), L]; each
// column entry reads the pixel its block position lands on (0 in the padding). One thread an
// entry.
DevStatus Col2ImGrad(DevCtx& ctx, const Col2ImParams& p);

// DeformConv (2-D): x [N, C, H, W], w [M, C / group, kH, kW], offset [N, 2 * G * kH * kW, oH,
// oW] (G offset groups, (dh, dw) pairs per tap), optional bias [M] and mask [N, G * kH * kW, oH,
// oW]; y [N, M, oH, oW] = bias + sum over the group's channels and taps of w * mask * x sampled
// bilinearly (zero outside the image) at (oh * stride - pad + kh * dilation + dh, ...). One
// thread an output element, channels then taps in order.
struct DeformConvParams {
  DType dtype = DType::kF32;
  int64_t n = 0, c = 0, h = 0, w = 0, m = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t group = 1, offset_group = 1;
  int64_t stride[2] = {1, 1}, dilation[2] = {1, 1}, pad[2] = {0, 0};
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* offset = nullptr;
  const void* bias = nullptr;  // may be null
  const void* mask = nullptr;  // may be null
  void* y = nullptr;
};
DevStatus DeformConv(DevCtx& ctx, const DeformConvParams& p);

// DeformConv's gradient w.r.t. x, w, offset and (when fwd.mask is set) mask, from dy [N, M, oH,
// oW] (the bias's is a sum of dy: the gradient rule's ReduceSum); fwd.y unused. The sampled
// value's derivative along a position is the bilinear weights' (0 outside the image).
// Deterministic without atomics: dx one thread per (n, c) plane (zeroed, then its output
// channels, pixels and taps in order), dw one per weight, doffset and dmask one per (n, offset
// group, tap, pixel), summing over the offset group's channels and their output channels.
struct DeformConvGradParams {
  DeformConvParams fwd;
  const void* dy = nullptr;
  void* dx = nullptr;
  void* dw = nullptr;
  void* doffset = nullptr;
  void* dmask = nullptr;  // set with fwd.mask
};
DevStatus DeformConvGrad(DevCtx& ctx, const DeformConvGradParams& p);

}  // namespace a8::A8_DEV_NS::grid_sample

// Pooling: MaxPool (with ONNX indices), AveragePool, GlobalAveragePool, GlobalMaxPool over 1 to 3
// spatial dims. Sums accumulate in float for f16/bf16/f32 (double for f64) and round once.
//
// Output size: floor((in + pads - ((k - 1) * d + 1)) / s) + 1, or ceil with ceil_mode, where a
// last window that would start past the input and its begin pad is dropped (as onnxruntime and
// PyTorch do). AveragePool divides by the taps inside the input, or with count_include_pad by the
// taps inside the padded input [-pad_begin, in + pad_end).
#pragma once

#include <cstdint>
#include <vector>

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

// Channels-last (NHWC) f32 pooling: the logical dims stay [N, C, H, W], element (n, c, h, w) sits
// at ((n * H + h) * W + w) * C + c, and Y is laid out the same way. Each result has the bits of
// the NCHW kernel's above on the same logical data (same taps in the same order, same compares,
// same sums); the loops run across channels, which are contiguous.
//
// Whether MaxPoolChannelsLast takes `p`: f32, 2 spatial dims, and every window wholly inside the
// input with contiguous taps (no begin pads, dilation 1, no end pad or ceil_mode overhang reached).
bool MaxPoolChannelsLastTakes(const PoolParams& p);

// MaxPool of x NHWC [N, H, W, C] into y NHWC [N, out_h, out_w, C], without indices; an error
// where MaxPoolChannelsLastTakes(p) is false.
Status MaxPoolChannelsLast(const PoolParams& p, const void* x, void* y);

// GlobalMaxPool (`max`) or GlobalAveragePool of x NHWC [batch, spatial, channels] into y [batch,
// channels] (the bytes of NCHW [N, C, 1, 1]); f32 only.
Status GlobalPoolChannelsLast(bool max, DType dtype, int64_t batch, int64_t channels,
                              int64_t spatial, const void* x, void* y);

namespace internal {

// A window geometry over 1 to 3 spatial dims, padded to 3 with leading 1s (the layout
// kernels/common/pool_window.h walks): tap t of output o along dim a reads input position
// o * s[a] - pb[a] + t * d[a]. Pooling and its gradients (grad_conv_pool.cc), and the
// convolution's filter gradient, which walks the same windows.
struct PoolGeometry {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  int64_t in_size = 1, out_size = 1, k_size = 1;
};

// The geometry of `in` -> `out` (already validated; empty strides, dilations or pads: 1, 1, 0).
PoolGeometry MakeWindow(const Dims& in, const Dims& out, const Dims& kernel, const Dims& strides,
                        const Dims& dilations, const Dims& pads);

// The pool's geometry, validated, with its output dims in `out_spatial` (may be null).
StatusOr<PoolGeometry> MakePoolGeometry(const PoolParams& p, Dims* out_spatial);

// `p` as f32 over `planes` planes (batch `planes`, one channel): the f16/bf16 pools of the fast
// mode run the f32 kernels on blocks of planes converted to float (in_f32.h PlanesInF32).
PoolParams PlanesAsF32(const PoolParams& p, int64_t planes);

// Every tap of every window lies inside the input (no padding reached, dilation allowed). Then
// window o's taps are at bases[o] + taps[t] in the plane (WindowBases, TapOffsets), in the
// order ForEachWindow and ForEachTapInside visit them, with no bounds to check.
bool AllTapsInside(const PoolGeometry& g);
std::vector<int64_t> WindowBases(const PoolGeometry& g);
std::vector<int64_t> TapOffsets(const PoolGeometry& g);

// The first maximum of the window at `win` (taps[0 .. k)), as the general loop picks it: a
// later tap wins only when greater, so a NaN first tap stays and a later NaN never wins. The
// compare is a select, not a branch (random data mispredicts the branch every other tap).
template <typename C, typename T>
int64_t FirstMaxTap(const T* win, const int64_t* taps, int64_t k) {
  C best = Load(win[taps[0]]);
  int64_t at = taps[0];
  for (int64_t t = 1; t < k; ++t) {
    const C v = Load(win[taps[t]]);
    const bool more = v > best;
    best = more ? v : best;
    at = more ? taps[t] : at;
  }
  return at;
}

}  // namespace internal

}  // namespace a8::cpu

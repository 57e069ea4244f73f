// The fast path of the CPU convolution and its gradients (ConvTranspose, which is the data
// gradient, and a8.ConvGradFilter): oneDNN convolution primitives (Debian's libdnnl, 2.6), as
// onednn_gemm.h does for the GEMMs.
//
// Where it runs: 2-D convolutions without groups, in bf16 (AMX brgconv where the CPU has it,
// AVX-512-BF16 otherwise) and in f32 and f16 with at least kMinFastF32Channels input channels;
// the other convolutions, and any that oneDNN has only its reference implementation for, stay
// on today's kernels (conv.h). oneDNN 2.6 has no f16 convolution here, and no bf16 one without
// AVX-512: such a convolution runs the f32 primitive (under f32's channel rule), its activations
// converted straight between f16/bf16 NCHW and the primitive's layout (blocked_convert.h), so it
// makes no widened copy beyond the f32 layout buffers. Measured, 3x3 pad
// 1, batch 8, one thread, best of 20 (load 9-10):
//   C=M=64, 32x32: today 43.6 ms fp32 / 37.5 ms bf16, oneDNN 3.5 / 0.66 (with the layout reorders)
//   C=M=128, 16x16: today 17.5 / 19.9, oneDNN 3.4 / 0.43
//   C=3, M=64, 64x64: today 1.03 / 2.99, oneDNN 1.22 / 0.90 (so f32 keeps today's kernel there)
// X and Y stay NCHW in memory: each call reorders them to and from the primitive's blocked
// layouts (included above), and W into its own; products accumulate in f32, Y is rounded once.
// The batch is split over the kernels' pool (parallel.h), one sub-batch a thread (the weight
// gradient sums the sub-batches' f32 partial dW).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/common/kernel_types.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu::internal {

inline constexpr int64_t kMinFastF32Channels = 16;

// Which of a forward convolution's X, Y and Z are stored NHWC (dims still [N, C, H, W]).
struct ConvLayouts {
  bool x = false, y = false, z = false;
  bool any() const { return x || y || z; }
};

// Whether oneDNN has bf16 convolution kernels on this CPU (probed once) that beat its f32 ones
// (OneDnnBf16Pays, low_precision_gemm.h). Where not, bf16 convolutions are planned as f16 ones are,
// and conv.h prefers its direct kernel as for f32.
bool OneDnnConvolvesBf16();

// Y = Conv(X, W) + B (bias may be null) through oneDNN and returns true, or returns false, having
// written nothing, where the fast path does not take this convolution (see above).
// `out_spatial`: Y's spatial dims (ConvOutputSpatial). With `epilogue_applied`, a8.FusedConv's
// epilogue (+ Z where z is not null, then Relu where `relu`) runs in the primitive's store
// (oneDNN post-ops) where it can, and *epilogue_applied says whether it did: + Z only in f32 (a
// half Y is rounded before Z is added), Relu in every dtype. Z may be Y's own buffer.
//
// `layouts`: which of X, Y and Z are stored NHWC instead of NCHW (the CPU backend's channels-last
// activations, cpu_backend.h; f32 only, with `epilogue_applied`, else an error). oneDNN's
// forward kernels compute in NHWC, so such an operand skips its reorder; the results are the
// NCHW call's bits, in the other layout.
StatusOr<bool> FastConv(const ConvParams& p, const Dims& out_spatial, const void* x, const void* w,
                        const void* bias, void* y, bool relu = false, const void* z = nullptr,
                        bool* epilogue_applied = nullptr, ConvLayouts layouts = {});

// Whether FastConv takes forward convolution `p` (f32) with these layouts, a bias or not, and
// the epilogue (Relu, + Z): the plan time check before a backend stores operands NHWC.
bool FastConvTakesChannelsLast(const ConvParams& p, const Dims& out_spatial, ConvLayouts layouts,
                               bool bias, bool relu, bool z);

// Y = ConvTranspose(X, W) (no bias), as the data gradient of the convolution from Y's shape to
// X's through oneDNN (output_padding: that convolution's end pads lowered by it); `p` and
// `out_spatial` as ConvTranspose's (conv.h).
StatusOr<bool> FastConvTranspose(const ConvParams& p, const Dims& out_spatial, const void* x,
                                 const void* w, const void* bias, void* y);

// dW of the forward convolution `p` (a8.ConvGradFilter, grad_conv_pool.h) through oneDNN, with any
// number of channels: the batch split over the pool, one part a thread, each part's dW in f32,
// summed in part order and rounded once (the CNN of precision_table.py, two threads: 68 -> 36 ms
// a step in bf16; f32, which ran im2col + GEMM over the pool with two threads, 320 -> 85 ms).
StatusOr<bool> FastConvGradFilter(const ConvParams& p, const Dims& out_spatial, const void* dy,
                                  const void* x, void* dw);

// How many oneDNN convolutions this process has run (for tests: proof the fast path ran).
int64_t FastConvExecutions();

}  // namespace a8::cpu::internal

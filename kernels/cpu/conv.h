// Convolution and transposed convolution, N-D (1, 2 or 3 spatial dims), with pads, strides,
// dilations and groups, through im2col / col2im and the GEMMs of gemm.h (so f16/bf16 are
// computed in float and rounded once, f64 in double).
//
// Params are already resolved: explicit pads (auto_pad and ConvTranspose's output_shape are the
// compiler's business), kernel dims from W. Empty strides / dilations / pads mean 1 / 1 / 0.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/onednn_conv.h"

namespace a8::cpu {

using a8::ConvParams;  // kernels/common/kernel_types.h

// Y's spatial dims: Conv: floor((in + pads - ((k - 1) * d + 1)) / s) + 1; ConvTranspose:
// s * (in - 1) + output_padding + (k - 1) * d + 1 - pads. InvalidInput when inconsistent.
StatusOr<Dims> ConvOutputSpatial(const ConvParams& p, bool transpose);

// X [N, C, in...], W [M, C / group, k...], B [M] or null -> Y [N, M, out...].
Status Conv(const ConvParams& p, const void* x, const void* w, const void* bias, void* y);

// a8.FusedConv (compiler/ir/op_table_fused.cc): Y = Conv(X, W, B), then Y + Z where Z (Y's
// dims) is not null, then Relu where `relu`; each step rounds to the dtype as the unfused kernels
// do, so Y has their bits. The f32 direct convolution applies the epilogue as it stores Y; the
// other paths run it over Y after the convolution.
Status FusedConv(const ConvParams& p, bool relu, const void* x, const void* w, const void* bias,
                 const void* z, void* y);

// FusedConv (Conv: relu false, z null) with some of X, Y and Z stored NHWC (the CPU backend's
// channels-last activations, runtime/cpu/cpu_backend.h): f32, 2-D, through oneDNN with the
// epilogue in its store; Y has FusedConv's bits on the NCHW operands, in its layout. An error
// where FusedConvChannelsLastTakes would have said no.
Status FusedConvChannelsLast(const ConvParams& p, internal::ConvLayouts layouts, bool relu,
                             const void* x, const void* w, const void* bias, const void* z,
                             void* y);

// Whether FusedConvChannelsLast runs `p` (with a bias or not, Relu or not, Z or not) in these
// layouts: f32, a convolution the fast mode already gives to oneDNN rather than to the direct
// kernel, and one oneDNN takes in them. A backend asks before it stores operands NHWC.
bool FusedConvChannelsLastTakes(const ConvParams& p, internal::ConvLayouts layouts, bool bias,
                                bool relu, bool z);

// X [N, C, in...], W [C, M / group, k...], B [M] or null -> Y [N, M, out...].
Status ConvTranspose(const ConvParams& p, const void* x, const void* w, const void* bias, void* y);

// The widest instruction set the f32 direct convolution (stride-1 1-D/2-D images small enough
// to stay in cache) may use; each is picked only where the CPU has it. Ordered narrowest first.
enum class CpuIsa { kBaseline, kAvx2, kAvx512, kBest };

namespace internal {

// Caps the instruction set of the direct convolution for the whole process (kBest: no cap), so
// the tests check every variant this machine can run.
void SetConvIsaForTesting(CpuIsa isa);

}  // namespace internal

}  // namespace a8::cpu

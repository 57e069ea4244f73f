// Gradient kernels of the convolution and pooling ops (the backward halves of conv.h and pool.h):
// the bodies of the internal `a8.*Grad` ops that build-training emits for them.
//
// As everywhere in kernels/cpu: f16/bf16/f32 are computed in float and rounded once, f64 in double;
// every sum accumulates in that type in a fixed order (results do not depend on the thread count).
// Gradients of parameters (filters, scales, biases) are summed over the batch into one buffer of
// the compute type and rounded once at the end.
//
// In grad_conv_pool.cc. The other NN gradients (Softmax, LogSoftmax, Dropout, the normalizations,
// the losses) have one body, shared with the CUDA backend: kernels/device/softmax_impl.h,
// elementwise_impl.h, nn_norm_impl.h, loss_optim_impl.h.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/pool.h"

namespace a8::cpu {

// ---- convolution and pooling (grad_conv_pool.cc)

// dW [M, C / group, k...] of Conv(X, W): sum over the batch of dY (x) im2col(X). `p` is the
// forward's ConvParams (out_channels = M); dY [N, M, out...] of p.dtype. dX is ConvTranspose(dY, W)
// with the forward's attributes, and dB ReduceSum(dY): no kernel of their own.
Status ConvGradFilter(const ConvParams& p, const void* dy, const void* x, void* dw);

// dX [N, C, in...] of MaxPool: each dY element goes to the position the forward chose (the first
// maximum of its window, found again from X exactly as MaxPool does); positions that win several
// windows sum their gradients.
Status MaxPoolGrad(const PoolParams& p, const void* dy, const void* x, void* dx);

// dX of AveragePool: each dY element spread evenly over the taps its window divided by
// (count_include_pad as in the forward; padding taps receive nothing).
Status AveragePoolGrad(const PoolParams& p, const void* dy, void* dx);

}  // namespace a8::cpu

// Gradient kernels of the NN ops (the backward halves of conv.h, pool.h, Softmax, Dropout and
// loss.h) and a800c's own losses (MseLoss, L1Loss, BceWithLogitsLoss) with their gradients: the
// bodies of the internal `a8.*Grad` ops that build-training emits.
//
// As everywhere in kernels/cpu: f16/bf16/f32 are computed in float and rounded once, f64 in double;
// every sum accumulates in that type in a fixed order (results do not depend on the thread count).
// Gradients of parameters (filters, scales, biases) are summed over the batch into one buffer of
// the compute type and rounded once at the end.
//
// Layout: grad_conv_pool.cc (ConvGradFilter, MaxPoolGrad, AveragePoolGrad), grad_nn.cc
// (SoftmaxGrad, DropoutGrad, the loss gradients, the a8 losses). The normalizations and their
// gradients have one body, shared with the CUDA backend: kernels/device/nn_norm_impl.h.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/common/pair_loss.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/loss.h"
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

// ---- softmax, dropout, losses (grad_nn.cc)

// From the forward's output Y along `axis`: Softmax dX = Y * (dY - sum(dY * Y)); LogSoftmax (`log`)
// dX = dY - exp(Y) * sum(dY).
Status SoftmaxGrad(DType dtype, const Dims& dims, int64_t axis, bool log, const void* dy,
                   const void* y, void* dx);

// dX = dY * mask * scale (the forward's 1 / (1 - ratio), or 1 outside training).
Status DropoutGrad(DType dtype, int64_t n, const void* dy, const bool* mask, float scale, void* dx);

// d(scores) of SoftmaxCrossEntropyLoss (p as for the forward): (softmax(scores)
// - onehot(label))
// * weight[label] * g per target, where g is dloss (sum), dloss / sum of the weights of the
// non-ignored targets (mean), or dloss[n, d...] (none, dloss [N, d...]). Ignored targets get 0.
Status SoftmaxCrossEntropyLossGrad(const LossParams& p, const void* dloss, const void* scores,
                                   const void* labels, const void* weights, void* dscores);

// d(input) of NegativeLogLikelihoodLoss: -weight[label] * g at the label's class, 0 elsewhere.
Status NegativeLogLikelihoodLossGrad(const LossParams& p, const void* dloss, const void* labels,
                                     const void* weights, void* dinput);

// a800c's losses for `--loss=mse|l1|bce_logits`: the mean over n elements of (pred - target)^2,
// |pred - target|, or max(x, 0) - x * t + log(1 + exp(-|x|)) (PyTorch's BCEWithLogitsLoss, stable
// for any x). `loss` is one element of `dtype`.
using PairLoss = ::a8::PairLossKind;  // kernels/common/pair_loss.h
Status PairLossForward(PairLoss kind, DType dtype, int64_t n, const void* pred, const void* target,
                       void* loss);

// Gradients of PairLossForward scaled by the scalar dloss: d(pred) = dloss / n times 2 (p - t),
// sign(p - t) (0 at p = t), or sigmoid(x) - t; d(target) = its negation for Mse/L1 and -x * dloss /
// n for BceWithLogits. dpred and dtarget may each be null.
Status PairLossGrad(PairLoss kind, DType dtype, int64_t n, const void* dloss, const void* pred,
                    const void* target, void* dpred, void* dtarget);

}  // namespace a8::cpu

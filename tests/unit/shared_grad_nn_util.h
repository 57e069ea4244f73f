// The NN gradient and loss bodies the CPU backend runs from kernels/device (loss_optim_impl.h,
// softmax_impl.h, elementwise_impl.h), called as the CPU backend calls them: on host memory,
// through the host ForEach. The signatures are those of the former CPU reference kernels, so the
// float64 reference and finite-difference tests read as before. A label outside [0, C) that is
// not ignored is InvalidInput (the kernel raised DevErr); the backends name the label itself
// (runtime/device/ops_loss_optim.cc, device_loss_test.cc).
#pragma once

#include <cstdint>

#include "kernels/common/kernel_types.h"
#include "kernels/common/pair_loss.h"

namespace a8::testing::grad_nn {

// scores [N, C, d...], labels [N, d...], weights [C] or null. loss is a scalar for mean/sum and
// [N, d...] for none; log_prob (may be null) is LogSoftmax(scores, axis 1).
Status SoftmaxCrossEntropyLoss(const LossParams& p, const void* scores, const void* labels,
                               const void* weights, void* loss, void* log_prob);
Status NegativeLogLikelihoodLoss(const LossParams& p, const void* input, const void* labels,
                                 const void* weights, void* loss);
Status SoftmaxCrossEntropyLossGrad(const LossParams& p, const void* dloss, const void* scores,
                                   const void* labels, const void* weights, void* dscores);
Status NegativeLogLikelihoodLossGrad(const LossParams& p, const void* dloss, const void* labels,
                                     const void* weights, void* dinput);

// The a8 pair losses: the mean over n elements, and its gradients times the scalar dloss
// (dpred and dtarget may each be null).
Status PairLossForward(PairLossKind kind, DType dtype, int64_t n, const void* pred,
                       const void* target, void* loss);
Status PairLossGrad(PairLossKind kind, DType dtype, int64_t n, const void* dloss, const void* pred,
                    const void* target, void* dpred, void* dtarget);

// From the forward's output y along `axis` of `dims`: Softmax dx = y * (dy - sum(dy * y));
// LogSoftmax (`log`) dx = dy - exp(y) * sum(dy).
Status SoftmaxGrad(DType dtype, const Dims& dims, int64_t axis, bool log, const void* dy,
                   const void* y, void* dx);

// dx = mask ? dy / (1 - ratio) : 0 (a training step).
Status DropoutGrad(DType dtype, int64_t n, const void* dy, const bool* mask, float ratio,
                   void* dx);

}  // namespace a8::testing::grad_nn

// Losses: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (ONNX opset 13), with
// reductions none / mean / sum, ignore_index and class weights.
//
// Math in float for f16/bf16/f32 (double for f64), rounded once on output. Mean divides the
// weighted sum by the sum of the weights of the non-ignored targets (the count when there are no
// weights); when every target is ignored that is 0 / 0 = NaN, as onnxruntime gives. A label
// outside [0, C) that is not the ignore_index is InvalidInput.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

using a8::LossParams;  // kernels/common/kernel_types.h
using a8::LossReduction;

// scores [N, C, d...], labels [N, d...], weights [C] or null. loss is a scalar for mean/sum and
// [N, d...] for none; log_prob (may be null) is LogSoftmax(scores, axis 1), [N, C, d...].
Status SoftmaxCrossEntropyLoss(const LossParams& p, const void* scores, const void* labels,
                               const void* weights, void* loss, void* log_prob);

// loss[n, d] = -input[n, label[n, d], d] * weight[label[n, d]], then reduced.
Status NegativeLogLikelihoodLoss(const LossParams& p, const void* input, const void* labels,
                                 const void* weights, void* loss);

}  // namespace a8::cpu

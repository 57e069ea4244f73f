// Losses: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (ONNX opset 13), with
// reductions none / mean / sum, ignore_index and class weights.
//
// Math in float for f16/bf16/f32 (double for f64), rounded once on output. Mean divides the
// weighted sum by the sum of the weights of the non-ignored targets (the count when there are no
// weights); when every target is ignored that is 0 / 0 = NaN, as onnxruntime gives. A label
// outside [0, C) that is not the ignore_index is InvalidInput.
#pragma once

#include <cstdint>

#include "compiler/ir/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

enum class LossReduction { kNone, kMean, kSum };

struct LossParams {
  DType dtype = DType::kF32;        // scores / log-probabilities, weights, loss, log_prob
  DType label_dtype = DType::kI64;  // i32 or i64
  int64_t batch = 1;                // N
  int64_t classes = 1;              // C
  int64_t extra = 1;                // product of the trailing dims d1..dk (1 when there are none)
  LossReduction reduction = LossReduction::kMean;
  bool has_ignore_index = false;
  int64_t ignore_index = 0;
};

// scores [N, C, d...], labels [N, d...], weights [C] or null. loss is a scalar for mean/sum and
// [N, d...] for none; log_prob (may be null) is LogSoftmax(scores, axis 1), [N, C, d...].
Status SoftmaxCrossEntropyLoss(const LossParams& p, const void* scores, const void* labels,
                               const void* weights, void* loss, void* log_prob);

// loss[n, d] = -input[n, label[n, d], d] * weight[label[n, d]], then reduced.
Status NegativeLogLikelihoodLoss(const LossParams& p, const void* input, const void* labels,
                                 const void* weights, void* loss);

}  // namespace a8::cpu

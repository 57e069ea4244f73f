#include "kernels/cpu/loss.h"

#include <cmath>
#include <limits>
#include <vector>

namespace a8::cpu {
namespace {

// Shared tail of both losses: log-probabilities `lp` (compute type, [N, C, extra]) -> loss.
template <typename T>
Status NllFromLogProb(const LossParams& p, const Compute<T>* lp, const void* labels,
                      const void* weights, void* loss, const char* op) {
  using C = Compute<T>;
  if (p.label_dtype != DType::kI32 && p.label_dtype != DType::kI64) {
    return Unsupported("{}: label dtype {} (i32 or i64 expected)", op, ElemName(p.label_dtype));
  }
  const T* w = static_cast<const T*>(weights);
  const int64_t targets = p.batch * p.extra;
  std::vector<C> per_target(static_cast<size_t>(targets));
  C sum = 0, weight_sum = 0;
  for (int64_t t = 0; t < targets; ++t) {
    const int64_t n = t / p.extra, d = t % p.extra;
    const int64_t label = p.label_dtype == DType::kI32 ? static_cast<const int32_t*>(labels)[t]
                                                       : static_cast<const int64_t*>(labels)[t];
    if (p.has_ignore_index && label == p.ignore_index) {
      per_target[t] = 0;
      continue;
    }
    if (label < 0 || label >= p.classes) {
      return InvalidInput("{}: label {} (target {}) is outside [0, {})", op, label, t, p.classes);
    }
    const C wt = w != nullptr ? Load(w[label]) : C(1);
    per_target[t] = -lp[(n * p.classes + label) * p.extra + d] * wt;
    sum += per_target[t];
    weight_sum += wt;
  }
  T* out = static_cast<T*>(loss);
  switch (p.reduction) {
    case LossReduction::kNone:
      for (int64_t t = 0; t < targets; ++t) out[t] = Store<T>(per_target[t]);
      break;
    case LossReduction::kSum:
      out[0] = Store<T>(sum);
      break;
    case LossReduction::kMean:
      out[0] = Store<T>(sum / weight_sum);
      break;
  }
  return Status::Ok();
}

// A loss in the dtype of p.dtype: `fill_log_prob(tag, lp)` writes the log-probabilities of the
// input (storage type A8_TAG_TYPE(tag)) into lp (compute type, [N, C, extra]), then NllFromLogProb.
template <typename FillLogProb>
Status NllLoss(const LossParams& p, const char* op, const void* labels, const void* weights,
               void* loss, FillLogProb&& fill_log_prob) {
  return Dispatch<TypeSet::kFloat>(p.dtype, op, [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    std::vector<Compute<T>> lp(static_cast<size_t>(p.batch * p.classes * p.extra));
    fill_log_prob(tag, lp);
    return NllFromLogProb<T>(p, lp.data(), labels, weights, loss, op);
  });
}

}  // namespace

Status SoftmaxCrossEntropyLoss(const LossParams& p, const void* scores, const void* labels,
                               const void* weights, void* loss, void* log_prob) {
  return NllLoss(p, "SoftmaxCrossEntropyLoss", labels, weights, loss, [&](auto tag, auto& lp) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* x = static_cast<const T*>(scores);
    for (int64_t n = 0; n < p.batch; ++n) {
      for (int64_t d = 0; d < p.extra; ++d) {
        const int64_t base = n * p.classes * p.extra + d;
        C m = -std::numeric_limits<C>::infinity();
        for (int64_t c = 0; c < p.classes; ++c) m = std::max(m, Load(x[base + c * p.extra]));
        C s = 0;
        for (int64_t c = 0; c < p.classes; ++c) s += std::exp(Load(x[base + c * p.extra]) - m);
        const C log_s = std::log(s);
        for (int64_t c = 0; c < p.classes; ++c) {
          lp[base + c * p.extra] = (Load(x[base + c * p.extra]) - m) - log_s;
        }
      }
    }
    if (log_prob != nullptr) {
      T* out = static_cast<T*>(log_prob);
      for (size_t i = 0; i < lp.size(); ++i) out[i] = Store<T>(lp[i]);
    }
  });
}

Status NegativeLogLikelihoodLoss(const LossParams& p, const void* input, const void* labels,
                                 const void* weights, void* loss) {
  return NllLoss(p, "NegativeLogLikelihoodLoss", labels, weights, loss, [&](auto tag, auto& lp) {
    using T = A8_TAG_TYPE(tag);
    const T* x = static_cast<const T*>(input);
    for (size_t i = 0; i < lp.size(); ++i) lp[i] = Load(x[i]);
  });
}

}  // namespace a8::cpu

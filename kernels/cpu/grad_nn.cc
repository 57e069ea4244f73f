// Backward kernels of Softmax/LogSoftmax, Dropout and the ONNX losses, and a800c's own losses (see
// grad_nn.h).
#include "kernels/cpu/grad_nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

constexpr int64_t kTranscendentalCost = 16;

// The label of target t (i32 or i64 labels).
int64_t LabelAt(DType dt, const void* labels, int64_t t) {
  return dt == DType::kI32 ? static_cast<const int32_t*>(labels)[t]
                           : static_cast<const int64_t*>(labels)[t];
}

// Per target of a loss: the factor its log-probability's gradient gets (-weight * g, or 0 for an
// ignored target) and the label; an error for a label outside [0, C) that is not ignored.
template <typename C, typename T>
Status TargetFactors(const LossParams& p, const T* dloss, const void* labels, const T* w,
                     const char* op, std::vector<C>* factor, std::vector<int64_t>* label_of) {
  if (p.label_dtype != DType::kI32 && p.label_dtype != DType::kI64) {
    return Unsupported("{}: label dtype {} (i32 or i64 expected)", op, ElemName(p.label_dtype));
  }
  const int64_t targets = p.batch * p.extra;
  factor->assign(static_cast<size_t>(targets), C(0));
  label_of->assign(static_cast<size_t>(targets), -1);
  C weight_sum = 0;
  for (int64_t t = 0; t < targets; ++t) {
    const int64_t label = LabelAt(p.label_dtype, labels, t);
    if (p.has_ignore_index && label == p.ignore_index) continue;
    if (label < 0 || label >= p.classes) {
      return InvalidInput("{}: label {} (target {}) is outside [0, {})", op, label, t, p.classes);
    }
    const C wt = w != nullptr ? Load(w[label]) : C(1);
    (*label_of)[t] = label;
    (*factor)[t] = wt;
    weight_sum += wt;
  }
  for (int64_t t = 0; t < targets; ++t) {
    if ((*label_of)[t] < 0) continue;
    C g = Load(dloss[p.reduction == LossReduction::kNone ? t : 0]);
    // Mean divides by the weight sum, 0 / 0 = NaN when every target is ignored, as the forward.
    if (p.reduction == LossReduction::kMean) g /= weight_sum;
    (*factor)[t] = -(*factor)[t] * g;
  }
  return Status::Ok();
}

// Dispatches on the loss dtype T and runs body(tag, factor, label_of) with the TargetFactors
// (in Compute<T>) of the loss's targets.
template <typename Body>
Status WithTargetFactors(const LossParams& p, const char* op, const void* dloss, const void* labels,
                         const void* weights, Body&& body) {
  return Dispatch<TypeSet::kFloat>(p.dtype, op, [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    std::vector<C> factor;
    std::vector<int64_t> label_of;
    A8_RETURN_IF_ERROR(TargetFactors<C>(p, static_cast<const T*>(dloss), labels,
                                        static_cast<const T*>(weights), op, &factor, &label_of));
    body(tag, factor, label_of);
    return Status::Ok();
  });
}

}  // namespace

Status SoftmaxGrad(DType dtype, const Dims& dims, int64_t axis, bool log, const void* dy,
                   const void* y, void* dx) {
  const char* op = log ? "a8.LogSoftmaxGrad" : "a8.SoftmaxGrad";
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) {
    return InvalidInput("{}: axis {} is outside rank {}", op, axis, rank);
  }
  const int64_t len = rank == 0 ? 1 : dims[axis];
  const int64_t inner = rank == 0 ? 1 : NumElements(Dims(dims.begin() + axis + 1, dims.end()));
  const int64_t outer = rank == 0 ? 1 : NumElements(Dims(dims.begin(), dims.begin() + axis));
  return Dispatch<TypeSet::kFloat>(dtype, op, [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* g = static_cast<const T*>(dy);
    const T* out = static_cast<const T*>(y);
    T* res = static_cast<T*>(dx);
    ParallelFor(outer * inner, len * kTranscendentalCost, [&](int64_t b, int64_t e) {
      for (int64_t line = b; line < e; ++line) {
        const int64_t base = (line / inner) * len * inner + line % inner;
        C sum = 0;
        for (int64_t k = 0; k < len; ++k) {
          const int64_t j = base + k * inner;
          sum += log ? Load(g[j]) : Load(g[j]) * Load(out[j]);
        }
        for (int64_t k = 0; k < len; ++k) {
          const int64_t j = base + k * inner;
          const C yv = Load(out[j]), gv = Load(g[j]);
          res[j] = Store<T>(log ? gv - std::exp(yv) * sum : yv * (gv - sum));
        }
      }
    });
    return Status::Ok();
  });
}

Status DropoutGrad(DType dtype, int64_t n, const void* dy, const bool* mask, float scale,
                   void* dx) {
  return Dispatch<TypeSet::kFloat>(dtype, "a8.DropoutGrad", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* g = static_cast<const T*>(dy);
    T* res = static_cast<T*>(dx);
    const C s = static_cast<C>(scale);
    ParallelFor(n, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) res[i] = Store<T>(mask[i] ? Load(g[i]) * s : C(0));
    });
    return Status::Ok();
  });
}

Status SoftmaxCrossEntropyLossGrad(const LossParams& p, const void* dloss, const void* scores,
                                   const void* labels, const void* weights, void* dscores) {
  return WithTargetFactors(
      p, "a8.SoftmaxCrossEntropyLossGrad", dloss, labels, weights,
      [&](auto tag, const auto& factor, const std::vector<int64_t>& label_of) {
        using T = A8_TAG_TYPE(tag);
        using C = Compute<T>;
        const T* x = static_cast<const T*>(scores);
        T* res = static_cast<T*>(dscores);
        // d/dx_c of -log softmax(x)_label = softmax(x)_c - [c == label], times -factor.
        ParallelFor(p.batch * p.extra, p.classes * kTranscendentalCost, [&](int64_t b, int64_t e) {
          for (int64_t t = b; t < e; ++t) {
            const int64_t n = t / p.extra, d = t % p.extra;
            const int64_t base = n * p.classes * p.extra + d;
            const C f = factor[t];
            C m = -std::numeric_limits<C>::infinity();
            for (int64_t c = 0; c < p.classes; ++c) m = std::max(m, Load(x[base + c * p.extra]));
            C s = 0;
            for (int64_t c = 0; c < p.classes; ++c) s += std::exp(Load(x[base + c * p.extra]) - m);
            for (int64_t c = 0; c < p.classes; ++c) {
              const int64_t j = base + c * p.extra;
              const C prob = std::exp(Load(x[j]) - m) / s;
              res[j] = Store<T>(label_of[t] < 0 ? C(0) : -f * (prob - (c == label_of[t] ? 1 : 0)));
            }
          }
        });
      });
}

Status NegativeLogLikelihoodLossGrad(const LossParams& p, const void* dloss, const void* labels,
                                     const void* weights, void* dinput) {
  return WithTargetFactors(p, "a8.NegativeLogLikelihoodLossGrad", dloss, labels, weights,
                           [&](auto tag, const auto& factor, const std::vector<int64_t>& label_of) {
                             using T = A8_TAG_TYPE(tag);
                             using C = Compute<T>;
                             T* res = static_cast<T*>(dinput);
                             const int64_t total = p.batch * p.classes * p.extra;
                             std::fill(res, res + total, Store<T>(C(0)));
                             for (int64_t t = 0; t < p.batch * p.extra; ++t) {
                               if (label_of[t] < 0) continue;
                               const int64_t n = t / p.extra, d = t % p.extra;
                               res[(n * p.classes + label_of[t]) * p.extra + d] =
                                   Store<T>(factor[t]);
                             }
                           });
}

Status PairLossForward(PairLoss kind, DType dtype, int64_t n, const void* pred, const void* target,
                       void* loss) {
  return Dispatch<TypeSet::kFloat>(dtype, "a8 pair loss", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* x = static_cast<const T*>(pred);
    const T* t = static_cast<const T*>(target);
    // One thread, in order: the sum is the same whatever the thread count.
    C sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const C xv = Load(x[i]), tv = Load(t[i]);
      switch (kind) {
        case PairLoss::kMse:
          sum += (xv - tv) * (xv - tv);
          break;
        case PairLoss::kL1:
          sum += std::fabs(xv - tv);
          break;
        case PairLoss::kBceWithLogits:
          sum += std::max(xv, C(0)) - xv * tv + std::log1p(std::exp(-std::fabs(xv)));
          break;
      }
    }
    // n = 0: 0 / 0 = NaN, as PyTorch's mean of nothing.
    *static_cast<T*>(loss) = Store<T>(sum / static_cast<C>(n));
    return Status::Ok();
  });
}

Status PairLossGrad(PairLoss kind, DType dtype, int64_t n, const void* dloss, const void* pred,
                    const void* target, void* dpred, void* dtarget) {
  return Dispatch<TypeSet::kFloat>(dtype, "a8 pair loss gradient", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* x = static_cast<const T*>(pred);
    const T* t = static_cast<const T*>(target);
    T* dp = static_cast<T*>(dpred);
    T* dt = static_cast<T*>(dtarget);
    const C k = Load(*static_cast<const T*>(dloss)) / static_cast<C>(n);
    ParallelFor(n, kTranscendentalCost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        C gp, gt;
        PairLossGradAt(kind, Load(x[i]), Load(t[i]), k, &gp, &gt);
        if (dp != nullptr) dp[i] = Store<T>(gp);
        if (dt != nullptr) dt[i] = Store<T>(gt);
      }
    });
    return Status::Ok();
  });
}

}  // namespace a8::cpu

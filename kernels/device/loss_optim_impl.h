// Device kernels of the losses (kernels/device/loss_optim.h): SoftmaxCrossEntropyLoss,
// NegativeLogLikelihoodLoss, their a8 gradients, and a8's Mse/L1/BceWithLogits losses with their
// gradients. The optimizer and scaler kernels are in loss_optim_update_impl.h.
//
// The only copy of the losses' math: the CPU backend runs these bodies on the host. Terms are
// computed in Acc<T> (float for f16/bf16/f32, double for f64) and sums run in one thread in
// index order; on the GPU only expf/logf and log1pf may differ by an ulp or two from glibc.
#pragma once

#include <cmath>
#include <limits>

#include "kernels/common/unary_math.h"
#include "kernels/device/launch.h"
#include "kernels/device/loss_optim.h"

namespace a8::A8_DEV_NS {
namespace loss_detail {

// std::max(a, b) (a when they are unordered).
template <typename C>
A8_HD C Max(C a, C b) {
  return a < b ? b : a;
}

// What a target's label says: a class in [0, C), or one of these.
constexpr int64_t kIgnored = -1;
constexpr int64_t kBadLabel = -2;

A8_HD int64_t ClassOf(const LossShape& s, const void* labels, int64_t t) {
  const int64_t label = s.Label(labels, t);
  if (s.Ignores(label)) return kIgnored;
  if (!s.IsClass(label)) {
    s.err.Raise();
    return kBadLabel;
  }
  return label;
}

template <typename C>
A8_HD C NaN() {
  return std::numeric_limits<C>::quiet_NaN();
}

// The weight of class c (1 without weights), in the compute type.
template <typename T>
A8_HD Acc<T> WeightOf(const T* w, int64_t c) {
  return w != nullptr ? Ld(w, c) : Acc<T>(1);
}

// Where target t (= n * extra + d) reads its class 0 in scores [N, C, d...] (class c at
// base + c * extra).
A8_HD int64_t ScoreBase(const LossShape& s, int64_t t) {
  const int64_t n = t / s.extra, d = t % s.extra;
  return n * s.classes * s.extra + d;
}

// Max and sum of exp(x - max) over the classes of the target at `base` (stride extra).
template <typename T>
A8_HD void SoftmaxStats(const T* x, int64_t base, int64_t classes, int64_t extra, Acc<T>* m,
                        Acc<T>* s) {
  using C = Acc<T>;
  C mx = -std::numeric_limits<C>::infinity();
  for (int64_t c = 0; c < classes; ++c) mx = Max(mx, Ld(x, base + c * extra));
  C sum = 0;
  for (int64_t c = 0; c < classes; ++c) sum += MExp(Ld(x, base + c * extra) - mx);
  *m = mx;
  *s = sum;
}

// Per target: log-probabilities (SCE: LogSoftmax of the scores; NLL: the input itself), the
// target's term -lp[label] * weight and its weight. Reduction none stores the term as the loss;
// mean/sum leave term and weight in scratch for LossSumFn.
template <typename T, bool kSoftmax>
struct LossTargetFn {
  LossShape s;
  const T* x;
  const void* labels;
  const T* w;
  T* loss;      // reduction none
  T* log_prob;  // may be null
  Acc<T>* term;
  Acc<T>* weight;
  A8_HD void operator()(int64_t t) const {
    using C = Acc<T>;
    const int64_t base = ScoreBase(s, t);
    C m = 0, log_s = 0;
    if (kSoftmax) {
      C sum;
      SoftmaxStats(x, base, s.classes, s.extra, &m, &sum);
      log_s = MLog(sum);
      if (log_prob != nullptr) {
        for (int64_t c = 0; c < s.classes; ++c) {
          const int64_t j = base + c * s.extra;
          St(log_prob, j, (Ld(x, j) - m) - log_s);
        }
      }
    }
    const int64_t label = ClassOf(s, labels, t);
    C tm = 0, wt = 0;
    if (label == kBadLabel) {
      tm = wt = NaN<C>();
    } else if (label != kIgnored) {
      const int64_t j = base + label * s.extra;
      const C lp = kSoftmax ? (Ld(x, j) - m) - log_s : Ld(x, j);
      wt = WeightOf(w, label);
      tm = -lp * wt;
    }
    if (s.reduction == DevLossReduction::kNone) {
      St(loss, t, tm);
    } else {
      term[t] = tm;
      weight[t] = wt;
    }
  }
};

// One thread: the sum over the targets in order, divided by the weight sum for mean.
template <typename T>
struct LossSumFn {
  LossShape s;
  const void* labels;
  const Acc<T>* term;
  const Acc<T>* weight;
  T* loss;
  A8_HD void operator()(int64_t) const {
    using C = Acc<T>;
    C sum = 0, weight_sum = 0;
    for (int64_t t = 0; t < s.batch * s.extra; ++t) {
      if (ClassOf(s, labels, t) == kIgnored) continue;
      sum += term[t];
      weight_sum += weight[t];
    }
    St(loss, 0, s.reduction == DevLossReduction::kMean ? sum / weight_sum : sum);
  }
};

// One thread: the weight sum of the non-ignored targets (mean reduction of the gradients).
template <typename T>
struct WeightSumFn {
  LossShape s;
  const void* labels;
  const T* w;
  Acc<T>* out;
  A8_HD void operator()(int64_t) const {
    using C = Acc<T>;
    C weight_sum = 0;
    for (int64_t t = 0; t < s.batch * s.extra; ++t) {
      const int64_t label = ClassOf(s, labels, t);
      if (label == kIgnored) continue;
      weight_sum += label == kBadLabel ? NaN<C>() : WeightOf(w, label);
    }
    *out = weight_sum;
  }
};

// What the class-loss gradients read (LossGradParams, typed), with the mean's weight sum.
template <typename T>
struct TargetGrad {
  LossShape s;
  const T* dloss;
  const T* x;  // the scores: SoftmaxCrossEntropyLoss only
  const void* labels;
  const T* w;
  const Acc<T>* wsum;  // mean only
  T* dx;

  // The factor a target's log-probability gradient gets: -weight * g (cpu TargetFactors).
  A8_HD Acc<T> Factor(int64_t t, int64_t label) const {
    using C = Acc<T>;
    C g = Ld(dloss, s.reduction == DevLossReduction::kNone ? t : 0);
    if (s.reduction == DevLossReduction::kMean) g /= *wsum;
    return -WeightOf(w, label) * g;
  }
};

// d(scores) of SoftmaxCrossEntropyLoss, one thread per target.
template <typename T>
struct SceGradFn {
  TargetGrad<T> a;
  A8_HD void operator()(int64_t t) const {
    using C = Acc<T>;
    const LossShape& s = a.s;
    const int64_t base = ScoreBase(s, t);
    const int64_t label = ClassOf(s, a.labels, t);
    if (label < 0) {
      const C v = label == kIgnored ? C(0) : NaN<C>();
      for (int64_t c = 0; c < s.classes; ++c) St(a.dx, base + c * s.extra, v);
      return;
    }
    const C f = a.Factor(t, label);
    C m, sum;
    SoftmaxStats(a.x, base, s.classes, s.extra, &m, &sum);
    for (int64_t c = 0; c < s.classes; ++c) {
      const int64_t j = base + c * s.extra;
      const C prob = MExp(Ld(a.x, j) - m) / sum;
      St(a.dx, j, -f * (prob - (c == label ? 1 : 0)));
    }
  }
  static int64_t Threads(const LossShape& s) { return s.batch * s.extra; }
  static int64_t Cost(const LossShape& s) { return 2 * s.classes * kTranscendentalCost; }
};

// d(input) of NegativeLogLikelihoodLoss, one thread per element of [N, C, d...].
template <typename T>
struct NllGradFn {
  TargetGrad<T> a;
  A8_HD void operator()(int64_t i) const {
    using C = Acc<T>;
    const LossShape& s = a.s;
    const int64_t d = i % s.extra;
    const int64_t c = (i / s.extra) % s.classes;
    const int64_t t = i / (s.extra * s.classes) * s.extra + d;
    const int64_t label = ClassOf(s, a.labels, t);
    C v = 0;
    if (label == kBadLabel)
      v = NaN<C>();
    else if (label == c)
      v = a.Factor(t, label);
    St(a.dx, i, v);
  }
  static int64_t Threads(const LossShape& s) { return s.batch * s.classes * s.extra; }
  static int64_t Cost(const LossShape&) { return 1; }
};

// ---- a8 pair losses

template <typename T>
struct PairTermFn {
  DevPairLoss kind;
  const T* x;
  const T* y;
  Acc<T>* term;
  A8_HD void operator()(int64_t i) const {
    using C = Acc<T>;
    const C xv = Ld(x, i), tv = Ld(y, i);
    C v = 0;
    switch (kind) {
      case DevPairLoss::kMse:
        v = (xv - tv) * (xv - tv);
        break;
      case DevPairLoss::kL1:
        v = MAbs(xv - tv);
        break;
      case DevPairLoss::kBceWithLogits:
        v = rn::Add(rn::Sub(Max(xv, C(0)), rn::Mul(xv, tv)), MLog1p(MExp(-MAbs(xv))));
        break;
    }
    term[i] = v;
  }
};

template <typename T>
struct PairSumFn {
  int64_t n;
  const Acc<T>* term;
  T* loss;
  A8_HD void operator()(int64_t) const {
    using C = Acc<T>;
    C sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += term[i];
    St(loss, 0, sum / static_cast<C>(n));  // n = 0: NaN (0 / 0)
  }
};

template <typename T>
struct PairGradFn {
  DevPairLoss kind;
  int64_t n;
  const T* dloss;
  const T* x;
  const T* y;
  T* dx;
  T* dy;
  A8_HD void operator()(int64_t i) const {
    using C = Acc<T>;
    const C k = Ld(dloss, 0) / static_cast<C>(n);
    C gp, gt;
    PairLossGradAt(kind, Ld(x, i), Ld(y, i), k, &gp, &gt);
    if (dx != nullptr) St(dx, i, gp);
    if (dy != nullptr) St(dy, i, gt);
  }
};

// Scratch for `count` compute-type values twice (terms and weights), or one value.
template <typename C>
DevStatus TwoScratchArrays(DevCtx& ctx, int64_t count, C** a, C** b) {
  const size_t one = AlignUp(ScratchBytes<C>(count));
  void* p = nullptr;
  A8_DEV_RETURN_IF_ERROR(Scratch(ctx, 2 * one, &p));
  *a = static_cast<C*>(p);
  *b = reinterpret_cast<C*>(static_cast<uint8_t*>(p) + one);
  return DevOk();
}

template <bool kSoftmax>
DevStatus RunLoss(DevCtx& ctx, const LossParams& p) {
  const LossShape& s = p.shape;
  const int64_t targets = s.batch * s.extra;
  return DispatchFloat(s.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    using C = Acc<T>;
    C* term = nullptr;
    C* weight = nullptr;
    if (s.reduction != DevLossReduction::kNone)
      A8_DEV_RETURN_IF_ERROR(TwoScratchArrays(ctx, targets, &term, &weight));
    LossTargetFn<T, kSoftmax> f{s,
                                static_cast<const T*>(p.scores),
                                p.labels,
                                static_cast<const T*>(p.weights),
                                static_cast<T*>(p.loss),
                                static_cast<T*>(p.log_prob),
                                term,
                                weight};
    A8_DEV_RETURN_IF_ERROR(
        ForEach(ctx, targets, f, kSoftmax ? s.classes * kTranscendentalCost : 1));
    if (s.reduction == DevLossReduction::kNone) return DevOk();
    return ForEach(ctx, 1, LossSumFn<T>{s, p.labels, term, weight, static_cast<T*>(p.loss)});
  });
}

// A class-loss gradient: the mean reduction's weight sum in scratch (WeightSumFn), then Fn.
template <template <typename> class Fn>
DevStatus RunTargetGrad(DevCtx& ctx, const LossGradParams& p) {
  return DispatchFloat(p.shape.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    const T* w = static_cast<const T*>(p.weights);
    Acc<T>* wsum = nullptr;
    if (p.shape.reduction == DevLossReduction::kMean) {
      void* mem = nullptr;
      A8_DEV_RETURN_IF_ERROR(Scratch(ctx, 256, &mem));
      wsum = static_cast<Acc<T>*>(mem);
      A8_DEV_RETURN_IF_ERROR(ForEach(ctx, 1, WeightSumFn<T>{p.shape, p.labels, w, wsum}));
    }
    const TargetGrad<T> a{
        p.shape, static_cast<const T*>(p.dloss), static_cast<const T*>(p.scores), p.labels, w,
        wsum,    static_cast<T*>(p.dscores)};
    return ForEach(ctx, Fn<T>::Threads(p.shape), Fn<T>{a}, Fn<T>::Cost(p.shape));
  });
}

}  // namespace loss_detail

DevStatus SoftmaxCrossEntropyLoss(DevCtx& ctx, const LossParams& p) {
  return loss_detail::RunLoss<true>(ctx, p);
}

DevStatus NegativeLogLikelihoodLoss(DevCtx& ctx, const LossParams& p) {
  return loss_detail::RunLoss<false>(ctx, p);
}

DevStatus SoftmaxCrossEntropyLossGrad(DevCtx& ctx, const LossGradParams& p) {
  return loss_detail::RunTargetGrad<loss_detail::SceGradFn>(ctx, p);
}

DevStatus NegativeLogLikelihoodLossGrad(DevCtx& ctx, const LossGradParams& p) {
  return loss_detail::RunTargetGrad<loss_detail::NllGradFn>(ctx, p);
}

DevStatus PairLossForward(DevCtx& ctx, const PairLossParams& p) {
  return DispatchFloat(p.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    using C = Acc<T>;
    void* mem = nullptr;
    A8_DEV_RETURN_IF_ERROR(Scratch(ctx, AlignUp(ScratchBytes<C>(p.n)), &mem));
    C* term = static_cast<C*>(mem);
    A8_DEV_RETURN_IF_ERROR(
        ForEach(ctx, p.n,
                loss_detail::PairTermFn<T>{p.kind, static_cast<const T*>(p.pred),
                                           static_cast<const T*>(p.target), term},
                kTranscendentalCost));
    return ForEach(ctx, 1, loss_detail::PairSumFn<T>{p.n, term, static_cast<T*>(p.loss)});
  });
}

DevStatus PairLossGrad(DevCtx& ctx, const PairLossParams& p) {
  return DispatchFloat(p.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    loss_detail::PairGradFn<T> f{p.kind,
                                 p.n,
                                 static_cast<const T*>(p.dloss),
                                 static_cast<const T*>(p.pred),
                                 static_cast<const T*>(p.target),
                                 static_cast<T*>(p.dpred),
                                 static_cast<T*>(p.dtarget)};
    return ForEach(ctx, p.n, f, kTranscendentalCost);
  });
}

}  // namespace a8::A8_DEV_NS

// The NN gradient and loss bodies shared by the CPU and CUDA backends (kernels/device), run as the
// CPU backend runs them (tests/unit/shared_grad_nn_util.h): SoftmaxCrossEntropyLoss and
// NegativeLogLikelihoodLoss against float64 references; their gradients, the a8 pair losses' and
// Softmax's and LogSoftmax's against central differences of the forwards in float64, and in
// f32/f16/bf16 against their own float64 results on the same rounded inputs; Dropout's gradient
// against its mask and scale.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/softmax.h"  // the forward Softmax of the gradient checks
#include "tests/unit/cpu_kernels_grad_util.h"
#include "tests/unit/shared_grad_nn_util.h"

namespace a8::cpu {
namespace {

using testing::Buffer;
using testing::ExpectClose;
using testing::FromValues;
using testing::MakeBuffer;
using testing::RandomBuffer;
using testing::Values;
using namespace testing;  // Vec, Uniform, NumericGrad, CheckKernel
namespace shared = ::a8::testing::grad_nn;

// Runs `f` with its float operands stored as `dt` (each Vec converted in, results converted back).
using SharedBufs = std::vector<Buffer>;
Vec SharedRunAs(DType dt, const std::vector<Vec>& ins, size_t out_n,
                const std::function<Status(SharedBufs&, Buffer&)>& f) {
  SharedBufs b;
  for (const Vec& v : ins) b.push_back(FromValues(dt, {int64_t(v.size())}, v));
  Buffer out = MakeBuffer(dt, {int64_t(out_n)});
  Status s = f(b, out);
  EXPECT_TRUE(s.ok()) << s.message();
  return Values(out);
}

// Float64 reference of both losses from log-probabilities lp [N, C, D].
std::vector<double> RefNllLoss(const LossParams& p, const std::vector<double>& lp,
                               const std::vector<double>& labels, const std::vector<double>* w) {
  std::vector<double> per;
  double sum = 0, wsum = 0;
  for (int64_t t = 0; t < p.batch * p.extra; ++t) {
    const int64_t n = t / p.extra, d = t % p.extra, l = static_cast<int64_t>(labels[t]);
    if (p.has_ignore_index && l == p.ignore_index) {
      per.push_back(0);
      continue;
    }
    const double wt = w ? (*w)[l] : 1.0;
    per.push_back(-lp[(n * p.classes + l) * p.extra + d] * wt);
    sum += per.back();
    wsum += wt;
  }
  if (p.reduction == LossReduction::kNone) return per;
  return {p.reduction == LossReduction::kSum ? sum : sum / wsum};
}

TEST(SharedGradNnTest, SoftmaxCrossEntropyAndNllAgainstFloat64) {
  std::mt19937_64 rng(50);
  for (DType dt : testing::kFloatDTypes) {
    for (int64_t extra : {1, 4}) {
      for (LossReduction red : {LossReduction::kNone, LossReduction::kMean, LossReduction::kSum}) {
        for (int variant = 0; variant < 3; ++variant) {  // plain, weights, ignore_index
          SCOPED_TRACE(std::string(ElemName(dt)) + " extra " + std::to_string(extra) + " red " +
                       std::to_string(static_cast<int>(red)) + " variant " +
                       std::to_string(variant));
          LossParams p;
          p.dtype = dt;
          p.label_dtype = variant == 1 ? DType::kI32 : DType::kI64;
          p.batch = 17, p.classes = 5, p.extra = extra;
          p.reduction = red;
          p.has_ignore_index = variant == 2;
          p.ignore_index = 3;
          Dims sd = {17, 5}, ld = {17};
          if (extra > 1) sd.push_back(extra), ld.push_back(extra);
          Buffer scores = RandomBuffer(dt, sd, rng, -4, 4);
          Buffer labels = RandomBuffer(p.label_dtype, ld, rng, 0, 5);
          Buffer w = RandomBuffer(dt, {5}, rng, 0.5, 2);
          const bool weighted = variant == 1;
          Buffer loss = MakeBuffer(dt, red == LossReduction::kNone ? ld : Dims{});
          Buffer lp = MakeBuffer(dt, sd);
          ASSERT_TRUE(shared::SoftmaxCrossEntropyLoss(p, scores.data(), labels.data(),
                                                      weighted ? w.data() : nullptr, loss.data(),
                                                      lp.data())
                          .ok());
          std::vector<double> sv = Values(scores), want_lp(sv.size());
          for (int64_t n = 0; n < 17; ++n) {
            for (int64_t d = 0; d < extra; ++d) {
              double m = -INFINITY, s = 0;
              for (int64_t c = 0; c < 5; ++c) m = std::max(m, sv[(n * 5 + c) * extra + d]);
              for (int64_t c = 0; c < 5; ++c) s += std::exp(sv[(n * 5 + c) * extra + d] - m);
              for (int64_t c = 0; c < 5; ++c) {
                want_lp[(n * 5 + c) * extra + d] = sv[(n * 5 + c) * extra + d] - m - std::log(s);
              }
            }
          }
          std::vector<double> wv = Values(w);
          std::vector<double> want =
              RefNllLoss(p, want_lp, Values(labels), weighted ? &wv : nullptr);
          const double tol = 4 * testing::ToleranceFor(dt);
          ExpectClose(lp, want_lp, tol, nullptr, 1.0);
          ExpectClose(loss, want, tol, nullptr, 1.0);

          // NLL on the kernel's own log-probabilities gives the same loss.
          Buffer nll = MakeBuffer(dt, loss.dims);
          ASSERT_TRUE(shared::NegativeLogLikelihoodLoss(p, lp.data(), labels.data(),
                                                        weighted ? w.data() : nullptr, nll.data())
                          .ok());
          std::vector<double> want_nll =
              RefNllLoss(p, Values(lp), Values(labels), weighted ? &wv : nullptr);
          ExpectClose(nll, want_nll, tol, nullptr, 1.0);
        }
      }
    }
  }
}

TEST(SharedGradNnTest, AllIgnoredMeanIsNaNAndBadLabelsFail) {
  LossParams p;
  p.batch = 2, p.classes = 3;
  p.has_ignore_index = true, p.ignore_index = 1;
  Buffer x = FromValues(DType::kF32, {2, 3}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6});
  Buffer l = FromValues(DType::kI64, {2}, {1, 1});
  Buffer loss = MakeBuffer(DType::kF32, {});
  ASSERT_TRUE(
      shared::SoftmaxCrossEntropyLoss(p, x.data(), l.data(), nullptr, loss.data(), nullptr).ok());
  EXPECT_TRUE(std::isnan(Values(loss)[0]));  // as onnxruntime
  // The kernel raises DevErr (the backends name the label: DeviceLossTest).
  Buffer bad = FromValues(DType::kI64, {2}, {0, 3});
  Status st = shared::NegativeLogLikelihoodLoss(p, x.data(), bad.data(), nullptr, loss.data());
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput) << st.message();
  EXPECT_TRUE(std::isnan(Values(loss)[0]));
}

// ---- gradients

struct SharedLossCase {
  Dims scores;  // [N, C, d...]
  const char* reduction;
  bool weights, ignore;
};

TEST(SharedGradNnTest, SoftmaxCrossEntropyAndNllGradients) {
  const SharedLossCase cases[] = {{{5, 4}, "mean", false, false},
                                  {{4, 3}, "sum", true, true},
                                  {{3, 5, 2}, "none", true, false},
                                  {{2, 3, 2, 3}, "mean", true, true}};
  for (const SharedLossCase& lc : cases) {
    LossParams p;
    p.dtype = DType::kF64;
    p.batch = lc.scores[0], p.classes = lc.scores[1];
    p.extra = cpu::NumElements(Dims(lc.scores.begin() + 2, lc.scores.end()));
    const std::string red = lc.reduction;
    p.reduction = red == "none"  ? LossReduction::kNone
                  : red == "sum" ? LossReduction::kSum
                                 : LossReduction::kMean;
    p.has_ignore_index = lc.ignore;
    p.ignore_index = 1;
    const int64_t ns = cpu::NumElements(lc.scores), nt = p.batch * p.extra;
    const int64_t nl = p.reduction == LossReduction::kNone ? nt : 1;
    const Vec x = Uniform(ns, 23, -2, 2), r = Uniform(nl, 24);
    const Vec w = lc.weights ? Uniform(p.classes, 25, 0.5, 2) : Vec(p.classes, 1.0);
    for (DType label_dt : {DType::kI64, DType::kI32}) {
      p.label_dtype = label_dt;
      cpu::testing::Buffer labels = cpu::testing::MakeBuffer(label_dt, {nt});
      for (int64_t t = 0; t < nt; ++t) cpu::testing::SetValue(labels, t, (t * 5 + 2) % p.classes);
      for (bool nll : {false, true}) {
        const void* wp64 = lc.weights ? w.data() : nullptr;
        auto fwd = [&](const Vec& xx) {
          Vec l(nl);
          Status st =
              nll ? shared::NegativeLogLikelihoodLoss(p, xx.data(), labels.data(), wp64, l.data())
                  : shared::SoftmaxCrossEntropyLoss(p, xx.data(), labels.data(), wp64, l.data(),
                                                    nullptr);
          EXPECT_TRUE(st.ok()) << st.message();
          return l;
        };
        CheckKernel(
            [&](DType dt, const std::vector<Vec>& in) {
              LossParams q = p;
              q.dtype = dt;
              cpu::testing::Buffer g = cpu::testing::FromValues(dt, {nl}, in[0]);
              cpu::testing::Buffer xb = cpu::testing::FromValues(dt, lc.scores, in[1]);
              cpu::testing::Buffer wb = cpu::testing::FromValues(dt, {p.classes}, in[2]);
              cpu::testing::Buffer o = cpu::testing::MakeBuffer(dt, lc.scores);
              const void* wp = lc.weights ? wb.data() : nullptr;
              Status st = nll ? shared::NegativeLogLikelihoodLossGrad(q, g.data(), labels.data(),
                                                                      wp, o.data())
                              : shared::SoftmaxCrossEntropyLossGrad(q, g.data(), xb.data(),
                                                                    labels.data(), wp, o.data());
              EXPECT_TRUE(st.ok()) << st.message();
              return cpu::testing::Values(o);
            },
            {r, x, w}, NumericGrad(fwd, x, r), std::string(nll ? "NLL " : "SCE ") + red);
      }
    }
  }
}

TEST(SharedGradNnTest, LabelOutsideTheClassesIsAnError) {
  LossParams p;
  p.dtype = DType::kF32, p.batch = 2, p.classes = 3;
  const int64_t labels[] = {1, 3};
  const float g = 1, x[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  float out[6];
  EXPECT_EQ(shared::SoftmaxCrossEntropyLossGrad(p, &g, x, labels, nullptr, out).code(),
            StatusCode::kInvalidInput);
  EXPECT_EQ(shared::NegativeLogLikelihoodLossGrad(p, &g, labels, nullptr, out).code(),
            StatusCode::kInvalidInput);
}

TEST(SharedGradNnTest, PairLossesAndTheirGradients) {
  const std::pair<PairLossKind, const char*> kinds[] = {{PairLossKind::kMse, "mse"},
                                                        {PairLossKind::kL1, "l1"},
                                                        {PairLossKind::kBceWithLogits, "bce"}};
  for (const auto& k : kinds) {
    const PairLossKind kind = k.first;  // not a binding: the lambdas below capture it
    const char* name = k.second;
    const bool bce = kind == PairLossKind::kBceWithLogits;
    for (int64_t n : {1, 7, 64}) {
      Vec x = Uniform(n, 26, -4, 4), t = Uniform(n, 27, bce ? 0 : -4, bce ? 1 : 4);
      // Logits far out on both sides, where the naive BCE formula overflows.
      if (n == 64) x[3] = 90, x[5] = -95;
      auto ref = [&](const Vec& xx, const Vec& tt) {
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double d = xx[i] - tt[i];
          sum += kind == PairLossKind::kMse  ? d * d
                 : kind == PairLossKind::kL1 ? std::fabs(d)
                                             : std::max(xx[i], 0.0) - xx[i] * tt[i] +
                                                   std::log1p(std::exp(-std::fabs(xx[i])));
        }
        return Vec{sum / static_cast<double>(n)};
      };
      for (DType dt : cpu::testing::kFloatDTypes) {
        const Vec xr = Round(dt, x), tr = Round(dt, t);
        Vec got = SharedRunAs(dt, {xr, tr}, 1, [&](SharedBufs& b, cpu::testing::Buffer& o) {
          return shared::PairLossForward(kind, dt, n, b[0].data(), b[1].data(), o.data());
        });
        ExpectNear(got, ref(xr, tr), 2 * cpu::testing::ToleranceFor(dt),
                   std::string(name) + " forward " + cpu::ElemName(dt));
      }
      const Vec r = {0.75};
      for (int which = 0; which < 2; ++which) {
        CheckKernel(
            [&](DType dt, const std::vector<Vec>& in) {
              cpu::testing::Buffer g = cpu::testing::FromValues(dt, {1}, in[0]);
              cpu::testing::Buffer xb = cpu::testing::FromValues(dt, {n}, in[1]);
              cpu::testing::Buffer tb = cpu::testing::FromValues(dt, {n}, in[2]);
              cpu::testing::Buffer dp = cpu::testing::MakeBuffer(dt, {n}), dtg = dp;
              EXPECT_TRUE(shared::PairLossGrad(kind, dt, n, g.data(), xb.data(), tb.data(),
                                               dp.data(), dtg.data())
                              .ok());
              return cpu::testing::Values(which == 0 ? dp : dtg);
            },
            {r, x, t},
            which == 0 ? NumericGrad([&](const Vec& xx) { return ref(xx, t); }, x, r)
                       : NumericGrad([&](const Vec& tt) { return ref(x, tt); }, t, r),
            std::string(name) + (which == 0 ? " d(pred)" : " d(target)"));
      }
    }
  }
}

// ---- softmax, dropout

TEST(SharedGradNnTest, SoftmaxAndLogSoftmaxGradients) {
  for (const auto& c : {std::pair{Dims{3, 7}, 1}, std::pair{Dims{2, 5, 3}, 1},
                        std::pair{Dims{4, 3, 2}, 0}, std::pair{Dims{9}, 0}}) {
    const Dims& dims = c.first;  // variables, not bindings: the lambdas below capture them
    const int axis = c.second;
    const int64_t n = cpu::NumElements(dims);
    const Vec x = Uniform(n, 20, -3, 3), r = Uniform(n, 21);
    for (bool log : {false, true}) {
      auto fwd = [&](const Vec& xx) {
        Vec y(n);
        EXPECT_TRUE(cpu::Softmax(DType::kF64, dims, axis, log, xx.data(), y.data()).ok());
        return y;
      };
      CheckKernel(
          [&](DType dt, const std::vector<Vec>& in) {
            // Y from the forward kernel at this dtype, as the plan has it.
            cpu::testing::Buffer xb = cpu::testing::FromValues(dt, dims, in[1]);
            cpu::testing::Buffer yb = cpu::testing::MakeBuffer(dt, dims);
            EXPECT_TRUE(cpu::Softmax(dt, dims, axis, log, xb.data(), yb.data()).ok());
            return SharedRunAs(dt, {in[0]}, n, [&](SharedBufs& b, cpu::testing::Buffer& o) {
              return shared::SoftmaxGrad(dt, dims, axis, log, b[0].data(), yb.data(), o.data());
            });
          },
          {r, x}, NumericGrad(fwd, x, r), log ? "LogSoftmax" : "Softmax");
    }
  }
}

TEST(SharedGradNnTest, DropoutGradientAppliesMaskAndScale) {
  const int64_t n = 37;
  const Vec g = Uniform(n, 22);
  bool mask[n];
  for (int64_t i = 0; i < n; ++i) mask[i] = (i * 7) % 3 != 0;
  // ratio 0.3: the kernel scales by 1 / (1 - 0.3f) in float, which is 1.0f / 0.7f.
  for (DType dt : cpu::testing::kFloatDTypes) {
    Vec want(n);
    const Vec gr = Round(dt, g);
    for (int64_t i = 0; i < n; ++i) want[i] = mask[i] ? gr[i] * double(1.0f / 0.7f) : 0.0;
    Vec got = SharedRunAs(dt, {gr}, n, [&](SharedBufs& b, cpu::testing::Buffer& o) {
      return shared::DropoutGrad(dt, n, b[0].data(), mask, 0.3f, o.data());
    });
    ExpectNear(got, want, cpu::testing::ToleranceFor(dt), cpu::ElemName(dt));
  }
}

}  // namespace
}  // namespace a8::cpu

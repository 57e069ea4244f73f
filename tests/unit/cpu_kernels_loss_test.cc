#include <cmath>
#include <string>

#include "kernels/cpu/loss.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using testing::Buffer;
using testing::ExpectClose;
using testing::FromValues;
using testing::MakeBuffer;
using testing::RandomBuffer;
using testing::Values;

// Float64 reference of both losses from log-probabilities lp [N, C, D].
std::vector<double> RefNll(const LossParams& p, const std::vector<double>& lp,
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

TEST(CpuKernelLossTest, SoftmaxCrossEntropyAndNllAgainstFloat64) {
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
          ASSERT_TRUE(SoftmaxCrossEntropyLoss(p, scores.data(), labels.data(),
                                              weighted ? w.data() : nullptr, loss.data(), lp.data())
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
          std::vector<double> want = RefNll(p, want_lp, Values(labels), weighted ? &wv : nullptr);
          const double tol = 4 * testing::ToleranceFor(dt);
          ExpectClose(lp, want_lp, tol, nullptr, 1.0);
          ExpectClose(loss, want, tol, nullptr, 1.0);

          // NLL on the kernel's own log-probabilities gives the same loss.
          Buffer nll = MakeBuffer(dt, loss.dims);
          ASSERT_TRUE(NegativeLogLikelihoodLoss(p, lp.data(), labels.data(),
                                                weighted ? w.data() : nullptr, nll.data())
                          .ok());
          std::vector<double> want_nll =
              RefNll(p, Values(lp), Values(labels), weighted ? &wv : nullptr);
          ExpectClose(nll, want_nll, tol, nullptr, 1.0);
        }
      }
    }
  }
}

TEST(CpuKernelLossTest, AllIgnoredMeanIsNaNAndBadLabelsFail) {
  LossParams p;
  p.batch = 2, p.classes = 3;
  p.has_ignore_index = true, p.ignore_index = 1;
  Buffer x = FromValues(DType::kF32, {2, 3}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6});
  Buffer l = FromValues(DType::kI64, {2}, {1, 1});
  Buffer loss = MakeBuffer(DType::kF32, {});
  ASSERT_TRUE(SoftmaxCrossEntropyLoss(p, x.data(), l.data(), nullptr, loss.data(), nullptr).ok());
  EXPECT_TRUE(std::isnan(Values(loss)[0]));  // as onnxruntime
  Buffer bad = FromValues(DType::kI64, {2}, {0, 3});
  Status st = NegativeLogLikelihoodLoss(p, x.data(), bad.data(), nullptr, loss.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("label 3"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace a8::cpu

// The fast mode's LayerNormalization and its gradient (kernels/cpu/layer_norm_fast.h) against a
// float64 reference computed here, on random data in f32, f16 and bf16: rows shorter and longer
// than the 16 lanes with tails, with and without bias and stashed statistics, the gradient with
// and without the forward's statistics (recomputed), every output present or absent; dscale and
// dbias do not depend on the thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/layer_norm_fast.h"
#include "kernels/cpu/parallel.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using testing::Buffer;
using testing::MakeBuffer;
using testing::RandomBuffer;
using testing::RandomF32;
using testing::Values;

struct LnShape {
  int64_t outer, inner;
};
const LnShape kShapes[] = {{1, 1}, {3, 7}, {37, 16}, {50, 100}, {40, 768}, {2, 4099}};
// The epsilon of every case, the kernels' and the reference's.
constexpr float kEpsilon = 1e-5f;

// Row statistics in double, from the stored (rounded) x.
void RefStats(const std::vector<double>& x, int64_t outer, int64_t inner, double eps,
              std::vector<double>* mean, std::vector<double>* inv) {
  mean->assign(outer, 0.0);
  inv->assign(outer, 0.0);
  for (int64_t r = 0; r < outer; ++r) {
    double s = 0, q = 0;
    for (int64_t j = 0; j < inner; ++j) s += x[r * inner + j];
    const double m = s / inner;
    for (int64_t j = 0; j < inner; ++j) q += (x[r * inner + j] - m) * (x[r * inner + j] - m);
    (*mean)[r] = m;
    (*inv)[r] = 1.0 / std::sqrt(q / inner + eps);
  }
}

// |got - want| within the dtype's rounding of the result plus f32's of its terms.
void ExpectNear(DType t, const std::vector<double>& got, const std::vector<double>& want,
                double term_scale, const char* what) {
  const double rel = t == DType::kF32 ? 2e-6 : t == DType::kF16 ? 1e-3 : 8e-3;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + 3e-5 * term_scale)
        << what << " element " << i;
  }
}

// The fields that LayerNormFastArgs and LayerNormGradFastArgs share: x of `t` ([outer, inner])
// with `scale`, epsilon kEpsilon; no statistics and no outputs yet.
template <typename Args>
Args LayerNormArgs(DType t, int64_t outer, int64_t inner, const Buffer& x,
                   const std::vector<float>& scale) {
  Args a;
  a.dtype = t;
  a.outer = outer;
  a.inner = inner;
  a.epsilon = kEpsilon;
  a.x = x.data();
  a.scale = scale.data();
  return a;
}

// The gradient's arguments over dy and x of `t` with `scale`; no statistics and no outputs yet.
LayerNormGradFastArgs GradArgs(DType t, int64_t outer, int64_t inner, const Buffer& dy,
                               const Buffer& x, const std::vector<float>& scale) {
  auto a = LayerNormArgs<LayerNormGradFastArgs>(t, outer, inner, x, scale);
  a.dy = dy.data();
  return a;
}

class LayerNormFastTest : public ::testing::TestWithParam<DType> {
 protected:
  std::mt19937_64 rng_{5};
};

TEST_P(LayerNormFastTest, ForwardMatchesFloat64) {
  const DType t = GetParam();
  for (const LnShape& s : kShapes) {
    for (bool bias : {false, true}) {
      SCOPED_TRACE(::testing::Message() << s.outer << "x" << s.inner << " bias=" << bias);
      // An offset mean: a one-pass variance would lose digits here.
      const Buffer x = RandomBuffer(t, {s.outer, s.inner}, rng_, 3.0, 5.0);
      const std::vector<float> scale = RandomF32(s.inner, rng_, 0.5, 1.5);
      const std::vector<float> b = RandomF32(s.inner, rng_, -1, 1);
      Buffer y = MakeBuffer(t, {s.outer, s.inner});
      std::vector<float> mean(s.outer), inv(s.outer);
      auto a = LayerNormArgs<LayerNormFastArgs>(t, s.outer, s.inner, x, scale);
      a.bias = bias ? b.data() : nullptr;
      a.y = y.data();
      a.mean = mean.data();
      a.inv_std_dev = inv.data();
      ASSERT_TRUE(LayerNormFast(a).ok());

      const std::vector<double> xd = Values(x);
      std::vector<double> rm, ri;
      RefStats(xd, s.outer, s.inner, kEpsilon, &rm, &ri);
      std::vector<double> want(xd.size());
      for (int64_t r = 0; r < s.outer; ++r) {
        for (int64_t j = 0; j < s.inner; ++j) {
          const int64_t i = r * s.inner + j;
          want[i] = (xd[i] - rm[r]) * ri[r] * scale[j] + (bias ? b[j] : 0.0);
        }
      }
      ExpectNear(t, Values(y), want, 1.0, "y");
      ExpectNear(DType::kF32, std::vector<double>(mean.begin(), mean.end()), rm, 0.0, "mean");
      // 1/sqrt(var + eps) of a variance of about 1/6 from deviations of about 0.5: f32's
      // rounding of the sums.
      for (int64_t r = 0; r < s.outer; ++r) {
        ASSERT_NEAR(inv[r], ri[r], 1e-5 * ri[r]) << "inv " << r;
      }
    }
  }
}

TEST_P(LayerNormFastTest, GradientMatchesFloat64) {
  const DType t = GetParam();
  for (const LnShape& s : kShapes) {
    for (bool stats : {false, true}) {
      SCOPED_TRACE(::testing::Message() << s.outer << "x" << s.inner << " stats=" << stats);
      const Buffer x = RandomBuffer(t, {s.outer, s.inner}, rng_, -2.0, 2.0);
      const Buffer dy = RandomBuffer(t, {s.outer, s.inner}, rng_, -1.0, 1.0);
      const std::vector<float> scale = RandomF32(s.inner, rng_, 0.5, 1.5);
      const std::vector<double> xd = Values(x), dyd = Values(dy);
      std::vector<double> rm, ri;
      RefStats(xd, s.outer, s.inner, kEpsilon, &rm, &ri);
      std::vector<float> mean(rm.begin(), rm.end()), inv(ri.begin(), ri.end());
      Buffer dx = MakeBuffer(t, {s.outer, s.inner});
      std::vector<float> dscale(s.inner), dbias(s.inner);
      LayerNormGradFastArgs a = GradArgs(t, s.outer, s.inner, dy, x, scale);
      a.mean = stats ? mean.data() : nullptr;
      a.inv_std_dev = stats ? inv.data() : nullptr;
      a.dx = dx.data();
      a.dscale = dscale.data();
      a.dbias = dbias.data();
      ASSERT_TRUE(LayerNormGradFast(a).ok());

      std::vector<double> want_dx(xd.size()), want_ds(s.inner, 0.0), want_db(s.inner, 0.0);
      for (int64_t r = 0; r < s.outer; ++r) {
        double sg = 0, sgx = 0;
        for (int64_t j = 0; j < s.inner; ++j) {
          const int64_t i = r * s.inner + j;
          const double xhat = (xd[i] - rm[r]) * ri[r], g = dyd[i] * scale[j];
          sg += g;
          sgx += g * xhat;
          want_ds[j] += dyd[i] * xhat;
          want_db[j] += dyd[i];
        }
        for (int64_t j = 0; j < s.inner; ++j) {
          const int64_t i = r * s.inner + j;
          const double xhat = (xd[i] - rm[r]) * ri[r];
          want_dx[i] = ri[r] * (dyd[i] * scale[j] - sg / s.inner - xhat * sgx / s.inner);
        }
      }
      // dx's terms are about inv * |g| (up to 1.5 * inv); dscale and dbias sum `outer` terms.
      const double inv_max = *std::max_element(ri.begin(), ri.end());
      ExpectNear(t, Values(dx), want_dx, 2.0 * inv_max, "dx");
      const double rows = static_cast<double>(s.outer);
      ExpectNear(DType::kF32, std::vector<double>(dscale.begin(), dscale.end()), want_ds,
                 2.0 * rows, "dscale");
      ExpectNear(DType::kF32, std::vector<double>(dbias.begin(), dbias.end()), want_db, rows,
                 "dbias");
    }
  }
}

TEST_P(LayerNormFastTest, OutputsAreOptionalAndParamSumsIgnoreTheThreadCount) {
  const DType t = GetParam();
  const int64_t outer = 70, inner = 33;
  const Buffer x = RandomBuffer(t, {outer, inner}, rng_, -2.0, 2.0);
  const Buffer dy = RandomBuffer(t, {outer, inner}, rng_, -1.0, 1.0);
  const std::vector<float> scale = RandomF32(inner, rng_, 0.5, 1.5);
  std::vector<float> ds[2], db[2];
  Buffer dx_all = MakeBuffer(t, {outer, inner});
  for (int run = 0; run < 2; ++run) {
    // Run 0 on the pool; run 1 inside a pool task (a nested loop runs on its one thread), and
    // only dscale and dbias.
    ds[run].assign(inner, 0.0f);
    db[run].assign(inner, 0.0f);
    LayerNormGradFastArgs a = GradArgs(t, outer, inner, dy, x, scale);
    a.dx = run == 0 ? dx_all.data() : nullptr;
    a.dscale = ds[run].data();
    a.dbias = db[run].data();
    if (run == 0) {
      ASSERT_TRUE(LayerNormGradFast(a).ok());
    } else {
      bool ok = false;
      ParallelFor(2, int64_t{1} << 30, [&](int64_t b, int64_t) {
        if (b == 0) ok = LayerNormGradFast(a).ok();
      });
      ASSERT_TRUE(ok);
    }
  }
  EXPECT_EQ(ds[0], ds[1]);
  EXPECT_EQ(db[0], db[1]);
  // dx alone matches the dx computed with the parameter gradients.
  Buffer dx_only = MakeBuffer(t, {outer, inner});
  LayerNormGradFastArgs a = GradArgs(t, outer, inner, dy, x, scale);
  a.dx = dx_only.data();
  ASSERT_TRUE(LayerNormGradFast(a).ok());
  EXPECT_EQ(dx_only.bytes, dx_all.bytes);
  // Mean without InvStdDev is an error naming the op.
  std::vector<float> mean(outer);
  a.mean = mean.data();
  const Status s = LayerNormGradFast(a);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("a8.LayerNormalizationGrad: Mean and InvStdDev come together"),
            std::string::npos)
      << s.message();
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LayerNormFastTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(ElemName(info.param)); });

}  // namespace
}  // namespace a8::cpu

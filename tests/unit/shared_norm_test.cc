// The normalization bodies shared by the CPU and CUDA backends (kernels/device/nn_norm_impl.h),
// run as the CPU backend runs them (tests/unit/shared_norm_util.h): the forwards against float64
// references, the gradients against central differences of the forwards in float64, and in
// f32/f16/bf16 against their own float64 results on the same rounded inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/cpu_kernels_grad_util.h"
#include "tests/unit/shared_norm_util.h"

namespace a8::cpu {
namespace {

using namespace testing;  // Buffer, RandomBuffer, ExpectClose, NumericGrad, CheckKernel...
namespace norm = ::a8::testing::norm;
using norm::BatchNormInference;
using norm::BatchNormParams;
using norm::BatchNormTraining;
using norm::InstanceNorm;
using norm::LayerNorm;
using norm::LayerNormParams;

// Normalizes x[i] for i in `idx` with mean/var computed in float64.
void RefNormalize(const std::vector<double>& x, const std::vector<int64_t>& idx, double eps,
                  double scale, double bias, std::vector<double>* y, std::vector<double>* mag,
                  double* mean_out, double* var_out) {
  double m = 0, v = 0;
  for (int64_t i : idx) m += x[i];
  m /= static_cast<double>(idx.size());
  for (int64_t i : idx) v += (x[i] - m) * (x[i] - m);
  v /= static_cast<double>(idx.size());
  for (int64_t i : idx) {
    double t = (x[i] - m) / std::sqrt(v + eps) * scale;
    (*y)[i] = t + bias;
    (*mag)[i] = std::fabs(t) + std::fabs(bias);
  }
  *mean_out = m;
  *var_out = v;
}

TEST(SharedNormTest, BatchNormInferenceAndTraining) {
  std::mt19937_64 rng(22);
  for (DType dt : testing::kFloatDTypes) {
    // 150: planes of 128 or more elements are summed in 32 interleaved lanes.
    for (int64_t spatial : {1, 17, 150}) {
      SCOPED_TRACE(std::string(ElemName(dt)) + " spatial " + std::to_string(spatial));
      const int64_t n = 3, c = 5;
      BatchNormParams p;
      p.dtype = dt;
      p.param_dtype = DType::kF32;
      p.stat_dtype = dt == DType::kF64 ? DType::kF64 : DType::kF32;
      p.batch = n, p.channels = c, p.spatial = spatial;
      p.epsilon = 1e-3f;
      p.momentum = 0.8f;
      Buffer x = RandomBuffer(dt, {n, c, spatial}, rng, 1, 5);
      Buffer s = RandomBuffer(DType::kF32, {c}, rng, 0.5, 2),
             b = RandomBuffer(DType::kF32, {c}, rng);
      Buffer rm = RandomBuffer(p.stat_dtype, {c}, rng),
             rv = RandomBuffer(p.stat_dtype, {c}, rng, 0.5, 2);
      Buffer y = MakeBuffer(dt, {n, c, spatial});
      std::vector<double> xv = Values(x), sv = Values(s), bv = Values(b), rmv = Values(rm),
                          rvv = Values(rv);
      ASSERT_TRUE(
          BatchNormInference(p, x.data(), s.data(), b.data(), rm.data(), rv.data(), y.data()).ok());
      std::vector<double> want(xv.size()), mag(xv.size());
      for (int64_t i = 0; i < static_cast<int64_t>(xv.size()); ++i) {
        int64_t ch = (i / spatial) % c;
        double t = (xv[i] - rmv[ch]) / std::sqrt(rvv[ch] + double(1e-3f)) * sv[ch];
        want[i] = t + bv[ch];
        mag[i] = std::fabs(t) + std::fabs(bv[ch]);
      }
      ExpectClose(y, want, 2 * testing::ToleranceFor(dt), &mag);

      Buffer rm_out = MakeBuffer(p.stat_dtype, {c}), rv_out = MakeBuffer(p.stat_dtype, {c});
      ASSERT_TRUE(BatchNormTraining(p, x.data(), s.data(), b.data(), rm.data(), rv.data(), y.data(),
                                    rm_out.data(), rv_out.data())
                      .ok());
      std::vector<double> want_rm, want_rv;
      for (int64_t ch = 0; ch < c; ++ch) {
        std::vector<int64_t> idx;
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t j = 0; j < spatial; ++j) idx.push_back((i * c + ch) * spatial + j);
        }
        double m, v;
        RefNormalize(xv, idx, double(1e-3f), sv[ch], bv[ch], &want, &mag, &m, &v);
        double mom = double(0.8f);
        want_rm.push_back(mom * rmv[ch] + (1 - mom) * m);
        want_rv.push_back(mom * rvv[ch] + (1 - mom) * v);
      }
      const double stat_tol = dt == DType::kF64 ? 1e-12 : 1e-5;
      ExpectClose(y, want, 4 * testing::ToleranceFor(dt), &mag);
      ExpectClose(rm_out, want_rm, stat_tol);
      ExpectClose(rv_out, want_rv, stat_tol * 4);
    }
  }
}

TEST(SharedNormTest, LayerNormWithMeanAndInvStdDev) {
  std::mt19937_64 rng(23);
  for (DType dt : testing::kFloatDTypes) {
    // f16/bf16 X also with f32 Scale and B (what pin-fp32 produces).
    const bool low = dt == DType::kF16 || dt == DType::kBF16;
    for (DType pdt : low ? std::vector<DType>{dt, DType::kF32} : std::vector<DType>{dt}) {
      for (int64_t inner : {1, 3, 8, 65, 768}) {
        SCOPED_TRACE(std::string(ElemName(dt)) + " params " + ElemName(pdt) + " inner " +
                     std::to_string(inner));
        const int64_t outer = 17;
        LayerNormParams p;
        p.dtype = dt, p.param_dtype = pdt;
        p.stat_dtype = dt == DType::kF64 ? DType::kF64 : DType::kF32;
        p.outer = outer, p.inner = inner, p.epsilon = 1e-5f;
        Buffer x = RandomBuffer(dt, {outer, inner}, rng, -3, 5);
        Buffer s = RandomBuffer(pdt, {inner}, rng, 0.5, 2), b = RandomBuffer(pdt, {inner}, rng);
        Buffer y = MakeBuffer(dt, {outer, inner});
        Buffer mean = MakeBuffer(p.stat_dtype, {outer}), inv = MakeBuffer(p.stat_dtype, {outer});
        ASSERT_TRUE(
            LayerNorm(p, x.data(), s.data(), b.data(), y.data(), mean.data(), inv.data()).ok());
        std::vector<double> xv = Values(x), sv = Values(s), bv = Values(b);
        std::vector<double> want(xv.size()), mag(xv.size()), want_mean, want_inv;
        for (int64_t r = 0; r < outer; ++r) {
          std::vector<int64_t> idx;
          for (int64_t i = 0; i < inner; ++i) idx.push_back(r * inner + i);
          double m, v;
          RefNormalize(xv, idx, double(1e-5f), 1.0, 0.0, &want, &mag, &m, &v);
          for (int64_t i : idx) {
            want[i] = want[i] * sv[i % inner] + bv[i % inner];
            mag[i] = mag[i] * sv[i % inner] + std::fabs(bv[i % inner]);
          }
          want_mean.push_back(m);
          want_inv.push_back(1 / std::sqrt(v + double(1e-5f)));
        }
        ExpectClose(y, want, 4 * testing::ToleranceFor(dt), &mag);
        const double stat_tol = dt == DType::kF64 ? 1e-12 : 1e-5;
        ExpectClose(mean, want_mean, stat_tol, nullptr, 1.0);
        if (inner > 1) ExpectClose(inv, want_inv, 8 * stat_tol);
      }
    }
  }
}

// LayerNorm's statistics in RowMoments' order, written out: 8 interleaved lanes over the row's
// first n - n % 8 elements, the lanes added ((0+4)+(1+5))+((2+6)+(3+7)), then the tail in order;
// the mean first, then the squared deviations around it. (On a GPU rows of 256 or more take the
// lane path, a thread a lane: kernels/device/nn_layer_norm_impl.h; device_nn_test.cc compares it
// with the host in a8_gpu_tests.)
TEST(SharedNormTest, LayerNormStatisticsInTheLanesOrderForShortAndLongRows) {
  std::mt19937_64 rng(25);
  auto moment = [](const float* x, int64_t n, bool square, float m) {
    float lanes[8] = {};
    const int64_t body = n - n % 8;
    for (int64_t i = 0; i < body; ++i) {
      const float t = square ? (x[i] - m) * (x[i] - m) : x[i];
      lanes[i % 8] += t;
    }
    float s = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
              ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (int64_t i = body; i < n; ++i) s += square ? (x[i] - m) * (x[i] - m) : x[i];
    return s / static_cast<float>(n);
  };
  for (int64_t inner : {100, 255, 256, 300, 771}) {
    SCOPED_TRACE("inner " + std::to_string(inner));
    const int64_t outer = 5;
    LayerNormParams p;
    p.outer = outer, p.inner = inner, p.epsilon = 1e-5f;
    Buffer x = RandomBuffer(DType::kF32, {outer, inner}, rng, -3, 5);
    Buffer s = RandomBuffer(DType::kF32, {inner}, rng, 0.5, 2);
    Buffer b = RandomBuffer(DType::kF32, {inner}, rng);
    Buffer y = MakeBuffer(DType::kF32, {outer, inner});
    Buffer mean = MakeBuffer(DType::kF32, {outer}), inv = MakeBuffer(DType::kF32, {outer});
    ASSERT_TRUE(LayerNorm(p, x.data(), s.data(), b.data(), y.data(), mean.data(), inv.data()).ok());
    const float* xv = reinterpret_cast<const float*>(x.data());
    const float* got_mean = reinterpret_cast<const float*>(mean.data());
    const float* got_inv = reinterpret_cast<const float*>(inv.data());
    for (int64_t r = 0; r < outer; ++r) {
      const float* row = xv + r * inner;
      const float m = moment(row, inner, false, 0.0f);
      const float v = moment(row, inner, true, m);
      EXPECT_EQ(got_mean[r], m) << "row " << r;
      EXPECT_EQ(got_inv[r], 1.0f / std::sqrt(v + 1e-5f)) << "row " << r;
    }
  }
}

TEST(SharedNormTest, InstanceNorm) {
  std::mt19937_64 rng(24);
  for (DType dt : testing::kFloatDTypes) {
    const int64_t n = 2, c = 3, spatial = 33;
    Buffer x = RandomBuffer(dt, {n, c, spatial}, rng, -1, 3);
    Buffer s = RandomBuffer(dt, {c}, rng, 0.5, 2), b = RandomBuffer(dt, {c}, rng);
    Buffer y = MakeBuffer(dt, {n, c, spatial});
    ASSERT_TRUE(
        InstanceNorm(dt, dt, n, c, spatial, 1e-5f, x.data(), s.data(), b.data(), y.data()).ok());
    std::vector<double> xv = Values(x), sv = Values(s), bv = Values(b);
    std::vector<double> want(xv.size()), mag(xv.size());
    for (int64_t pl = 0; pl < n * c; ++pl) {
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < spatial; ++i) idx.push_back(pl * spatial + i);
      double m, v;
      RefNormalize(xv, idx, double(1e-5f), sv[pl % c], bv[pl % c], &want, &mag, &m, &v);
    }
    ExpectClose(y, want, 4 * testing::ToleranceFor(dt), &mag);
  }
}

TEST(SharedNormGradTest, BatchNormTrainingAndInferenceGradients) {
  // {2, 2, 130}: planes summed in 32 lanes.
  for (Dims xd : {Dims{4, 3, 5}, Dims{3, 2, 3, 4}, Dims{6, 5}, Dims{2, 2, 130}}) {
    const int64_t c = xd[1], nx = NumElements(xd);
    norm::BatchNormParams p;
    p.dtype = DType::kF64, p.param_dtype = DType::kF64, p.stat_dtype = DType::kF64;
    p.batch = xd[0], p.channels = c, p.spatial = nx / (xd[0] * c), p.epsilon = 1e-3f;
    const Vec x = Uniform(nx, 6, -2, 2), s = Uniform(c, 7, 0.5, 2), b = Uniform(c, 8),
              m = Uniform(c, 9), v = Uniform(c, 10, 0.5, 2), r = Uniform(nx, 11);
    for (bool training : {true, false}) {
      // f(x, scale, bias, mean, var) -> Y.
      auto fwd = [&](Vec xx, Vec ss, Vec bb, Vec mm, Vec vv) {
        Vec y(nx), rm(c), rv(c);
        if (training) {
          EXPECT_TRUE(norm::BatchNormTraining(p, xx.data(), ss.data(), bb.data(), mm.data(),
                                              vv.data(), y.data(), rm.data(), rv.data())
                          .ok());
        } else {
          EXPECT_TRUE(norm::BatchNormInference(p, xx.data(), ss.data(), bb.data(), mm.data(),
                                               vv.data(), y.data())
                          .ok());
        }
        return y;
      };
      const std::vector<Vec> numeric = {
          NumericGrad([&](const Vec& t) { return fwd(t, s, b, m, v); }, x, r),
          NumericGrad([&](const Vec& t) { return fwd(x, t, b, m, v); }, s, r),
          NumericGrad([&](const Vec& t) { return fwd(x, s, t, m, v); }, b, r),
          NumericGrad([&](const Vec& t) { return fwd(x, s, b, t, v); }, m, r),
          NumericGrad([&](const Vec& t) { return fwd(x, s, b, m, t); }, v, r)};
      for (int out = 0; out < (training ? 3 : 5); ++out) {
        CheckKernel(
            [&](DType dt, const std::vector<Vec>& in) {
              norm::BatchNormParams q = p;
              q.dtype = dt;
              // Parameters and statistics stay f32 beside f16/bf16 data, as mixed precision has.
              q.param_dtype = q.stat_dtype = dt == DType::kF64 ? DType::kF64 : DType::kF32;
              Buffer g = FromValues(dt, xd, in[0]);
              Buffer xb = FromValues(dt, xd, in[1]);
              std::vector<Buffer> pv;
              for (int i = 2; i < 5; ++i) pv.push_back(FromValues(q.param_dtype, {c}, in[i]));
              std::vector<Buffer> o = {MakeBuffer(dt, xd)};
              for (int i = 0; i < 4; ++i) o.push_back(MakeBuffer(q.param_dtype, {c}));
              Status st = norm::BatchNormGrad(
                  q, g.data(), xb.data(), pv[0].data(), training ? nullptr : pv[1].data(),
                  training ? nullptr : pv[2].data(), o[0].data(), o[1].data(), o[2].data(),
                  training ? nullptr : o[3].data(), training ? nullptr : o[4].data());
              EXPECT_TRUE(st.ok()) << st.message();
              return Values(o[out]);
            },
            {r, x, s, m, v}, numeric[out],
            "BatchNorm training=" + std::to_string(training) + " output " + std::to_string(out));
      }
    }
  }
}

// The central differences of fwd(x, scale, bias) along r, with respect to x, scale and bias.
std::vector<Vec> NumericGradsOfXScaleBias(
    const std::function<Vec(const Vec&, const Vec&, const Vec&)>& fwd, const Vec& x, const Vec& s,
    const Vec& b, const Vec& r) {
  return {NumericGrad([&](const Vec& t) { return fwd(t, s, b); }, x, r),
          NumericGrad([&](const Vec& t) { return fwd(x, t, b); }, s, r),
          NumericGrad([&](const Vec& t) { return fwd(x, s, t); }, b, r)};
}

TEST(SharedNormGradTest, LayerNormGradientsWithAndWithoutStatistics) {
  for (const auto& [dims, axis] :
       {std::pair{Dims{3, 7}, 1}, std::pair{Dims{2, 3, 5}, 1}, std::pair{Dims{4, 2, 3}, 2},
        // 140 rows: the scale and bias gradients add chunks of 64 rows; rows of 70: row sums
        // in 32 lanes, two full rounds and 6 more.
        std::pair{Dims{140, 3}, 1}, std::pair{Dims{3, 70}, 1}}) {
    const Dims xd = dims;  // a variable, not a binding, so that the lambdas below can capture it
    norm::LayerNormParams p;
    p.dtype = p.param_dtype = p.stat_dtype = DType::kF64;
    p.outer = NumElements(Dims(xd.begin(), xd.begin() + axis));
    p.inner = NumElements(Dims(xd.begin() + axis, xd.end()));
    p.epsilon = 1e-3f;
    const int64_t nx = p.outer * p.inner;
    const Vec x = Uniform(nx, 12, -2, 2), s = Uniform(p.inner, 13, 0.5, 2),
              b = Uniform(p.inner, 14), r = Uniform(nx, 15);
    Vec mean(p.outer), inv(p.outer), y(nx);
    auto fwd = [&](const Vec& xx, const Vec& ss, const Vec& bb) {
      Vec yy(nx);
      EXPECT_TRUE(
          norm::LayerNorm(p, xx.data(), ss.data(), bb.data(), yy.data(), mean.data(), inv.data())
              .ok());
      return yy;
    };
    const std::vector<Vec> numeric = NumericGradsOfXScaleBias(fwd, x, s, b, r);
    for (bool stats : {true, false}) {
      for (int out = 0; out < 3; ++out) {
        CheckKernel(
            [&](DType dt, const std::vector<Vec>& in) {
              norm::LayerNormParams q = p;
              q.dtype = q.param_dtype = dt;
              q.stat_dtype = dt == DType::kF64 ? DType::kF64 : DType::kF32;
              // The forward's Mean and InvStdDev for these (rounded) inputs.
              Buffer xb = FromValues(dt, xd, in[1]);
              Buffer sb = FromValues(dt, {p.inner}, in[2]);
              Buffer g = FromValues(dt, xd, in[0]);
              Buffer yb = MakeBuffer(dt, xd);
              Buffer mb = MakeBuffer(q.stat_dtype, {p.outer});
              Buffer ib = MakeBuffer(q.stat_dtype, {p.outer});
              EXPECT_TRUE(
                  norm::LayerNorm(q, xb.data(), sb.data(), nullptr, yb.data(), mb.data(), ib.data())
                      .ok());
              std::vector<Buffer> o = {MakeBuffer(dt, xd), MakeBuffer(dt, {p.inner}),
                                       MakeBuffer(dt, {p.inner})};
              Status st = norm::LayerNormGrad(
                  q, g.data(), xb.data(), sb.data(), stats ? mb.data() : nullptr,
                  stats ? ib.data() : nullptr, o[0].data(), o[1].data(), o[2].data());
              EXPECT_TRUE(st.ok()) << st.message();
              return Values(o[out]);
            },
            {r, x, s}, numeric[out], "LayerNorm output " + std::to_string(out));
      }
    }
  }
}

TEST(SharedNormGradTest, InstanceNormGradients) {
  for (Dims xd : {Dims{2, 3, 5}, Dims{3, 2, 2, 3}, Dims{1, 2, 140}}) {
    const int64_t n = xd[0], c = xd[1], nx = NumElements(xd), sp = nx / (n * c);
    const Vec x = Uniform(nx, 16, -2, 2), s = Uniform(c, 17, 0.5, 2), b = Uniform(c, 18),
              r = Uniform(nx, 19);
    auto fwd = [&](const Vec& xx, const Vec& ss, const Vec& bb) {
      Vec y(nx);
      EXPECT_TRUE(norm::InstanceNorm(DType::kF64, DType::kF64, n, c, sp, 1e-3f, xx.data(),
                                     ss.data(), bb.data(), y.data())
                      .ok());
      return y;
    };
    const std::vector<Vec> numeric = NumericGradsOfXScaleBias(fwd, x, s, b, r);
    for (int out = 0; out < 3; ++out) {
      CheckKernel(
          [&](DType dt, const std::vector<Vec>& in) {
            Buffer g = FromValues(dt, xd, in[0]);
            Buffer xb = FromValues(dt, xd, in[1]);
            Buffer sb = FromValues(dt, {c}, in[2]);
            std::vector<Buffer> o = {MakeBuffer(dt, xd), MakeBuffer(dt, {c}), MakeBuffer(dt, {c})};
            EXPECT_TRUE(norm::InstanceNormGrad(dt, dt, n, c, sp, 1e-3f, g.data(), xb.data(),
                                               sb.data(), o[0].data(), o[1].data(), o[2].data())
                            .ok());
            return Values(o[out]);
          },
          {r, x, s}, numeric[out], "InstanceNorm output " + std::to_string(out));
    }
  }
}

}  // namespace
}  // namespace a8::cpu

#include <cmath>
#include <random>
#include <string>

#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/reduce.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using namespace testing;  // cpu::testing: Buffer, ExpectClose, ExpectRoundedExactly, FromValues,
                          // MakeBuffer, RandomBuffer, Values

// Groups the input elements by output element (reduced axes dropped), in row-major order.
std::vector<std::vector<double>> GroupByOutput(const Dims& dims, std::vector<int64_t> axes,
                                               const std::vector<double>& x) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> red(rank, axes.empty());
  for (int64_t a : axes) red[a < 0 ? a + rank : a] = true;
  int64_t out_n = 1;
  for (int64_t i = 0; i < rank; ++i) out_n *= red[i] ? 1 : dims[i];
  std::vector<std::vector<double>> groups(out_n);
  for (int64_t e = 0; e < static_cast<int64_t>(x.size()); ++e) {
    int64_t rest = e, o = 0, stride = 1;
    for (int64_t i = rank - 1; i >= 0; --i) {
      int64_t c = rest % dims[i];
      rest /= dims[i];
      if (!red[i]) o += c * stride, stride *= dims[i];
    }
    groups[o].push_back(x[e]);
  }
  return groups;
}

TEST(CpuKernelReduceTest, AllOpsOverAxisSetsAgainstFloat64) {
  const Dims dims = {3, 17, 5};
  const std::vector<std::vector<int64_t>> axis_sets = {{}, {0}, {1}, {-1}, {0, 2}, {1, 2}};
  std::mt19937_64 rng(30);
  for (int op_i = 0; op_i <= static_cast<int>(ReduceOp::kLogSumExp); ++op_i) {
    const ReduceOp op = static_cast<ReduceOp>(op_i);
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI32}) {
      const bool int_ok = op != ReduceOp::kL2 && op != ReduceOp::kLogSumExp;
      if (dt == DType::kI32 && !int_ok) continue;
      for (const auto& axes : axis_sets) {
        SCOPED_TRACE("op " + std::to_string(op_i) + " " + ElemName(dt) + " axes " +
                     std::to_string(axes.size()) + (axes.empty() ? "" : std::to_string(axes[0])));
        const bool prod = op == ReduceOp::kProd;
        Buffer x = dt == DType::kI32 ? RandomBuffer(dt, dims, rng, prod ? -1 : -9, prod ? 3 : 9)
                                     : RandomBuffer(dt, dims, rng, prod ? 0.7 : -3, prod ? 1.3 : 3);
        auto od = ReduceOutputDims(dims, axes, true);
        ASSERT_TRUE(od.ok());
        Buffer y = MakeBuffer(dt, *od);
        ASSERT_TRUE(Reduce(op, dt, dims, axes, x.data(), y.data()).ok());
        std::vector<double> want, mag;
        for (const auto& g : GroupByOutput(dims, axes, Values(x))) {
          double s = 0, sa = 0, p = 1, mx = -INFINITY, mn = INFINITY, sq = 0, l1 = 0;
          for (double v : g) {
            s += v, sa += std::fabs(v), p *= v, sq += v * v, l1 += std::fabs(v);
            mx = std::max(mx, v), mn = std::min(mn, v);
          }
          double n = static_cast<double>(g.size()), r = 0, m = sa;
          switch (op) {
            case ReduceOp::kSum:
              r = s;
              break;
            case ReduceOp::kMean:
              r = dt == DType::kI32 ? std::trunc(s / n) : s / n;
              m = sa / n;
              break;
            case ReduceOp::kMax:
              r = mx;
              break;
            case ReduceOp::kMin:
              r = mn;
              break;
            case ReduceOp::kProd:
              r = p, m = std::fabs(p) * n;
              break;
            case ReduceOp::kSumSquare:
              r = sq, m = sq;
              break;
            case ReduceOp::kL1:
              r = l1;
              break;
            case ReduceOp::kL2:
              r = std::sqrt(sq), m = r;
              break;
            case ReduceOp::kLogSumExp: {
              double e = 0;
              for (double v : g) e += std::exp(v - mx);
              r = mx + std::log(e);
              m = std::fabs(r) + 1;
              break;
            }
          }
          want.push_back(r);
          mag.push_back(m);
        }
        if (dt == DType::kI32 || op == ReduceOp::kMax || op == ReduceOp::kMin) {
          ExpectRoundedExactly(y, want);
        } else {
          ExpectClose(y, want, 2 * testing::ToleranceFor(dt), &mag);
        }
      }
    }
  }
  EXPECT_FALSE(Reduce(ReduceOp::kSum, DType::kF32, dims, {3}, nullptr, nullptr).ok());
  EXPECT_FALSE(Reduce(ReduceOp::kSum, DType::kF32, dims, {1, -2}, nullptr, nullptr).ok());
  EXPECT_EQ(*ReduceOutputDims(dims, {0, 2}, false), (Dims{17}));
}

// A float sum of more than kSumChunk terms adds chunks of kSumChunk in order, each from 0, then
// the chunks' sums (kernels/common/sum_order.h; the device kernels add the same way): the bits
// of that loop written out here, and within f32's tolerance of float64. 300 rows of 6 reduced
// over the rows (a bias gradient: the fast row-run path) and over everything (the general one).
TEST(CpuKernelReduceTest, LongFloatSumsAddInChunksOf64) {
  const Dims dims = {300, 6};
  std::mt19937_64 rng(31);
  Buffer x = RandomBuffer(DType::kF32, dims, rng, -3, 3);
  const float* xv = reinterpret_cast<const float*>(x.data());
  auto chunked = [&](int64_t first, int64_t count, int64_t stride) {
    float s = 0, chunk = 0;
    for (int64_t r = 0; r < count; ++r) {
      chunk += xv[first + r * stride];
      if ((r + 1) % 64 == 0 || r + 1 == count) s += chunk, chunk = 0;
    }
    return s;
  };
  for (const auto& axes : {std::vector<int64_t>{0}, std::vector<int64_t>{}}) {
    SCOPED_TRACE(axes.empty() ? "all axes" : "axis 0");
    auto od = ReduceOutputDims(dims, axes, false);
    ASSERT_TRUE(od.ok());
    Buffer y = MakeBuffer(DType::kF32, *od);
    ASSERT_TRUE(Reduce(ReduceOp::kSum, DType::kF32, dims, axes, x.data(), y.data()).ok());
    const float* yv = reinterpret_cast<const float*>(y.data());
    std::vector<double> want, mag;
    for (const auto& g : GroupByOutput(dims, axes, Values(x))) {
      double s = 0, m = 0;
      for (double v : g) s += v, m += std::fabs(v);
      want.push_back(s);
      mag.push_back(m);
    }
    ExpectClose(y, want, 2 * testing::ToleranceFor(DType::kF32), &mag);
    if (axes.empty()) {
      EXPECT_EQ(yv[0], chunked(0, 300 * 6, 1));
    } else {
      for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(yv[j], chunked(j, 300, 6)) << "output " << j;
    }
  }
}

TEST(CpuKernelArgReduceTest, FirstAndLastIndex) {
  Buffer x = FromValues(DType::kF16, {2, 4}, {1, 5, 5, 2, 7, 0, 7, 0});
  std::vector<int64_t> y(2);
  ASSERT_TRUE(ArgReduce(true, DType::kF16, {2, 4}, 1, false, x.data(), y.data()).ok());
  EXPECT_EQ(y, (std::vector<int64_t>{1, 0}));
  ASSERT_TRUE(ArgReduce(true, DType::kF16, {2, 4}, -1, true, x.data(), y.data()).ok());
  EXPECT_EQ(y, (std::vector<int64_t>{2, 2}));
  ASSERT_TRUE(ArgReduce(false, DType::kF16, {2, 4}, 1, true, x.data(), y.data()).ok());
  EXPECT_EQ(y, (std::vector<int64_t>{0, 3}));
  std::vector<int64_t> y0(4);
  ASSERT_TRUE(ArgReduce(false, DType::kF16, {2, 4}, 0, false, x.data(), y0.data()).ok());
  EXPECT_EQ(y0, (std::vector<int64_t>{0, 1, 0, 1}));

  std::mt19937_64 rng(31);
  Buffer r = RandomBuffer(DType::kI32, {5, 17, 3}, rng, -1000, 1000);
  std::vector<int64_t> ym(15);
  ASSERT_TRUE(ArgReduce(true, DType::kI32, {5, 17, 3}, 1, false, r.data(), ym.data()).ok());
  std::vector<double> rv = Values(r);
  for (int64_t o = 0; o < 5; ++o) {
    for (int64_t i = 0; i < 3; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < 17; ++k) {
        if (rv[(o * 17 + k) * 3 + i] > rv[(o * 17 + best) * 3 + i]) best = k;
      }
      EXPECT_EQ(ym[o * 3 + i], best);
    }
  }
}

TEST(CpuKernelSoftmaxTest, AnyAxisAndLog) {
  std::mt19937_64 rng(32);
  const Dims dims = {3, 17, 65};
  for (DType dt : testing::kFloatDTypes) {
    for (int64_t axis : {0, 1, -1}) {
      for (bool log : {false, true}) {
        SCOPED_TRACE(std::string(ElemName(dt)) + " axis " + std::to_string(axis) +
                     (log ? " log" : ""));
        Buffer x = RandomBuffer(dt, dims, rng, -8, 8);
        Buffer y = MakeBuffer(dt, dims);
        ASSERT_TRUE(Softmax(dt, dims, axis, log, x.data(), y.data()).ok());
        const int64_t a = axis < 0 ? axis + 3 : axis;
        int64_t outer = 1, inner = 1;
        for (int64_t i = 0; i < a; ++i) outer *= dims[i];
        for (int64_t i = a + 1; i < 3; ++i) inner *= dims[i];
        std::vector<double> xv = Values(x), want(xv.size()), mag(xv.size());
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t i = 0; i < inner; ++i) {
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < dims[a]; ++k)
              m = std::max(m, xv[(o * dims[a] + k) * inner + i]);
            for (int64_t k = 0; k < dims[a]; ++k)
              s += std::exp(xv[(o * dims[a] + k) * inner + i] - m);
            for (int64_t k = 0; k < dims[a]; ++k) {
              const int64_t at = (o * dims[a] + k) * inner + i;
              want[at] = log ? xv[at] - m - std::log(s) : std::exp(xv[at] - m) / s;
              // log(sum) carries the rounding of a sum >= 1: an absolute error of ~eps.
              mag[at] = log ? std::fabs(xv[at] - m) + std::log(s) + 1 : want[at];
            }
          }
        }
        ExpectClose(y, want, 2 * testing::ToleranceFor(dt), &mag, 1e-6);
      }
    }
  }
}

// f32 rows along the last axis take a vectorised exp in the fast mode: attention-style rows (short,
// with masked -10000 and -inf scores) against float64, relative to each probability, and in place.
TEST(CpuKernelSoftmaxTest, MaskedRowsInPlace) {
  std::mt19937_64 rng(33);
  ScopedKernelMode fast(KernelMode::kFast);
  std::uniform_int_distribution<int> pick(0, 5);
  for (int64_t len : {1, 3, 16, 33}) {
    SCOPED_TRACE("len " + std::to_string(len));
    const Dims dims = {7, 5, len};
    Buffer x = RandomBuffer(DType::kF32, dims, rng, -30, 30);
    std::vector<double> xv = Values(x);
    for (size_t i = 0; i < xv.size(); ++i) {
      if (i % static_cast<size_t>(len) == 0) continue;  // every row keeps one finite score
      const int r = pick(rng);
      if (r == 0) xv[i] = -10000.0;
      if (r == 1) xv[i] = -INFINITY;
    }
    x = testing::FromValues(DType::kF32, dims, xv);
    std::vector<double> want(xv.size()), mag(xv.size());
    for (size_t r = 0; r < xv.size(); r += static_cast<size_t>(len)) {
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < len; ++k) m = std::max(m, xv[r + k]);
      for (int64_t k = 0; k < len; ++k) s += std::exp(xv[r + k] - m);
      for (int64_t k = 0; k < len; ++k) {
        want[r + k] = std::exp(xv[r + k] - m) / s;
        // x - max is rounded to float: exp carries its relative error times |x - max|.
        mag[r + k] = want[r + k] == 0 ? 0 : want[r + k] * (1 + std::fabs(xv[r + k] - m));
      }
    }
    ASSERT_TRUE(Softmax(DType::kF32, dims, -1, false, x.data(), x.data()).ok());
    ExpectClose(x, want, 2e-6, &mag, 1e-30);
  }
}

}  // namespace
}  // namespace a8::cpu

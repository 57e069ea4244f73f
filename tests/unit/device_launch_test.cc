// ForEachRow (kernels/device/launch.h): the host launch of a row-shaped kernel visits every
// element exactly once, with the row and column it has, however the pool cuts the index space;
// the GPU's shape (SpanPerElement, one Span call per element) computes the same values.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/device/launch.h"

namespace a8::emu {
namespace {

// Writes r * 1000 + j into element (r, j) and counts the visits of each element.
struct MarkRows {
  int64_t cols;
  int64_t* value;
  int32_t* visits;
  void Span(int64_t r, int64_t j0, int64_t j1) const {
    EXPECT_LE(0, j0);
    EXPECT_LT(j0, j1);
    EXPECT_LE(j1, cols);
    for (int64_t j = j0; j < j1; ++j) {
      value[r * cols + j] = r * 1000 + j;
      __atomic_fetch_add(&visits[r * cols + j], 1, __ATOMIC_RELAXED);
    }
  }
};

void CheckCoverage(int64_t rows, int64_t cols, int64_t cost) {
  std::vector<int64_t> value(static_cast<size_t>(rows * cols), -1);
  std::vector<int32_t> visits(value.size(), 0);
  DevCtx ctx;
  ASSERT_TRUE(ForEachRow(ctx, rows, cols, MarkRows{cols, value.data(), visits.data()}, cost).ok());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(visits[r * cols + j], 1) << rows << "x" << cols << " at " << r << "," << j;
      ASSERT_EQ(value[r * cols + j], r * 1000 + j) << rows << "x" << cols;
    }
  }
}

TEST(DeviceLaunchTest, ForEachRowVisitsEveryElementOnce) {
  // A heavy cost splits even short index spaces over the pool, so chunks end inside rows.
  for (int64_t cost : {int64_t{1}, int64_t{1} << 14}) {
    CheckCoverage(1, 1, cost);
    CheckCoverage(1, 997, cost);
    CheckCoverage(997, 1, cost);
    CheckCoverage(37, 53, cost);
    CheckCoverage(3, 4099, cost);
  }
}

TEST(DeviceLaunchTest, ForEachRowOfNothingRunsNothing) {
  DevCtx ctx;
  int32_t visits = 0;
  int64_t value = 0;
  EXPECT_TRUE(ForEachRow(ctx, 0, 5, MarkRows{5, &value, &visits}).ok());
  EXPECT_TRUE(ForEachRow(ctx, 5, 0, MarkRows{0, &value, &visits}).ok());
  EXPECT_EQ(visits, 0);
}

TEST(DeviceLaunchTest, OneThreadAnElementGivesTheSameValues) {
  const int64_t rows = 29, cols = 31;
  std::vector<int64_t> host(rows * cols, -1), per_element(rows * cols, -1);
  std::vector<int32_t> visits(rows * cols, 0);
  DevCtx ctx;
  ASSERT_TRUE(ForEachRow(ctx, rows, cols, MarkRows{cols, host.data(), visits.data()}).ok());
  const SpanPerElement<MarkRows> gpu_shape{MarkRows{cols, per_element.data(), visits.data()},
                                           IndexDiv(cols)};
  ASSERT_TRUE(ForEach(ctx, rows * cols, gpu_shape).ok());
  EXPECT_EQ(host, per_element);
  for (int32_t v : visits) EXPECT_EQ(v, 2);
}

// IndexDiv (kernels/common/index_div.h), the division by multiplication the GPU's index
// arithmetic runs (the host runs the same code): the exact quotient and remainder for every
// divisor shape (1, powers of two and their neighbours, primes, 2^31 - 1 and beyond, where
// it falls back to `/`) and dividends at every multiple's edge up to 2^31 and past it.
TEST(DeviceLaunchTest, IndexDivIsExactDivision) {
  std::vector<int64_t> divisors = {1,
                                   2,
                                   3,
                                   5,
                                   7,
                                   12,
                                   31,
                                   49,
                                   56,
                                   64,
                                   100,
                                   112,
                                   768,
                                   3072,
                                   4099,
                                   65535,
                                   65536,
                                   65537,
                                   1000003,
                                   (int64_t{1} << 30) - 1,
                                   int64_t{1} << 30,
                                   (int64_t{1} << 31) - 1,
                                   int64_t{1} << 31,
                                   (int64_t{1} << 33) + 7};
  for (int s = 0; s < 31; ++s) {
    divisors.push_back((int64_t{1} << s) + 1);
    if (s > 1) divisors.push_back((int64_t{1} << s) - 1);
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + static_cast<int64_t>(rng() % (1u << 31)));
  const int64_t top = int64_t{1} << 31;
  for (int64_t d : divisors) {
    const IndexDiv div(d);
    std::vector<int64_t> ns = {0,       1,   d - 1,   d,       d + 1,
                               top - 1, top, top + 1, top - d, (int64_t{1} << 40) + 3};
    for (int64_t k = 1; k <= 8; ++k) {
      const int64_t m = (top - 1) / d / k * d;  // multiples of d spread below 2^31
      ns.insert(ns.end(), {m - 1, m, m + 1});
    }
    for (int i = 0; i < 2000; ++i) ns.push_back(static_cast<int64_t>(rng() % (uint64_t{1} << 32)));
    for (int64_t n : ns) {
      if (n < 0) continue;
      int64_t rem = -1;
      ASSERT_EQ(div.DivMod(n, &rem), n / d) << n << " / " << d;
      ASSERT_EQ(rem, n % d) << n << " % " << d;
    }
  }
}

// The loads-first split (HasLoadStore): a functor with Load and Store runs operator() on the
// host, which is Store(i, Load(i)); in place (y == x) the values are right.
struct SquareInPlace {
  float* x;
  float Load(int64_t i) const { return x[i]; }
  void Store(int64_t i, float v) const { x[i] = v * v + static_cast<float>(i); }
  void operator()(int64_t i) const { Store(i, Load(i)); }
};
static_assert(HasLoadStore<SquareInPlace>::value);
static_assert(!HasLoadStore<MarkRows>::value);

TEST(DeviceLaunchTest, LoadStoreFunctorsRunEveryIndexOnce) {
  std::vector<float> x(5000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) - 8.0f;
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] * x[i] + static_cast<float>(i);
  DevCtx ctx;
  ASSERT_TRUE(ForEach(ctx, static_cast<int64_t>(x.size()), SquareInPlace{x.data()}).ok());
  EXPECT_EQ(x, want);
}

}  // namespace
}  // namespace a8::emu

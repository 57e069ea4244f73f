// ForEachRow (kernels/device/launch.h): the host launch of a row-shaped kernel visits every
// element exactly once, with the row and column it has, however the pool cuts the index space;
// the GPU's shape (SpanPerElement, one Span call per element) computes the same values.
#include <gtest/gtest.h>

#include <cstdint>
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
                                           cols};
  ASSERT_TRUE(ForEach(ctx, rows * cols, gpu_shape).ok());
  EXPECT_EQ(host, per_element);
  for (int32_t v : visits) EXPECT_EQ(v, 2);
}

}  // namespace
}  // namespace a8::emu

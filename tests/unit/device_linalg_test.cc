// The kernels of Det and a8.DetGrad (kernels/device/linalg.h): values against a long double
// reference (the Leibniz-free cofactor expansion of small matrices) on random data on the CPU
// backend (which runs the shared bodies through its host launch), exact singular cases, and the
// device backend (cuda-emu here, the GPU in a8_gpu_tests) against the CPU. The gradient rule is
// checked against finite differences in linalg_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"  // cpu::Cast, used by device_test_util.h
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/device_test_util.h"

namespace a8 {
namespace {

using testing::Count;
using B = plan::Buffer;
using Dims = std::vector<int64_t>;
using testing::PlanBuilder;

// det of the n x n row-major matrix `a` by cofactor expansion along the first row, in long
// double (exact for the small integers of the singular cases; the reference for random data).
long double RefDet(const std::vector<long double>& a, int64_t n) {
  if (n == 1) return a[0];
  long double det = 0;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<long double> minor;
    for (int64_t r = 1; r < n; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        if (c != j) minor.push_back(a[r * n + c]);
      }
    }
    det += (j % 2 == 0 ? 1 : -1) * a[j] * RefDet(minor, n - 1);
  }
  return det;
}

// The cofactor matrix of `a`.
std::vector<long double> RefCofactors(const std::vector<long double>& a, int64_t n) {
  std::vector<long double> out(n * n, 1);
  if (n == 1) return out;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      std::vector<long double> minor;
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < n; ++c) {
          if (r != i && c != j) minor.push_back(a[r * n + c]);
        }
      }
      out[i * n + j] = ((i + j) % 2 == 0 ? 1 : -1) * RefDet(minor, n - 1);
    }
  }
  return out;
}

PlanFile DetPlan(DType t, const Dims& xdims, bool grad) {
  const Dims ydims(xdims.begin(), xdims.end() - 2);
  PlanBuilder pb;
  const int x = pb.Buffer("x", t, xdims, B::INPUT);
  if (grad) {
    const int dy = pb.Buffer("dy", t, ydims, B::INPUT);
    const int dx = pb.Buffer("dx", t, xdims, B::OUTPUT);
    pb.Kernel("a8.DetGrad", {dy, x}, {dx});
  } else {
    const int y = pb.Buffer("y", t, ydims, B::OUTPUT);
    pb.Kernel("Det", {x}, {y});
  }
  return pb.Finish();
}

// Det and DetGrad of random batches on the CPU backend against the reference, in f32 and f64.
void CheckAgainstReference(DType t, const Dims& xdims, double rtol, uint32_t seed) {
  SCOPED_TRACE(std::string(DTypeName(t)) + " " + std::to_string(xdims.back()));
  const int64_t n = xdims.back(), nn = n * n, batch = Count(xdims) / nn;
  const std::vector<uint8_t> xb = testing::RandomBytes(t, Count(xdims), seed, -1, 1);
  const std::vector<uint8_t> dyb = testing::RandomBytes(t, batch, seed + 1, -1, 1);
  const std::vector<double> x = testing::AsDoubles(t, xb), dy = testing::AsDoubles(t, dyb);
  auto y = testing::AsDoubles(
      t, testing::RunOn(DetPlan(t, xdims, false), MakeCpuBackend(), {{"x", xb}})["y"]);
  auto dx = testing::AsDoubles(
      t, testing::RunOn(DetPlan(t, xdims, true), MakeCpuBackend(), {{"x", xb}, {"dy", dyb}})["dx"]);
  ASSERT_EQ(static_cast<int64_t>(y.size()), batch);
  ASSERT_EQ(static_cast<int64_t>(dx.size()), batch * nn);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<long double> a(x.begin() + b * nn, x.begin() + (b + 1) * nn);
    const long double want = RefDet(a, n);
    EXPECT_NEAR(y[b], static_cast<double>(want), rtol * (1 + std::fabs(double(want)))) << b;
    const std::vector<long double> cof = RefCofactors(a, n);
    for (int64_t k = 0; k < nn; ++k) {
      const double g = static_cast<double>(dy[b] * cof[k]);
      EXPECT_NEAR(dx[b * nn + k], g, rtol * (1 + std::fabs(g))) << b << " " << k;
    }
  }
}

TEST(DetKernelTest, MatchesLongDoubleReferenceOnRandomData) {
  uint32_t seed = 3;
  for (const Dims& d :
       {Dims{1, 1}, Dims{3, 2, 2}, Dims{2, 3, 3, 3}, Dims{4, 4}, Dims{2, 5, 5}, Dims{1, 7, 7}}) {
    CheckAgainstReference(DType::kF32, d, 2e-6, seed++);
    CheckAgainstReference(DType::kF64, d, 1e-13, seed++);
  }
}

// Singular matrices: det 0 exactly, and the gradient the exact cofactors (no NaN, no Inf): a
// rank-1 and a rank-2 3x3, and a zero column (the LU has no pivot in it).
TEST(DetKernelTest, SingularMatricesGiveZeroAndExactCofactors) {
  const std::vector<double> x = {1, 2, 3, 2, 4, 6, 3, 6, 9,    // rank 1
                                 1, 2, 3, 4, 5, 6, 5, 7, 9,    // rank 2: row 3 = row 1 + row 2
                                 0, 2, 3, 0, 5, 6, 0, 7, 10};  // a zero column
  const std::vector<double> dy = {1, 2, -1};
  auto y = testing::AsDoubles(
      DType::kF64, testing::RunOn(DetPlan(DType::kF64, {3, 3, 3}, false), MakeCpuBackend(),
                                  {{"x", testing::Bytes(x)}})["y"]);
  auto dx = testing::AsDoubles(
      DType::kF64, testing::RunOn(DetPlan(DType::kF64, {3, 3, 3}, true), MakeCpuBackend(),
                                  {{"x", testing::Bytes(x)}, {"dy", testing::Bytes(dy)}})["dx"]);
  for (int b = 0; b < 3; ++b) {
    EXPECT_NEAR(y[b], 0.0, 1e-12) << b;
    std::vector<long double> a(x.begin() + 9 * b, x.begin() + 9 * (b + 1));
    const std::vector<long double> cof = RefCofactors(a, 3);
    for (int k = 0; k < 9; ++k) {
      ASSERT_TRUE(std::isfinite(dx[9 * b + k]));
      EXPECT_NEAR(dx[9 * b + k], static_cast<double>(dy[b] * cof[k]), 1e-12) << b << " " << k;
    }
  }
  // The rank-2 matrix's cofactors are not all zero: its gradient points off the singular set.
  EXPECT_NE(dx[9], 0.0);
}

TEST(DetKernelTest, EmuMatchesCpuInEveryDtype) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(t));
    testing::ExpectEmuMatchesCpu(DetPlan(t, {2, 3, 4, 4}, false), {}, 0, 0);
    testing::ExpectEmuMatchesCpu(DetPlan(t, {2, 3, 4, 4}, true), {}, 0, 0);
  }
}

}  // namespace
}  // namespace a8

// The CPU backend's Softmax/LogSoftmax fast path (kernels/cpu/softmax.h) against float64.
#include <cmath>
#include <random>
#include <string>

#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/softmax.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using namespace testing;  // cpu::testing: Buffer, ExpectClose, ExpectRoundedExactly, FromValues,
                          // MakeBuffer, RandomBuffer, Values

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

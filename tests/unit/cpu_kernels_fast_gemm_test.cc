// The fast GEMM path (oneDNN, kernels/cpu/onednn_gemm.h) against the reference kernels on random
// data, within each dtype's tolerance (cpu_kernels_test_util.h, scaled by sum |a||b| per output:
// the two paths sum in different orders and each rounds its output once). Where this CPU has no
// fast oneDNN kernel for a dtype, the test skips and says so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/fused.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/low_precision_gemm.h"
#include "kernels/cpu/onednn_gemm.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using namespace testing;  // cpu::testing: Buffer, ExpectClose, MakeBuffer, RandomBuffer, Values

class FastGemmTest : public ::testing::TestWithParam<DType> {
 protected:
  // Skips (with the reason printed) when oneDNN declines this dtype on this CPU.
  void SetUp() override {
    internal::FastGemmArgs g;
    g.ab_type = g.c_type = GetParam();
    g.m = g.n = g.k = 64;
    Buffer a = MakeBuffer(GetParam(), {64, 64}), y = MakeBuffer(GetParam(), {64, 64});
    StatusOr<bool> ran = internal::FastGemm(g, a.data(), a.data(), y.data());
    ASSERT_TRUE(ran.ok()) << ran.status().message();
    if (!*ran) {
      GTEST_SKIP() << "oneDNN has no fast " << ElemName(GetParam())
                   << " matmul with this CPU and oneDNN version ("
                   << internal::FastGemmDescription() << ")";
    }
  }
  // The fast path ran (oneDNN or PackedGemm), except for f32 products below kMinFastF32Work,
  // which it declines in favour of the reference, as it does f16/bf16 ones off oneDNN
  // (RouteOf: PackedGemm, or the f32 kernel on copies).
  static void ExpectRan(DType t, int64_t work, int64_t executions_before) {
    const bool small_declined =
        t == DType::kF32 || internal::RouteOf(t) != internal::GemmRoute::kOneDnn;
    const bool want = !small_declined || work >= internal::kMinFastF32Work;
    EXPECT_EQ(internal::FastGemmExecutions() > executions_before, want)
        << (want ? "the fast path declined the product" : "a small f32 product ran in oneDNN");
  }
  std::mt19937_64 rng_{20};
};

// sum_l |a[i,l]| |b[l,j]| for row-major [m,k] x [k,n] (the tolerance's scale).
std::vector<double> Magnitudes(const Buffer& a, const Buffer& b, int64_t batch, int64_t m,
                               int64_t n, int64_t k, bool b_shared) {
  const std::vector<double> av = Values(a), bv = Values(b);
  std::vector<double> mag(static_cast<size_t>(batch * m * n));
  for (int64_t bi = 0; bi < batch; ++bi) {
    const double* pa = av.data() + bi * m * k;
    const double* pb = bv.data() + (b_shared ? 0 : bi * k * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) s += std::fabs(pa[i * k + l] * pb[l * n + j]);
        mag[(bi * m + i) * n + j] = s;
      }
  }
  return mag;
}

TEST_P(FastGemmTest, MatMulMatchesReference) {
  const DType t = GetParam();
  struct Case {
    Dims a, b;
    bool b_shared;
  };
  // Sizes that are not multiples of the tiles; batched with B shared (folded into M), and both
  // batched (attention's per-head products); one product large enough to be split over threads.
  const Case cases[] = {{{37, 70}, {70, 45}, true},
                        {{3, 17, 33}, {33, 29}, true},
                        {{4, 9, 16}, {4, 16, 12}, false},
                        {{256, 320}, {320, 200}, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "a [" << c.a.size() << "-d], k " << c.a.back());
    Buffer a = RandomBuffer(t, c.a, rng_), b = RandomBuffer(t, c.b, rng_);
    const Dims out = *MatMulOutputDims(c.a, c.b);
    Buffer ref = MakeBuffer(t, out), fast = MakeBuffer(t, out);
    ASSERT_TRUE(MatMul(t, c.a, a.data(), c.b, b.data(), ref.data()).ok());
    const int64_t before = internal::FastGemmExecutions();
    {
      ScopedKernelMode mode(KernelMode::kFast);
      ASSERT_TRUE(MatMul(t, c.a, a.data(), c.b, b.data(), fast.data()).ok());
    }
    const int64_t k = c.a.back(), n = c.b.back(), m = c.a[c.a.size() - 2];
    const int64_t batch = NumElements(out) / (m * n);
    ExpectRan(t, batch * m * n * k, before);
    const std::vector<double> mag = Magnitudes(a, b, batch, m, n, k, c.b_shared);
    ExpectClose(fast, Values(ref), 2 * testing::ToleranceFor(t), &mag);
  }
}

TEST_P(FastGemmTest, GemmTransposesAlphaAndBiasMatchReference) {
  const DType t = GetParam();
  // Variants 0-3 small (one call), 4-7 large enough to be split into column slices over two or
  // more threads (slices of a transposed A or B, a last row slice shorter than the others, and
  // slices of a row bias included).
  for (int variant = 0; variant < 8; ++variant) {
    const bool large = variant >= 4;
    const int64_t m = large ? 100 : 33, n = large ? 300 : 70, k = large ? 160 : 41;
    GemmParams p;
    p.dtype = t;
    p.m = m;
    p.n = n;
    p.k = k;
    p.trans_a = (variant & 1) != 0;
    p.trans_b = (variant & 2) != 0;
    p.alpha = variant % 4 == 3 ? 0.5f : 1.0f;
    p.c_dims = variant % 4 == 2 ? Dims{m, 1} : variant == 5 ? Dims{m, n} : Dims{n};
    SCOPED_TRACE(::testing::Message() << "variant " << variant);
    Buffer a = RandomBuffer(t, p.trans_a ? Dims{k, m} : Dims{m, k}, rng_);
    Buffer b = RandomBuffer(t, p.trans_b ? Dims{n, k} : Dims{k, n}, rng_);
    Buffer c = RandomBuffer(t, p.c_dims, rng_);
    Buffer ref = MakeBuffer(t, {m, n}), fast = MakeBuffer(t, {m, n});
    ASSERT_TRUE(Gemm(p, a.data(), b.data(), c.data(), ref.data()).ok());
    const int64_t before = internal::FastGemmExecutions();
    {
      ScopedKernelMode mode(KernelMode::kFast);
      ASSERT_TRUE(Gemm(p, a.data(), b.data(), c.data(), fast.data()).ok());
    }
    ExpectRan(t, m * n * k, before);
    // Scale: k (the mean of sum |a||b| for values uniform in [-2, 2)) plus |c| < 2: room for
    // any summation order and one rounding, tight against a wrong transpose, slice or bias
    // (errors of the order of the results, ~sqrt(k)).
    std::vector<double> mag(static_cast<size_t>(m * n), k + 2.0);
    ExpectClose(fast, Values(ref), 2 * testing::ToleranceFor(t), &mag);
  }
}

TEST_P(FastGemmTest, FusedMatMulMatchesReference) {
  const DType t = GetParam();
  const FusedMatMulParams p = FusedMatMulOf(t, 40, 24, 56, kEpilogueBias);
  Buffer a = RandomBuffer(t, {p.m, p.k}, rng_), b = RandomBuffer(t, {p.k, p.n}, rng_);
  Buffer bias = RandomBuffer(t, {p.n}, rng_);
  Buffer ref = MakeBuffer(t, {p.m, p.n}), fast = MakeBuffer(t, {p.m, p.n});
  ASSERT_TRUE(FusedMatMul(p, a.data(), b.data(), bias.data(), nullptr, ref.data(), nullptr).ok());
  const int64_t before = internal::FastGemmExecutions();
  {
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(
        FusedMatMul(p, a.data(), b.data(), bias.data(), nullptr, fast.data(), nullptr).ok());
  }
  ExpectRan(t, p.m * p.n * p.k, before);
  std::vector<double> mag = Magnitudes(a, b, 1, p.m, p.n, p.k, true);
  for (double& v : mag) v += 2.0;
  ExpectClose(fast, Values(ref), 2 * testing::ToleranceFor(t), &mag);
}

// Small f16 or bf16 products batched on both sides, where oneDNN does not multiply the dtype
// (too small for PackedGemm or the copies to take): each matrix is widened and multiplied on its
// own (gemm.cc BatchedGemmPerMatrix), and the bits are those of the fast f32 product of the
// widened operands rounded once (widening is exact). Shapes: attention's heads, odd sizes, and A
// shared against a batched B.
class FastHalfMatMulTest : public ::testing::TestWithParam<DType> {};

TEST_P(FastHalfMatMulTest, BatchedProductsAreTheF32ProductRoundedOnce) {
  const DType t = GetParam();
  if (internal::RouteOf(t) == internal::GemmRoute::kOneDnn) {
    GTEST_SKIP() << "oneDNN multiplies " << ElemName(t) << " itself on this CPU ("
                 << internal::FastGemmDescription() << ")";
  }
  std::mt19937_64 rng(31);
  const Dims cases[][2] = {
      {{32, 4, 16, 16}, {32, 4, 16, 16}}, {{3, 7, 5}, {3, 5, 9}}, {{1, 16, 8}, {6, 8, 4}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << "batch of A " << c[0][0] << ", of B " << c[1][0]);
    const Dims out = *MatMulOutputDims(c[0], c[1]);
    const int64_t n = NumElements(out);
    Buffer a = RandomBuffer(t, c[0], rng), b = RandomBuffer(t, c[1], rng);
    Buffer y = MakeBuffer(t, out), want = MakeBuffer(t, out);
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(MatMul(t, c[0], a.data(), c[1], b.data(), y.data()).ok());
    const std::vector<float> a32 = WidenToF32(t, a.data(), a.size());
    const std::vector<float> b32 = WidenToF32(t, b.data(), b.size());
    std::vector<float> y32(static_cast<size_t>(n));
    ASSERT_TRUE(MatMul(DType::kF32, c[0], a32.data(), c[1], b32.data(), y32.data()).ok());
    NarrowFromF32(t, y32.data(), n, want.data());
    EXPECT_EQ(y.bytes, want.bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FastHalfMatMulTest, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(ElemName(info.param)); });

INSTANTIATE_TEST_SUITE_P(Dtypes, FastGemmTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(ElemName(info.param)); });

// A8_CPU_BF16_ONEDNN decides the bf16 route instead of the timing (low_precision_gemm.h): 1
// takes oneDNN's bf16 kernel wherever oneDNN has one, 0 never does, and the banner says which.
// ctest runs this twice, with each value (tests/CMakeLists.txt); elsewhere it skips.
TEST(Bf16RouteTest, FollowsTheEnvironment) {
  const char* env = std::getenv("A8_CPU_BF16_ONEDNN");
  if (env == nullptr || (std::string(env) != "0" && std::string(env) != "1")) {
    GTEST_SKIP() << "run by ctest with A8_CPU_BF16_ONEDNN=0 and =1";
  }
  if (!internal::OneDnnMultiplies(DType::kBF16)) {
    GTEST_SKIP() << "oneDNN has no bf16 matmul on this CPU (" << internal::FastGemmDescription()
                 << ")";
  }
  const bool on = std::string(env) == "1";
  EXPECT_EQ(internal::OneDnnBf16Pays(), on);
  EXPECT_EQ(internal::RouteOf(DType::kBF16) == internal::GemmRoute::kOneDnn, on);
  const std::string banner = internal::FastGemmDescription();
  EXPECT_EQ(banner.find("A8_CPU_BF16_ONEDNN=0") != std::string::npos, !on) << banner;
}

TEST(FastGemmArgsTest, BadArgumentsAreErrors) {
  internal::FastGemmArgs g;
  g.ab_type = DType::kF64;
  g.m = g.n = g.k = 4;
  float x[16] = {};
  EXPECT_FALSE(internal::FastGemm(g, x, x, x).ok());
  g.ab_type = DType::kF32;
  g.m = 0;
  EXPECT_FALSE(internal::FastGemm(g, x, x, x).ok());
}

// The mode is the calling thread's and is restored by the scope.
TEST(KernelModeTest, ScopedModeRestores) {
  EXPECT_EQ(CurrentKernelMode(), KernelMode::kReference);
  {
    ScopedKernelMode fast(KernelMode::kFast);
    EXPECT_TRUE(internal::FastGemmEnabled());
  }
  EXPECT_FALSE(internal::FastGemmEnabled());
}

}  // namespace
}  // namespace a8::cpu

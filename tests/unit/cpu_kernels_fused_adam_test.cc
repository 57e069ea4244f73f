// a8.AdamUpdate with what fuse-optimizer folds into it (kernels/cpu/optim.h AdamExtras): the loss
// scale, unscaled first, and the f16/bf16 working copy of the new f32 parameter. In both kernel
// modes the fused update must give, bit for bit, what the unfused chain gives:
// a8.UnscaleCheckFinite, then the update on its f32 gradient, then a Cast of the new parameter.
// And a8.CheckFinite (UnscaleCheckFinite with no outputs) must find every Inf and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/optim.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using testing::Buffer;
using testing::MakeBuffer;
using testing::RandomBuffer;

using FusedAdamCase = std::tuple<DType, DType>;  // (gradient, working copy)

class FusedAdamTest : public ::testing::TestWithParam<FusedAdamCase> {
 protected:
  std::mt19937_64 rng_{2026};
};

TEST_P(FusedAdamTest, IsTheUnfusedChainBitForBit) {
  const auto [gt, ct] = GetParam();
  const int64_t n = 3 * kF32Block + 37;  // block and vector tails
  // A scale that is not a power of two: 1/scale rounds, so g * (1/scale) does too.
  const float scale = 3000.0f;
  for (KernelMode mode : {KernelMode::kReference, KernelMode::kFast}) {
    for (float applied : {1.0f, 0.0f}) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(::testing::Message() << (mode == KernelMode::kFast ? "fast" : "reference")
                                          << " applied=" << applied << " in_place=" << in_place);
        const ScopedKernelMode scoped(mode);
        const float ctl[kCtlSize] = {1e-3f, 0.5f, applied, 3.0f, 0.0f};
        AdamParams p;
        p.decoupled = true;
        p.weight_decay = 0.01f;
        const Buffer g = RandomBuffer(gt, {n}, rng_, -3000, 3000);
        const Buffer x = RandomBuffer(DType::kF32, {n}, rng_, -1, 1);
        const Buffer m = RandomBuffer(DType::kF32, {n}, rng_, -0.1, 0.1);
        const Buffer v = RandomBuffer(DType::kF32, {n}, rng_, 0, 0.01);

        // Unfused: unscale into an f32 gradient, update, then Cast the new parameter.
        Buffer unscaled = MakeBuffer(DType::kF32, {n});
        float found = -1;
        ASSERT_TRUE(UnscaleCheckFinite(scale, {gt}, {n}, {g.data()},
                                       {static_cast<float*>(unscaled.data())}, &found)
                        .ok());
        EXPECT_EQ(found, 0.0f);
        Buffer want_x = x, want_m = m, want_v = v, want_copy = MakeBuffer(ct, {n});
        ASSERT_TRUE(AdamUpdate(p, DType::kF32, DType::kF32, n, ctl, x.data(), unscaled.data(),
                               m.data(), v.data(), want_x.data(), want_m.data(), want_v.data())
                        .ok());
        ASSERT_TRUE(Cast(DType::kF32, ct, n, want_x.data(), want_copy.data()).ok());

        // Fused: the scaled gradient and the scale in, the working copy out.
        Buffer got_x = x, got_m = m, got_v = v, got_copy = MakeBuffer(ct, {n});
        Buffer out_x = MakeBuffer(DType::kF32, {n}), out_m = out_x, out_v = out_x;
        void* xo = in_place ? got_x.data() : out_x.data();
        void* mo = in_place ? got_m.data() : out_m.data();
        void* vo = in_place ? got_v.data() : out_v.data();
        AdamExtras extras;
        extras.scale = &scale;
        extras.copy_dtype = ct;
        extras.copy = got_copy.data();
        ASSERT_TRUE(AdamUpdate(p, DType::kF32, gt, n, ctl, got_x.data(), g.data(), got_m.data(),
                               got_v.data(), xo, mo, vo, extras)
                        .ok());
        if (!in_place) {
          got_x = out_x;
          got_m = out_m;
          got_v = out_v;
        }
        EXPECT_EQ(got_x.bytes, want_x.bytes);
        EXPECT_EQ(got_m.bytes, want_m.bytes);
        EXPECT_EQ(got_v.bytes, want_v.bytes);
        EXPECT_EQ(got_copy.bytes, want_copy.bytes);
        // Not a comparison of two no-ops: an applied update moves the parameters, a skipped one
        // keeps them, and the copy is the parameter rounded either way.
        EXPECT_EQ(got_x.bytes != x.bytes, applied != 0.0f);
        EXPECT_NE(got_copy.bytes, MakeBuffer(ct, {n}).bytes);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GradAndCopyDtypes, FusedAdamTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF16,
                                                              DType::kBF16),
                                            ::testing::Values(DType::kF16, DType::kBF16)),
                         [](const auto& info) {
                           return std::string(ElemName(std::get<0>(info.param))) + "_copy_" +
                                  ElemName(std::get<1>(info.param));
                         });

TEST(FusedAdamTest, ScaleAloneAndAnF64Gradient) {
  // No working copy; an f64 parameter and gradient: the unscale's product is in double.
  std::mt19937_64 rng(7);
  const int64_t n = 101;
  const float scale = 768.0f, ctl[kCtlSize] = {1e-2f, 1.0f, 1.0f, 1.0f, 0.0f};
  const Buffer g = RandomBuffer(DType::kF64, {n}, rng, -500, 500);
  const Buffer x = RandomBuffer(DType::kF64, {n}, rng, -1, 1);
  const Buffer m = MakeBuffer(DType::kF64, {n}), v = m;
  Buffer unscaled = MakeBuffer(DType::kF32, {n}), as_f64 = MakeBuffer(DType::kF64, {n});
  float found = -1;
  ASSERT_TRUE(UnscaleCheckFinite(scale, {DType::kF64}, {n}, {g.data()},
                                 {static_cast<float*>(unscaled.data())}, &found)
                  .ok());
  ASSERT_TRUE(Cast(DType::kF32, DType::kF64, n, unscaled.data(), as_f64.data()).ok());
  const AdamParams p;
  Buffer want_x = x, want_m = m, want_v = v;
  ASSERT_TRUE(AdamUpdate(p, DType::kF64, DType::kF64, n, ctl, x.data(), as_f64.data(), m.data(),
                         v.data(), want_x.data(), want_m.data(), want_v.data())
                  .ok());
  Buffer got_x = x, got_m = m, got_v = v;
  AdamExtras extras;
  extras.scale = &scale;
  ASSERT_TRUE(AdamUpdate(p, DType::kF64, DType::kF64, n, ctl, x.data(), g.data(), m.data(),
                         v.data(), got_x.data(), got_m.data(), got_v.data(), extras)
                  .ok());
  EXPECT_EQ(got_x.bytes, want_x.bytes);
  EXPECT_EQ(got_m.bytes, want_m.bytes);
  EXPECT_EQ(got_v.bytes, want_v.bytes);
  EXPECT_NE(got_x.bytes, x.bytes);
}

TEST(FusedAdamTest, RejectsAWorkingCopyOfANonF32Parameter) {
  const int64_t n = 4;
  const float ctl[kCtlSize] = {1e-2f, 1.0f, 1.0f, 1.0f, 0.0f};
  Buffer x = MakeBuffer(DType::kF64, {n}), m = x, v = x, copy = MakeBuffer(DType::kF16, {n});
  AdamExtras extras;
  extras.copy_dtype = DType::kF16;
  extras.copy = copy.data();
  const Status s = AdamUpdate(AdamParams{}, DType::kF64, DType::kF64, n, ctl, x.data(), x.data(),
                              m.data(), v.data(), x.data(), m.data(), v.data(), extras);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("a8.AdamUpdate: a working copy of f64 is f16"), std::string::npos)
      << s.message();
}

// a8.CheckFinite: UnscaleCheckFinite with no outputs. Every dtype, sizes past the fixed chunk
// and the vector width, an Inf or NaN at the first, a middle and the last element.
TEST(CheckFiniteTest, FindsEveryInfAndNaNAndWritesNothing) {
  std::mt19937_64 rng(11);
  const int64_t n = 3 * 16384 + 5;
  const double inf = std::numeric_limits<double>::infinity();
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    for (KernelMode mode : {KernelMode::kReference, KernelMode::kFast}) {
      const ScopedKernelMode scoped(mode);
      const Buffer clean = RandomBuffer(t, {n}, rng, -60000, 60000);
      const Buffer other = RandomBuffer(t, {17}, rng);
      float found = -1;
      ASSERT_TRUE(UnscaleCheckFinite(1.0f, {t, t}, {17, n}, {other.data(), clean.data()}, {},
                                     &found)
                      .ok());
      EXPECT_EQ(found, 0.0f) << ElemName(t);
      for (int64_t at : {int64_t{0}, n / 2 + 3, n - 1}) {
        for (double bad : {inf, -inf, std::nan("")}) {
          Buffer g = clean;
          testing::SetValue(g, at, bad);
          const Buffer before = g;
          found = -1;
          ASSERT_TRUE(UnscaleCheckFinite(1.0f, {t, t}, {17, n}, {other.data(), g.data()}, {},
                                         &found)
                          .ok());
          EXPECT_EQ(found, 1.0f) << ElemName(t) << " at " << at << " value " << bad;
          EXPECT_EQ(g.bytes, before.bytes);
        }
      }
    }
  }
}

}  // namespace
}  // namespace a8::cpu

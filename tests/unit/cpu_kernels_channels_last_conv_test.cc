// The convolution with NHWC operands (FusedConvChannelsLast, kernels/cpu/conv.h: the CPU
// backend's channels-last activations) against FusedConv on the NCHW operands in the fast mode:
// the same bits, in every combination of X, Y and Z layouts and epilogue. Where this CPU's
// oneDNN does not take a case, the test says so and skips it.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/onednn_conv.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using internal::ConvLayouts;
using testing::Buffer;
using testing::Conv2dCase;
using testing::MakeBuffer;
using testing::RandomBuffer;

TEST(ChannelsLastConvTest, MatchesTheNchwFastPathBitForBit) {
  ScopedKernelMode fast(KernelMode::kFast);
  // The example CNN's block convolutions (16 channels, 8x8, and 16 -> 32 at 4x4), an odd batch
  // (the last part of the batch split is shorter) and a strided one.
  const Conv2dCase shapes[] = {{32, 16, 8, 8, 16, 3, 1, 1, 1, 1, true},
                               {32, 16, 4, 4, 32, 3, 1, 1, 1, 1, true},
                               {5, 32, 7, 7, 16, 3, 1, 1, 1, 1, false},
                               {3, 16, 9, 9, 24, 3, 2, 1, 1, 1, true}};
  std::mt19937_64 rng(7);
  int ran = 0;
  for (const Conv2dCase& sh : shapes) {
    const ConvParams p = testing::ParamsOf(sh, DType::kF32);
    StatusOr<Dims> out = ConvOutputSpatial(p, false);
    ASSERT_TRUE(out.ok());
    const Dims x_dims = {sh.n, sh.c, sh.h, sh.w}, y_dims = {sh.n, sh.m, (*out)[0], (*out)[1]};
    const Buffer x = RandomBuffer(DType::kF32, x_dims, rng);
    const Buffer w = RandomBuffer(DType::kF32, {sh.m, sh.c, sh.k, sh.k}, rng);
    const Buffer b = RandomBuffer(DType::kF32, {sh.m}, rng),
                 z = RandomBuffer(DType::kF32, y_dims, rng);
    const Buffer x_nhwc = testing::ToNhwc(x);
    const Buffer z_nhwc = testing::ToNhwc(z);
    for (int form = 0; form < 4; ++form) {  // Conv; Relu; + Z; + Z then Relu
      const bool relu = form % 2 == 1, add = form >= 2;
      Buffer want = MakeBuffer(DType::kF32, y_dims);
      ASSERT_TRUE(FusedConv(p, relu, x.data(), w.data(), sh.bias ? b.data() : nullptr,
                            add ? z.data() : nullptr, want.data())
                      .ok());
      for (int bits = 1; bits < 8; ++bits) {
        const ConvLayouts l{(bits & 1) != 0, (bits & 2) != 0, add && (bits & 4) != 0};
        if (!add && (bits & 4) != 0) continue;
        SCOPED_TRACE(::testing::Message() << "n" << sh.n << " c" << sh.c << " " << sh.h << "x"
                                          << sh.w << " m" << sh.m << " s" << sh.stride << " form "
                                          << form << " x/y/z nhwc " << l.x << l.y << l.z);
        if (!FusedConvChannelsLastTakes(p, l, sh.bias, relu, add)) {
          std::printf("[  SKIPPED ] oneDNN does not take this case here\n");
          continue;
        }
        Buffer got = MakeBuffer(DType::kF32, y_dims);
        ASSERT_TRUE(FusedConvChannelsLast(p, l, relu, l.x ? x_nhwc.data() : x.data(), w.data(),
                                          sh.bias ? b.data() : nullptr,
                                          !add  ? nullptr
                                          : l.z ? z_nhwc.data()
                                                : z.data(),
                                          got.data())
                        .ok());
        EXPECT_EQ((l.y ? testing::FromNhwc(got) : got).bytes, want.bytes);
        ++ran;
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "this CPU's oneDNN takes none of the cases in NHWC";
}

// Only f32, and only convolutions the fast mode gives to oneDNN anyway.
TEST(ChannelsLastConvTest, TakesOnlyF32ConvolutionsThatGoToOneDnn) {
  ScopedKernelMode fast(KernelMode::kFast);
  const ConvLayouts all{true, true, false};
  for (DType t : {DType::kF16, DType::kBF16, DType::kF64}) {
    EXPECT_FALSE(FusedConvChannelsLastTakes(
        testing::ParamsOf(Conv2dCase{32, 16, 8, 8, 16, 3, 1, 1, 1, 1, true}, t), all, true, false,
        false))
        << ElemName(t);
  }
  // One input channel: below the fast path's channel minimum (the direct kernel's).
  EXPECT_FALSE(FusedConvChannelsLastTakes(
      testing::ParamsOf(Conv2dCase{32, 1, 8, 8, 16, 3, 1, 1, 1, 1, true}, DType::kF32), all, true,
      false, false));
  // A planned NHWC convolution that oneDNN then declines is an error, not a silent NCHW run.
  const ConvParams f16 =
      testing::ParamsOf(Conv2dCase{2, 16, 8, 8, 16, 3, 1, 1, 1, 1, false}, DType::kF16);
  Buffer x = MakeBuffer(DType::kF16, {2, 16, 8, 8}), w = MakeBuffer(DType::kF16, {16, 16, 3, 3});
  Buffer y = MakeBuffer(DType::kF16, {2, 16, 8, 8});
  const Status s =
      FusedConvChannelsLast(f16, all, false, x.data(), w.data(), nullptr, nullptr, y.data());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NHWC"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace a8::cpu

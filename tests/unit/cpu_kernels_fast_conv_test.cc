// The fast forward convolution and its gradients (oneDNN, kernels/cpu/onednn_conv.h; f16 through
// an f32 primitive, blocked_convert.h) against the reference kernels on random data, within each
// dtype's tolerance scaled by the number of products summed per output. Where this CPU has no
// fast oneDNN convolution for a dtype, the test skips and says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_direct.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/grad_conv_pool.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_gemm.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using testing::Buffer;
using testing::Conv2dCase;
using testing::ExpectClose;
using testing::GetValue;
using testing::MakeBuffer;
using testing::RandomBuffer;
using testing::Values;

class FastConvTest : public ::testing::TestWithParam<DType> {
 protected:
  static ConvParams Params(DType t, const Conv2dCase& c) { return testing::ParamsOf(c, t); }
  // Runs the case both ways; returns false (nothing checked) when the fast path declined it.
  bool Check(DType t, const Conv2dCase& c) {
    const ConvParams p = Params(t, c);
    StatusOr<Dims> out = ConvOutputSpatial(p, false);
    EXPECT_TRUE(out.ok());
    if (!out.ok()) return false;
    Buffer x = RandomBuffer(t, {c.n, c.c, c.h, c.w}, rng_);
    Buffer w = RandomBuffer(t, {c.m, c.c, c.k, c.k}, rng_);
    Buffer b = RandomBuffer(t, {c.m}, rng_);
    const Dims y_dims = {c.n, c.m, (*out)[0], (*out)[1]};
    Buffer ref = MakeBuffer(t, y_dims), fast = MakeBuffer(t, y_dims);
    const void* bias = c.bias ? b.data() : nullptr;
    EXPECT_TRUE(Conv(p, x.data(), w.data(), bias, ref.data()).ok());
    const int64_t before = internal::FastConvExecutions();
    {
      ScopedKernelMode mode(KernelMode::kFast);
      EXPECT_TRUE(Conv(p, x.data(), w.data(), bias, fast.data()).ok());
    }
    if (internal::FastConvExecutions() == before) return false;
    // Scale: C k^2 products of values uniform in [-2, 2) (mean |a||b| 1) plus |bias| < 2.
    std::vector<double> mag(static_cast<size_t>(fast.size()), c.c * c.k * c.k + 2.0);
    ExpectClose(fast, Values(ref), 2 * testing::ToleranceFor(t), &mag);
    return true;
  }
  std::mt19937_64 rng_{23};
};

TEST_P(FastConvTest, MatchesReference) {
  const DType t = GetParam();
  // 3x3 pad 1 (ResNet's), stride 2 with uneven pads, dilation 2, 1x1, odd sizes, a batch of 5
  // (split over threads into unequal parts), with and without bias.
  const Conv2dCase cases[] = {{2, 16, 9, 9, 24, 3, 1, 1, 1, 1, true},
                              {5, 16, 8, 11, 16, 3, 2, 1, 1, 0, false},
                              {3, 32, 10, 10, 16, 3, 1, 2, 2, 2, true},
                              {4, 24, 7, 7, 40, 1, 1, 1, 0, 0, true}};
  int ran = 0;
  for (const Conv2dCase& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "case n" << c.n << " c" << c.c << " " << c.h << "x" << c.w << " m" << c.m
                 << " k" << c.k << " s" << c.stride << " d" << c.dilation);
    ran += Check(t, c) ? 1 : 0;
  }
  if (ran == 0) {
    GTEST_SKIP() << "oneDNN has no fast " << ElemName(t)
                 << " convolution with this CPU and oneDNN version ("
                 << internal::FastGemmDescription() << ")";
  }
  EXPECT_EQ(ran, 4) << "the fast path declined some convolutions it ran others of";
}

// dX (ConvTranspose of dY with the forward's attributes, as autodiff emits it) and dW
// (a8.ConvGradFilter) against the reference, on shapes whose ConvTranspose needs no
// output_padding.
TEST_P(FastConvTest, GradientsMatchReference) {
  const DType t = GetParam();
  const Conv2dCase cases[] = {{2, 16, 9, 9, 24, 3, 1, 1, 1, 1, false},
                              {5, 16, 9, 9, 16, 3, 2, 1, 1, 1, false},
                              {3, 32, 10, 10, 16, 3, 1, 2, 2, 2, false}};
  int ran = 0;
  for (const Conv2dCase& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "case n" << c.n << " c" << c.c << " s" << c.stride << " d" << c.dilation);
    const ConvParams p = Params(t, c);
    StatusOr<Dims> out = ConvOutputSpatial(p, false);
    ASSERT_TRUE(out.ok());
    ConvParams pt = p;  // ConvTranspose: dY [N, M, out] -> dX [N, C, in]
    pt.in_channels = c.m;
    pt.out_channels = c.c;
    pt.in_spatial = *out;
    StatusOr<Dims> back = ConvOutputSpatial(pt, true);
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(*back, (Dims{c.h, c.w})) << "a case that needs output_padding";
    Buffer x = RandomBuffer(t, {c.n, c.c, c.h, c.w}, rng_);
    Buffer w = RandomBuffer(t, {c.m, c.c, c.k, c.k}, rng_);
    Buffer dy = RandomBuffer(t, {c.n, c.m, (*out)[0], (*out)[1]}, rng_);
    Buffer dx_ref = MakeBuffer(t, {c.n, c.c, c.h, c.w}), dx = dx_ref;
    Buffer dw_ref = MakeBuffer(t, {c.m, c.c, c.k, c.k}), dw = dw_ref;
    ASSERT_TRUE(ConvTranspose(pt, dy.data(), w.data(), nullptr, dx_ref.data()).ok());
    ASSERT_TRUE(ConvGradFilter(p, dy.data(), x.data(), dw_ref.data()).ok());
    const int64_t before = internal::FastConvExecutions();
    {
      ScopedKernelMode mode(KernelMode::kFast);
      ASSERT_TRUE(ConvTranspose(pt, dy.data(), w.data(), nullptr, dx.data()).ok());
      ASSERT_TRUE(ConvGradFilter(p, dy.data(), x.data(), dw.data()).ok());
    }
    const int64_t executed = internal::FastConvExecutions() - before;
    if (executed == 0) continue;
    EXPECT_GE(executed, 2) << "one of the two gradients was declined";
    ++ran;
    // Scales: dX sums M k^2 products at most; dW sums N out products (with several threads,
    // as one f32 sum per part of the batch).
    std::vector<double> mag_x(static_cast<size_t>(dx.size()), c.m * c.k * c.k);
    std::vector<double> mag_w(static_cast<size_t>(dw.size()), c.n * (*out)[0] * (*out)[1]);
    ExpectClose(dx, Values(dx_ref), 2 * testing::ToleranceFor(t), &mag_x);
    ExpectClose(dw, Values(dw_ref), 2 * testing::ToleranceFor(t), &mag_w);
  }
  if (ran == 0) {
    GTEST_SKIP() << "oneDNN has no fast " << ElemName(t)
                 << " convolution gradients with this CPU and oneDNN version ("
                 << internal::FastGemmDescription() << ")";
  }
  EXPECT_EQ(ran, 3);
}

// ConvTranspose with output_padding (autodiff's data gradient of a stride-2 convolution whose
// floor dropped a row): the fast path runs it as a convolution with lower end pads.
TEST_P(FastConvTest, TransposeWithOutputPaddingMatchesReference) {
  const DType t = GetParam();
  struct Case {
    int64_t stride, pad_begin, pad_end, output_padding;
  };
  // (2, 1, 1, 1): ResNet's downsampling gradient; (2, 1, 0, 1): end pad below output_padding;
  // (3, 0, 0, 2).
  const Case cases[] = {{2, 1, 1, 1}, {2, 1, 0, 1}, {3, 0, 0, 2}};
  int ran = 0;
  for (const Case& k : cases) {
    SCOPED_TRACE(::testing::Message() << "stride " << k.stride << " pads " << k.pad_begin << "/"
                                      << k.pad_end << " output_padding " << k.output_padding);
    ConvParams pt;  // dY [3, 24, 7, 6] -> dX [3, 16, ...]
    pt.dtype = t;
    pt.batch = 3;
    pt.in_channels = 24;
    pt.out_channels = 16;
    pt.in_spatial = {7, 6};
    pt.kernel = {3, 3};
    pt.strides = {k.stride, k.stride};
    pt.pads = {k.pad_begin, k.pad_begin, k.pad_end, k.pad_end};
    pt.output_padding = {k.output_padding, k.output_padding};
    StatusOr<Dims> out = ConvOutputSpatial(pt, true);
    ASSERT_TRUE(out.ok());
    Buffer dy = RandomBuffer(t, {3, 24, 7, 6}, rng_), w = RandomBuffer(t, {24, 16, 3, 3}, rng_);
    Buffer ref = MakeBuffer(t, {3, 16, (*out)[0], (*out)[1]}), fast = ref;
    ASSERT_TRUE(ConvTranspose(pt, dy.data(), w.data(), nullptr, ref.data()).ok());
    const int64_t before = internal::FastConvExecutions();
    {
      ScopedKernelMode mode(KernelMode::kFast);
      ASSERT_TRUE(ConvTranspose(pt, dy.data(), w.data(), nullptr, fast.data()).ok());
    }
    if (internal::FastConvExecutions() == before) continue;
    ++ran;
    std::vector<double> mag(static_cast<size_t>(fast.size()), 24 * 9);
    ExpectClose(fast, Values(ref), 2 * testing::ToleranceFor(t), &mag);
  }
  if (ran == 0) {
    GTEST_SKIP() << "oneDNN has no fast " << ElemName(t) << " convolution data gradient here ("
                 << internal::FastGemmDescription() << ")";
  }
  EXPECT_EQ(ran, 3);
}

// The weight gradient takes any channel count (a ResNet stem's 3), unlike the forward.
TEST_P(FastConvTest, GradFilterOfFewChannelsMatchesReference) {
  const DType t = GetParam();
  const Conv2dCase c{3, 3, 12, 12, 16, 3, 1, 1, 1, 1, false};
  const ConvParams p = Params(t, c);
  Buffer x = RandomBuffer(t, {3, 3, 12, 12}, rng_), dy = RandomBuffer(t, {3, 16, 12, 12}, rng_);
  Buffer ref = MakeBuffer(t, {16, 3, 3, 3}), fast = ref;
  ASSERT_TRUE(ConvGradFilter(p, dy.data(), x.data(), ref.data()).ok());
  const int64_t before = internal::FastConvExecutions();
  {
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(ConvGradFilter(p, dy.data(), x.data(), fast.data()).ok());
  }
  if (internal::FastConvExecutions() == before) {
    GTEST_SKIP() << "no fast " << ElemName(t) << " weight gradient here ("
                 << internal::FastGemmDescription() << ")";
  }
  std::vector<double> mag(static_cast<size_t>(fast.size()), 3 * 12 * 12);
  ExpectClose(fast, Values(ref), 2 * testing::ToleranceFor(t), &mag);
}

TEST_P(FastConvTest, FewChannelsInF32AndGroupsStayOnTheReference) {
  const DType t = GetParam();
  ConvParams p = Params(t, {2, 3, 8, 8, 8, 3, 1, 1, 1, 1, false});
  Buffer x = RandomBuffer(t, {2, 3, 8, 8}, rng_), w = RandomBuffer(t, {8, 3, 3, 3}, rng_);
  Buffer y = MakeBuffer(t, {2, 8, 8, 8});
  const int64_t before = internal::FastConvExecutions();
  ScopedKernelMode mode(KernelMode::kFast);
  ASSERT_TRUE(Conv(p, x.data(), w.data(), nullptr, y.data()).ok());
  if (t != DType::kBF16) {  // f16 runs an f32 primitive: f32's rule
    EXPECT_EQ(internal::FastConvExecutions(), before);
  }
  p = Params(t, {2, 16, 8, 8, 16, 3, 1, 1, 1, 1, false});
  p.group = 2;
  Buffer xg = RandomBuffer(t, {2, 16, 8, 8}, rng_), wg = RandomBuffer(t, {16, 8, 3, 3}, rng_);
  Buffer yg = MakeBuffer(t, {2, 16, 8, 8});
  const int64_t before_groups = internal::FastConvExecutions();
  ASSERT_TRUE(Conv(p, xg.data(), wg.data(), nullptr, yg.data()).ok());
  EXPECT_EQ(internal::FastConvExecutions(), before_groups);
}

// Where the direct convolution runs in row mode (output rows a whole number of its full-width
// vectors: the example CNN's 8x8 with AVX2, 16x16 with AVX-512), the fast mode takes it before
// oneDNN in f32 and f16 (conv_direct.h): no oneDNN call and the reference kernels' bits. bf16
// keeps oneDNN's kernels where the CPU has them and they pay, and is computed as f16 is
// elsewhere.
TEST_P(FastConvTest, RowModeDirectConvolutionComesBeforeOneDnn) {
  const DType t = GetParam();
  int64_t hw = 8;
  ConvParams p;
  internal::DirectConv d;
  for (int64_t size : {8, 16}) {  // the first that runs in row mode here
    hw = size;
    p = Params(t, {3, 16, hw, hw, 16, 3, 1, 1, 1, 1, true});
    ASSERT_TRUE(internal::MakeDirectConv(p, {hw, hw}, &d));
    if (internal::DirectConvRowMode(d)) break;
  }
  if ((t == DType::kBF16 && internal::OneDnnConvolvesBf16()) || !internal::DirectConvRowMode(d)) {
    GTEST_SKIP() << "bf16 runs oneDNN's bf16 kernels on this CPU; f32, f16 and bf16 without them "
                    "run the direct path only where its rows are whole vectors";
  }
  Buffer x = RandomBuffer(t, {3, 16, hw, hw}, rng_), w = RandomBuffer(t, {16, 16, 3, 3}, rng_);
  Buffer b = RandomBuffer(t, {16}, rng_);
  Buffer ref = MakeBuffer(t, {3, 16, hw, hw}), fast = ref;
  ASSERT_TRUE(Conv(p, x.data(), w.data(), b.data(), ref.data()).ok());
  const int64_t before = internal::FastConvExecutions();
  {
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(Conv(p, x.data(), w.data(), b.data(), fast.data()).ok());
  }
  EXPECT_EQ(internal::FastConvExecutions(), before);
  EXPECT_EQ(fast.bytes, ref.bytes);
}

// a8.FusedConv (conv.h) against the unfused kernels it replaces, Conv then Add(Z) then Relu, bit
// for bit: every float dtype, both kernel modes, and shapes that take each path: the direct
// convolution in row mode (8x8 with AVX2, 16x16 with AVX-512: the epilogue in its store) and
// over all columns (9x9), im2col (stride 2), oneDNN's (16 channels, 9x9, and 8x8 with AVX-512,
// fast mode) and f16 / bf16 through f32.
TEST(FusedConvKernelTest, MatchesConvAddReluBitForBit) {
  const Conv2dCase shapes[] = {{3, 16, 8, 8, 16, 3, 1, 1, 1, 1, true},
                               {2, 5, 16, 16, 6, 3, 1, 1, 1, 1, true},
                               {2, 5, 9, 9, 6, 3, 1, 1, 1, 1, true},
                               {2, 4, 9, 8, 3, 3, 2, 1, 1, 1, true},
                               {2, 16, 9, 9, 8, 3, 1, 1, 1, 1, true}};
  std::mt19937_64 rng(31);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    for (const Conv2dCase& sh : shapes) {
      const ConvParams p = testing::ParamsOf(sh, t);
      StatusOr<Dims> out = ConvOutputSpatial(p, false);
      ASSERT_TRUE(out.ok());
      const Dims y_dims = {sh.n, sh.m, (*out)[0], (*out)[1]};
      const int64_t count = NumElements(y_dims);
      Buffer x = RandomBuffer(t, {sh.n, sh.c, sh.h, sh.w}, rng);
      Buffer w = RandomBuffer(t, {sh.m, sh.c, 3, 3}, rng), b = RandomBuffer(t, {sh.m}, rng);
      Buffer z = RandomBuffer(t, y_dims, rng);
      for (KernelMode mode : {KernelMode::kReference, KernelMode::kFast}) {
        ScopedKernelMode scoped(mode);
        for (int form = 0; form < 3; ++form) {  // Relu; + Z; + Z then Relu
          const bool relu = form != 1, add = form != 0;
          SCOPED_TRACE(::testing::Message()
                       << ElemName(t) << " c" << sh.c << " " << sh.h << "x" << sh.w << " s"
                       << sh.stride << (mode == KernelMode::kFast ? " fast" : " reference")
                       << (add ? " +z" : "") << (relu ? " relu" : ""));
          Buffer want = MakeBuffer(t, y_dims), sum = want, fused = want;
          ASSERT_TRUE(Conv(p, x.data(), w.data(), b.data(), want.data()).ok());
          if (add) {
            ASSERT_TRUE(
                Binary(BinaryOp::kAdd, t, y_dims, want.data(), t, y_dims, z.data(), sum.data())
                    .ok());
            want = sum;
          }
          if (relu) {
            ASSERT_TRUE(Unary(UnaryOp::kRelu, t, count, want.data(), sum.data()).ok());
            want = sum;
          }
          ASSERT_TRUE(FusedConv(p, relu, x.data(), w.data(), b.data(), add ? z.data() : nullptr,
                                fused.data())
                          .ok());
          EXPECT_EQ(fused.bytes, want.bytes);
        }
      }
    }
  }
}

// Both paths sum products of bf16 values in f32 and round the sum once, in different orders (the
// fast one: oneDNN's bf16 primitive, or its f32 one on the widened data where the bf16 kernels
// lose or are missing; 7 x 7 images, which the direct kernel's rows do not take): on
// data whose sums are not exact in f32 (magnitudes spread over 2^-12..2^12), each output is within
// one bf16 ulp plus both f32 sums' worst-case error (n 2^-24 sum |x||w| each, n = C k^2): no
// intermediate rounding to bf16, which would cost 2^-8 of the partial sums.
TEST(FastConvUlpTest, Bf16OutputsAreWithinOneUlpOfTheReference) {
  std::mt19937_64 rng(24);
  std::uniform_int_distribution<int> exponent(-12, 12);
  for (int64_t c : {16, 64, 256}) {
    SCOPED_TRACE(::testing::Message() << "C " << c);
    ConvParams p;
    p.dtype = DType::kBF16;
    p.batch = 2;
    p.in_channels = c;
    p.out_channels = 32;
    p.in_spatial = {7, 7};
    p.kernel = {3, 3};
    p.pads = {1, 1, 1, 1};
    Buffer x = RandomBuffer(DType::kBF16, {2, c, 7, 7}, rng);
    Buffer w = RandomBuffer(DType::kBF16, {32, c, 3, 3}, rng);
    for (int64_t i = 0; i < x.size(); ++i)
      testing::SetValue(x, i, testing::GetValue(x, i) * std::ldexp(1.0, exponent(rng)));
    Buffer ref = MakeBuffer(DType::kBF16, {2, 32, 7, 7}), fast = ref;
    ASSERT_TRUE(Conv(p, x.data(), w.data(), nullptr, ref.data()).ok());
    const int64_t before = internal::FastConvExecutions();
    {
      ScopedKernelMode mode(KernelMode::kFast);
      ASSERT_TRUE(Conv(p, x.data(), w.data(), nullptr, fast.data()).ok());
    }
    if (internal::FastConvExecutions() == before) {
      GTEST_SKIP() << "oneDNN did not run this bf16 convolution ("
                   << internal::FastGemmDescription() << ")";
    }
    // sum |x||w| per output, in f64.
    Buffer ax = MakeBuffer(DType::kF64, {2, c, 7, 7}), aw = MakeBuffer(DType::kF64, {32, c, 3, 3});
    for (int64_t i = 0; i < ax.size(); ++i) testing::SetValue(ax, i, std::fabs(GetValue(x, i)));
    for (int64_t i = 0; i < aw.size(); ++i) testing::SetValue(aw, i, std::fabs(GetValue(w, i)));
    ConvParams p64 = p;
    p64.dtype = DType::kF64;
    Buffer mag = MakeBuffer(DType::kF64, {2, 32, 7, 7});
    ASSERT_TRUE(Conv(p64, ax.data(), aw.data(), nullptr, mag.data()).ok());
    const std::vector<double> want = Values(ref), got = Values(fast), sums = Values(mag);
    const double gamma = static_cast<double>(c * 9) * std::ldexp(1.0, -24);
    for (size_t i = 0; i < want.size(); ++i) {
      // bf16 keeps 8 significant bits: one ulp of v is 2^(exponent(v) - 7).
      const double v = std::max({std::fabs(want[i]), std::fabs(got[i]), 1e-30});
      const double bound = std::ldexp(1.0, std::ilogb(v) - 7) + 2 * gamma * sums[i];
      ASSERT_LE(std::fabs(got[i] - want[i]), bound) << "output " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FastConvTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return std::string(ElemName(i.param));
                         });

}  // namespace
}  // namespace a8::cpu

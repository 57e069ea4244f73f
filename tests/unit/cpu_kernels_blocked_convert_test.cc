// blocked_convert.h: f16/bf16 NCHW activations into oneDNN's f32 layouts (plain, nChw8c,
// nChw16c) and back, against the scalar conversions of kernels/common/float16.h element by
// element, on every conversion level this CPU runs (fast_convert_isa.h): the widening is exact,
// the narrowing must give the scalar body's bits, and the padding channels must read 0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/float16.h"
#include "kernels/cpu/blocked_convert.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/fast_convert_isa.h"

namespace a8::cpu::internal {
namespace {

struct LayoutCase {
  int64_t n, c, h, w, block;
};

// The dense layout oneDNN gives [n, c, h, w] with `block` channels innermost (block 0: NHWC).
BlockedLayout Dense(const LayoutCase& k) {
  const int64_t p = k.h * k.w;
  if (k.block == 1) return BlockedLayout{k.n, k.c, p, k.c * p, p, 1, 1};
  if (k.block == 0) return BlockedLayout{k.n, k.c, p, k.c * p, 1, k.c, k.c};
  const int64_t blocks = (k.c + k.block - 1) / k.block;
  return BlockedLayout{k.n, k.c, p, blocks * p * k.block, p * k.block, k.block, k.block};
}

int64_t OffsetOf(const BlockedLayout& l, int64_t n, int64_t c, int64_t q) {
  return n * l.sn + (c / l.block) * l.sc + q * l.sp + c % l.block;
}

float Widen(DType t, uint16_t bits) {
  return t == DType::kF16 ? HalfBitsToFloat(bits) : BFloat16BitsToFloat(bits);
}
uint16_t Narrow(DType t, float v) {
  return t == DType::kF16 ? FloatToHalfBits(v) : FloatToBFloat16Bits(v);
}

class BlockedConvertTest : public ::testing::TestWithParam<DType> {};

TEST_P(BlockedConvertTest, RoundTripsEveryLayoutOnEveryIsa) {
  const DType t = GetParam();
  // Channels a multiple of the block and not (padding), pixels a multiple of the tile and not.
  // NHWC (block 0 here) with 16, 24 (a partial group of 16) and 128 channels.
  const LayoutCase cases[] = {{2, 16, 8, 8, 16}, {3, 20, 9, 11, 16},  {1, 64, 16, 16, 16},
                              {2, 3, 13, 7, 8},  {2, 16, 10, 13, 8},  {1, 12, 8, 8, 8},
                              {2, 5, 4, 4, 1},   {1, 40, 1, 130, 16}, {2, 16, 5, 7, 0},
                              {2, 24, 9, 9, 0},  {1, 128, 4, 5, 0}};
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<float> value(-70000.0f, 70000.0f);
  std::uniform_int_distribution<int> scale(-30, 4);
  for (const std::string& isa : FastConvertIsas()) {
    ASSERT_TRUE(SetFastConvertIsaForTesting(isa));
    for (const LayoutCase& k : cases) {
      SCOPED_TRACE(::testing::Message() << isa << " n" << k.n << " c" << k.c << " " << k.h << "x"
                                        << k.w << " block " << k.block);
      const BlockedLayout l = Dense(k);
      ASSERT_TRUE(BlockedLayoutSupported(l));
      const int64_t block = l.block, count = k.n * k.c * l.p;
      std::vector<uint16_t> x(static_cast<size_t>(count));
      for (auto& bits : x) bits = Narrow(t, std::ldexp(value(rng), scale(rng)));
      // Garbage in the buffer: the padding channels must be written as 0, not left.
      std::vector<float> blocked(static_cast<size_t>(k.n * l.sn), -1.0f);
      HalfToBlocked(t, x.data(), l, blocked.data());
      const int64_t c_pad = (k.c + block - 1) / block * block;
      for (int64_t n = 0; n < k.n; ++n) {
        for (int64_t c = 0; c < c_pad; ++c) {
          for (int64_t q = 0; q < l.p; ++q) {
            const float want =
                c < k.c ? Widen(t, x[static_cast<size_t>((n * k.c + c) * l.p + q)]) : 0.0f;
            ASSERT_EQ(blocked[static_cast<size_t>(OffsetOf(l, n, c, q))], want)
                << "n " << n << " c " << c << " pixel " << q;
          }
        }
      }
      // Back: values that need rounding (and overflow past f16's range), one rounding each.
      for (float& v : blocked) v = v * 1.37f + 1e-3f;
      std::vector<uint16_t> y(static_cast<size_t>(count), 0xffff);
      BlockedToHalf(t, blocked.data(), l, y.data());
      for (int64_t n = 0; n < k.n; ++n) {
        for (int64_t c = 0; c < k.c; ++c) {
          for (int64_t q = 0; q < l.p; ++q) {
            const uint16_t want = Narrow(t, blocked[static_cast<size_t>(OffsetOf(l, n, c, q))]);
            ASSERT_EQ(y[static_cast<size_t>((n * k.c + c) * l.p + q)], want)
                << "n " << n << " c " << c << " pixel " << q;
          }
        }
      }
    }
  }
  SetFastConvertIsaForTesting("");
}

TEST(BlockedConvertLayoutTest, TakesOnlyTheLayoutsItConverts) {
  EXPECT_TRUE(BlockedLayoutSupported(Dense({2, 16, 4, 4, 16})));
  EXPECT_TRUE(BlockedLayoutSupported(Dense({2, 16, 4, 4, 8})));
  EXPECT_TRUE(BlockedLayoutSupported(Dense({2, 3, 4, 4, 1})));
  EXPECT_TRUE(BlockedLayoutSupported(Dense({2, 40, 4, 4, 0})));
  BlockedLayout nhwc = Dense({2, 16, 4, 4, 1});
  nhwc.sp = 16, nhwc.sc = 1;  // channels innermost but described as unblocked: not taken
  EXPECT_FALSE(BlockedLayoutSupported(nhwc));
  BlockedLayout b4 = Dense({2, 16, 4, 4, 16});
  b4.block = 4, b4.sp = 4;
  EXPECT_FALSE(BlockedLayoutSupported(b4));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BlockedConvertTest, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return std::string(ElemName(i.param));
                         });

}  // namespace
}  // namespace a8::cpu::internal

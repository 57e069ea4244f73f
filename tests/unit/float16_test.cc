// kernels/common/float16.h against independent references: tests/unit/half_reference.h (the
// compiler's `_Float16` conversions where it has them: IEEE round to nearest even) for half,
// and the classic integer RNE formula for bfloat16. Every half value round-trips; ~10M random
// floats plus a strided sweep of all 2^32 float bit patterns cover the conversion from float (the
// full sweep is too slow for a unit test).
#include "kernels/common/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tests/unit/half_reference.h"

namespace a8 {
namespace {

bool IsHalfNan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool IsBf16Nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

uint16_t ReferenceHalfBits(float f) { return half_ref::ReferenceDoubleToHalfBits(f); }

float ReferenceHalfToFloat(uint16_t bits) {
  return static_cast<float>(half_ref::ReferenceHalfBitsToDouble(bits));
}

uint16_t ReferenceBf16Bits(uint32_t x) {
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// Checks one float: same bits as the reference, or both NaN with the sign kept.
void CheckHalf(uint32_t x, int* failures) {
  float f = BitsToFloat(x);
  uint16_t got = FloatToHalfBits(f);
  uint16_t want = ReferenceHalfBits(f);
  bool ok = std::isnan(f) ? IsHalfNan(got) && (got & 0x8000u) == (x >> 16 & 0x8000u) : got == want;
  if (!ok && ++*failures <= 10) {
    ADD_FAILURE() << std::hex << "float bits 0x" << x << " (" << f << "): got 0x" << got
                  << ", want 0x" << want;
  }
}

void CheckBf16(uint32_t x, int* failures) {
  float f = BitsToFloat(x);
  uint16_t got = FloatToBFloat16Bits(f);
  bool ok = std::isnan(f) ? IsBf16Nan(got) && (got & 0x8000u) == (x >> 16 & 0x8000u)
                          : got == ReferenceBf16Bits(x);
  if (!ok && ++*failures <= 10) {
    ADD_FAILURE() << std::hex << "float bits 0x" << x << ": got 0x" << got << ", want 0x"
                  << ReferenceBf16Bits(x);
  }
}

TEST(Float16Test, EveryHalfValueRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    float f = HalfBitsToFloat(bits);
    float ref = ReferenceHalfToFloat(bits);
    if (IsHalfNan(bits)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(IsHalfNan(FloatToHalfBits(f))) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << h;
      continue;
    }
    ASSERT_EQ(FloatToBits(f), FloatToBits(ref)) << std::hex << h;
    ASSERT_EQ(FloatToHalfBits(f), bits) << std::hex << h;
  }
}

TEST(Float16Test, EveryBFloat16ValueRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t bits = static_cast<uint16_t>(b);
    float f = BFloat16BitsToFloat(bits);
    ASSERT_EQ(FloatToBits(f), b << 16);
    if (IsBf16Nan(bits)) {
      ASSERT_TRUE(IsBf16Nan(FloatToBFloat16Bits(f))) << std::hex << b;
    } else {
      ASSERT_EQ(FloatToBFloat16Bits(f), bits) << std::hex << b;
    }
  }
}

TEST(Float16Test, RandomFloatsMatchTheCompilersHalfConversion) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<uint32_t> bits;
  // Floats near the half range (exponents 100..150) are where the interesting rounding happens.
  std::uniform_int_distribution<uint32_t> exponent(100, 150);
  int failures = 0;
  for (int i = 0; i < 5'000'000; ++i) {
    CheckHalf(bits(rng), &failures);
    uint32_t x = bits(rng);
    CheckHalf((x & 0x807fffffu) | (exponent(rng) << 23), &failures);
  }
  // A strided sweep over all 2^32 bit patterns (stride prime, so every low-bit pattern occurs).
  for (uint64_t x = 0; x < (1ull << 32); x += 4099) CheckHalf(static_cast<uint32_t>(x), &failures);
  EXPECT_EQ(failures, 0);
}

// half_reference.h's <cmath> roundings, the reference where the compiler has no _Float16, agree
// with _Float16 bit for bit where it has one: every half value, every double halfway between two
// neighbouring halves (the ties), and random doubles over the whole half range and beyond.
TEST(Float16Test, PortableHalfReferenceMatchesFloat16) {
#ifndef __FLT16_MAX__
  GTEST_SKIP() << "this compiler has no _Float16 to compare with";
#else
  auto same = [](uint16_t a, uint16_t b) {
    return a == b || (IsHalfNan(a) && IsHalfNan(b) && (a & 0x8000u) == (b & 0x8000u));
  };
  int failures = 0;
  auto check = [&](double d) {
    uint16_t got = half_ref::PortableDoubleToHalfBits(d),
             want = half_ref::ReferenceDoubleToHalfBits(d);
    if (!same(got, want) && ++failures <= 10) {
      ADD_FAILURE() << std::hex << "double " << d << ": got 0x" << got << ", want 0x" << want;
    }
  };
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const double v = half_ref::ReferenceHalfBitsToDouble(h),
                 p = half_ref::PortableHalfBitsToDouble(h);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(p)) << h;
      continue;
    }
    EXPECT_EQ(v, p) << h;
    check(v);
    if ((h & 0x7fffu) < 0x7c00u) {  // the tie with the next half up, and just either side of it
      const double next = half_ref::ReferenceHalfBitsToDouble(static_cast<uint16_t>(h + 1));
      const double tie = std::isinf(next) ? std::copysign(65520.0, v) : (v + next) / 2;
      check(tie);
      check(std::nextafter(tie, 0.0));
      check(std::nextafter(tie, std::copysign(INFINITY, v)));
    }
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-30, 18), unit(1, 2);
  for (int i = 0; i < 1000000; ++i) {
    const double d = std::ldexp(unit(rng), static_cast<int>(exponent(rng)));
    check(i % 2 ? d : -d);
  }
  EXPECT_EQ(failures, 0);
#endif
}

TEST(Float16Test, HalfBoundaryCases) {
  struct Case {
    float in;
    uint16_t out;
  };
  const float min_sub = std::ldexp(1.0f, -24);  // smallest half subnormal
  const Case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {65504.0f, 0x7bff},    // largest half
      {65519.996f, 0x7bff},  // just below the overflow tie
      {65520.0f, 0x7c00},    // the tie rounds to even: Inf
      {-65520.0f, 0xfc00},
      {1e6f, 0x7c00},
      {std::numeric_limits<float>::max(), 0x7c00},
      {std::numeric_limits<float>::infinity(), 0x7c00},
      {-std::numeric_limits<float>::infinity(), 0xfc00},
      {std::ldexp(1.0f, -14), 0x0400},            // smallest normal
      {std::ldexp(1.0f, -14) - min_sub, 0x03ff},  // largest subnormal
      {min_sub, 0x0001},
      {min_sub * 0.5f, 0x0000},  // tie between 0 and 1: even (0)
      {std::nextafter(min_sub * 0.5f, 1.0f), 0x0001},
      {-min_sub * 0.5f, 0x8000},
      {min_sub * 1.5f, 0x0002},                // tie between 1 and 2: even (2)
      {min_sub * 2.5f, 0x0002},                // tie between 2 and 3: even (2)
      {1.0f + std::ldexp(1.0f, -11), 0x3c00},  // tie between 1 and 1+2^-10: even
      {1.0f + 3 * std::ldexp(1.0f, -11), 0x3c02},
      {std::numeric_limits<float>::denorm_min(), 0x0000},
      {std::ldexp(1.0f, -25) * 0.99f, 0x0000},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FloatToHalfBits(c.in), c.out) << c.in;
    EXPECT_EQ(ReferenceHalfBits(c.in), c.out) << c.in << " (reference)";
  }
  uint16_t nan = FloatToHalfBits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(IsHalfNan(nan));
  EXPECT_TRUE(IsHalfNan(FloatToHalfBits(BitsToFloat(0x7f800001u))));  // signalling NaN
  EXPECT_TRUE(IsHalfNan(FloatToHalfBits(BitsToFloat(0xff800001u))));
  EXPECT_TRUE(std::isinf(HalfBitsToFloat(0x7c00)));
  EXPECT_EQ(HalfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfBitsToFloat(0x7bff), 65504.0f);
}

TEST(Float16Test, BFloat16MatchesTheIntegerRneReference) {
  std::mt19937 rng(777);
  std::uniform_int_distribution<uint32_t> bits;
  int failures = 0;
  for (int i = 0; i < 5'000'000; ++i) CheckBf16(bits(rng), &failures);
  // Ties and near-ties in the low 16 bits, around every exponent.
  for (uint32_t hi = 0; hi < 65536; hi += 3) {
    for (uint32_t lo : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      CheckBf16(hi << 16 | lo, &failures);
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(FloatToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16Bits(BitsToFloat(0x3f808000u)), 0x3f80);  // tie: even
  EXPECT_EQ(FloatToBFloat16Bits(BitsToFloat(0x3f818000u)), 0x3f82);  // tie: even (up)
  EXPECT_EQ(FloatToBFloat16Bits(BitsToFloat(0x7f7fffffu)), 0x7f80);  // max float: Inf
  EXPECT_EQ(FloatToBFloat16Bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(FloatToBFloat16Bits(-std::numeric_limits<float>::infinity()), 0xff80);
  // NaN stays NaN, even when its payload sits only in the low bits the rounding drops.
  EXPECT_TRUE(IsBf16Nan(FloatToBFloat16Bits(BitsToFloat(0x7f800001u))));
  EXPECT_TRUE(IsBf16Nan(FloatToBFloat16Bits(BitsToFloat(0xff800001u))));
  EXPECT_TRUE(IsBf16Nan(FloatToBFloat16Bits(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace a8

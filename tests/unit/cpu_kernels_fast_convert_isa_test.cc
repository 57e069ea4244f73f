// fast_convert.h at every instruction-set level this CPU has, not only the widest: the dispatch
// picks AVX-512F first, so without the override (SetFastConvertIsaForTesting) the F16C+AVX2 code
// would never run on an AVX-512 machine. Each level must give the scalar body's bits
// (kernels/common/float16.h) for every f16 pattern and around every rounding boundary (NaN
// payloads aside for f16: both stay NaN). A level the CPU lacks is skipped and named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/float16.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/fast_convert_isa.h"

namespace a8::cpu {
namespace {

bool IsHalfNaN(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Sets the conversion level for the life of the object, then restores the detected one.
class ScopedIsa {
 public:
  explicit ScopedIsa(const std::string& isa) : ok_(SetFastConvertIsaForTesting(isa)) {}
  ~ScopedIsa() { SetFastConvertIsaForTesting(""); }
  bool ok() const { return ok_; }

 private:
  bool ok_;
};

// Ties, one ulp either side and the neighbours themselves for f16 and bf16, specials, then
// random bit patterns; an odd count so that every level's tail runs.
std::vector<float> BoundaryInputs() {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x7c00u; h += 5) {
    const float a = HalfBitsToFloat(static_cast<uint16_t>(h));
    const float b = HalfBitsToFloat(static_cast<uint16_t>(h + 1));
    const float mid = a + (b - a) / 2;
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f), a}) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  for (uint32_t b = 0; b < 0x7f80u; b += 11) {
    const uint32_t lo = b << 16, tie = lo | 0x8000u;
    for (uint32_t bits : {lo, tie, tie - 1, tie + 1}) {
      v.push_back(BitsToFloat(bits));
      v.push_back(BitsToFloat(bits | 0x80000000u));
    }
  }
  for (float x : {65504.0f, 65519.0f, 65520.0f, 1e30f, INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f,
                  1e-45f, 5.96e-8f, 2.98e-8f, 2.99e-8f}) {
    v.push_back(x);
  }
  std::mt19937_64 rng(11);
  for (int i = 0; i < 50000; ++i) v.push_back(BitsToFloat(static_cast<uint32_t>(rng())));
  if (v.size() % 2 == 0) v.push_back(1.0f);
  return v;
}

TEST(FastConvertIsaTest, ListsTheDetectedLevelFirstAndScalarLast) {
  const std::vector<std::string> isas = FastConvertIsas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), FastConvertIsa());
  EXPECT_EQ(isas.back(), "scalar");
  EXPECT_FALSE(SetFastConvertIsaForTesting("avx9000"));
  EXPECT_EQ(std::string(FastConvertIsa()), isas.front());
}

class FastConvertAtIsaTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::vector<std::string> isas = FastConvertIsas();
    if (std::find(isas.begin(), isas.end(), GetParam()) == isas.end())
      GTEST_SKIP() << "this CPU cannot run the " << GetParam() << " conversions";
  }
};

TEST_P(FastConvertAtIsaTest, EveryHalfPatternWidensAsTheScalarBody) {
  ScopedIsa isa(GetParam());
  ASSERT_TRUE(isa.ok());
  ASSERT_EQ(std::string(FastConvertIsa()), GetParam());
  std::vector<Half> h(65536 + 5);
  for (size_t i = 0; i < h.size(); ++i) h[i].bits = static_cast<uint16_t>(i);
  std::vector<float> f(h.size());
  HalfToFloat(h.data() + 5, f.data(), static_cast<int64_t>(h.size()) - 5);
  for (size_t i = 0; i + 5 < h.size(); ++i) {
    const uint16_t bits = h[i + 5].bits;
    if (IsHalfNaN(bits)) {
      ASSERT_TRUE(std::isnan(f[i])) << "pattern " << bits;
    } else {
      ASSERT_EQ(FloatToBits(f[i]), FloatToBits(HalfBitsToFloat(bits))) << "pattern " << bits;
    }
  }
}

TEST_P(FastConvertAtIsaTest, NarrowingRoundsAsTheScalarBody) {
  ScopedIsa isa(GetParam());
  ASSERT_TRUE(isa.ok());
  const std::vector<float> x = BoundaryInputs();
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<Half> h(x.size());
  std::vector<BFloat16> b(x.size());
  FloatToHalf(x.data(), h.data(), n);
  FloatToBFloat16(x.data(), b.data(), n);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      ASSERT_TRUE(IsHalfNaN(h[i].bits)) << "input bits " << FloatToBits(x[i]);
    } else {
      ASSERT_EQ(h[i].bits, FloatToHalfBits(x[i])) << "input bits " << FloatToBits(x[i]);
    }
    ASSERT_EQ(b[i].bits, FloatToBFloat16Bits(x[i])) << "input bits " << FloatToBits(x[i]);
  }
  std::vector<float> back(b.size());
  BFloat16ToFloat(b.data(), back.data(), n);
  for (size_t i = 0; i < b.size(); ++i)
    ASSERT_EQ(FloatToBits(back[i]), FloatToBits(BFloat16BitsToFloat(b[i].bits)));
}

INSTANTIATE_TEST_SUITE_P(Levels, FastConvertAtIsaTest,
                         ::testing::Values("avx512f", "f16c+avx2", "scalar"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '+') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace a8::cpu

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
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using testing::IsHalfNaN;

// Sets the conversion level for the life of the object, then restores the detected one.
class ScopedIsa {
 public:
  explicit ScopedIsa(const std::string& isa) : ok_(SetFastConvertIsaForTesting(isa)) {}
  ~ScopedIsa() { SetFastConvertIsaForTesting(""); }
  bool ok() const { return ok_; }

 private:
  bool ok_;
};

// The boundary floats of f16 and bf16, then random bit patterns; an odd count so that every
// level's tail runs.
std::vector<float> BoundaryInputs() {
  std::vector<float> v = testing::ConversionBoundaryInputs(5, 11, 11, 50000);
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
  testing::ExpectEveryHalfPatternWidensAsScalar(5, 5);
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

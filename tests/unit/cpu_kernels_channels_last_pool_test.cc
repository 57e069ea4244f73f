// The channels-last (NHWC) f32 pools against the NCHW kernels: on the same logical data,
// transposed, every output must have the NCHW kernel's bits. The data is drawn mostly from a few
// values (NaNs of both signs and a payload, signed zeros, infinities, small integers), so most
// windows hold ties, a NaN first tap or a later NaN, where a different tap order or compare would
// show.
#include <gmock/gmock.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/pool.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

// `count` floats, nine in ten from a small set of specials and ties, the rest uniform in [-4, 4).
std::vector<float> TieHeavyFloats(int64_t count, std::mt19937_64& rng) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::bit_cast<float>(0xffc00000u),  // -NaN
                            std::bit_cast<float>(0x7fc01234u),  // a NaN with a payload
                            0.0f,
                            -0.0f,
                            inf,
                            -inf,
                            1.0f,
                            -1.0f,
                            2.0f,
                            0.5f,
                            -3.0f};
  std::uniform_int_distribution<size_t> pick(0, std::size(specials) - 1);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::bernoulli_distribution special(0.9);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = special(rng) ? specials[pick(rng)] : uniform(rng);
  return v;
}

// [n, c, spatial] -> [n, spatial, c], and back.
std::vector<float> NchwToNhwc(const std::vector<float>& x, int64_t n, int64_t c, int64_t spatial) {
  return testing::NchwNhwc(x.data(), n, c, spatial, true);
}
std::vector<float> NhwcToNchw(const std::vector<float>& x, int64_t n, int64_t c, int64_t spatial) {
  return testing::NchwNhwc(x.data(), n, c, spatial, false);
}

// Element by element, the same bits (a NaN must be the same NaN).
void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    const uint32_t g = std::bit_cast<uint32_t>(got[i]), w = std::bit_cast<uint32_t>(want[i]);
    if (g != w) {
      ADD_FAILURE() << what << ": element " << i << ": got " << got[i] << " (0x" << std::hex << g
                    << ") want " << want[i] << " (0x" << w << std::dec << ")";
      ++failures;
    }
  }
}

// A 2-D MaxPool without pads or dilations: x [n, c, h, w], a kh x kw window, strides sh, sw.
struct ChannelsLastMaxPoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw;
  bool ceil_mode;
};

PoolParams ChannelsLastParamsOf(const ChannelsLastMaxPoolCase& t) {
  PoolParams p;
  p.dtype = DType::kF32;
  p.batch = t.n;
  p.channels = t.c;
  p.in_spatial = {t.h, t.w};
  p.kernel = {t.kh, t.kw};
  p.strides = {t.sh, t.sw};
  p.ceil_mode = t.ceil_mode;
  return p;
}

// The error `s` carries ("ok" when there is none).
std::string MessageOf(const Status& s) { return s.ok() ? std::string("ok") : s.message(); }

TEST(CpuKernelChannelsLastPoolTest, MaxPoolMatchesNchwBitForBit) {
  std::mt19937_64 rng(1234);
  std::vector<ChannelsLastMaxPoolCase> cases = {
      {32, 16, 8, 8, 2, 2, 2, 2, false},  // the example CNN's pool
  };
  for (int64_t c : {1, 3, 16, 17, 32}) {
    cases.push_back({2, c, 8, 8, 2, 2, 2, 2, false});
    cases.push_back({2, c, 8, 8, 3, 3, 1, 1, false});
    cases.push_back({2, c, 9, 9, 3, 3, 2, 2, false});
    cases.push_back({3, c, 7, 5, 2, 2, 1, 1, false});
    // Odd sizes: the last row and column are dropped, or (ceil_mode) no window overhangs.
    cases.push_back({2, c, 7, 9, 2, 2, 2, 2, false});
    cases.push_back({2, c, 8, 10, 2, 2, 2, 2, true});
    cases.push_back({2, c, 9, 7, 3, 2, 2, 3, false});
  }
  for (const ChannelsLastMaxPoolCase& t : cases) {
    const std::string what = "n " + std::to_string(t.n) + " c " + std::to_string(t.c) + " " +
                             std::to_string(t.h) + "x" + std::to_string(t.w) + " kernel " +
                             std::to_string(t.kh) + "x" + std::to_string(t.kw) + " stride " +
                             std::to_string(t.sh) + "x" + std::to_string(t.sw);
    const PoolParams p = ChannelsLastParamsOf(t);
    ASSERT_TRUE(MaxPoolChannelsLastTakes(p)) << what;
    StatusOr<Dims> out = PoolOutputSpatial(p);
    ASSERT_TRUE(out.ok()) << what;
    const int64_t out_spatial = (*out)[0] * (*out)[1];
    ASSERT_GT(out_spatial, 0) << what;
    const std::vector<float> x = TieHeavyFloats(t.n * t.c * t.h * t.w, rng);
    std::vector<float> want(static_cast<size_t>(t.n * t.c * out_spatial));
    std::vector<float> got_nhwc(want.size());
    ASSERT_TRUE(MaxPool(p, x.data(), want.data(), nullptr).ok()) << what;
    const std::vector<float> x_nhwc = NchwToNhwc(x, t.n, t.c, t.h * t.w);
    const Status s = MaxPoolChannelsLast(p, x_nhwc.data(), got_nhwc.data());
    ASSERT_TRUE(s.ok()) << what << ": " << MessageOf(s);
    ExpectSameBits(NhwcToNchw(got_nhwc, t.n, t.c, out_spatial), want, what);
  }
}

TEST(CpuKernelChannelsLastPoolTest, GlobalPoolsMatchNchwBitForBit) {
  std::mt19937_64 rng(4321);
  struct Shape {
    int64_t n, c, spatial;
  };
  std::vector<Shape> shapes;
  for (int64_t c : {3, 16, 33}) {
    for (int64_t spatial : {1, 16, 49}) shapes.push_back({4, c, spatial});
  }
  shapes.push_back({32, 16, 16});  // the example CNN's global pool: 4x4 planes at batch 32
  shapes.push_back({2, 1100, 3});  // more than one block of channels
  shapes.push_back({2, 5, 0});     // no pixels: -inf and 0
  for (const Shape& sh : shapes) {
    const std::vector<float> x = TieHeavyFloats(sh.n * sh.c * sh.spatial, rng);
    const std::vector<float> x_nhwc = NchwToNhwc(x, sh.n, sh.c, sh.spatial);
    for (bool max : {false, true}) {
      const std::string what = std::string(max ? "GlobalMaxPool" : "GlobalAveragePool") + " n " +
                               std::to_string(sh.n) + " c " + std::to_string(sh.c) + " spatial " +
                               std::to_string(sh.spatial);
      std::vector<float> want(static_cast<size_t>(sh.n * sh.c)), got(want.size());
      ASSERT_TRUE(
          (max ? GlobalMaxPool(DType::kF32, sh.n, sh.c, sh.spatial, x.data(), want.data())
               : GlobalAveragePool(DType::kF32, sh.n, sh.c, sh.spatial, x.data(), want.data()))
              .ok())
          << what;
      const Status s = GlobalPoolChannelsLast(max, DType::kF32, sh.n, sh.c, sh.spatial,
                                              x_nhwc.data(), got.data());
      ASSERT_TRUE(s.ok()) << what << ": " << MessageOf(s);
      // y [n, c] is both layouts' output: no transpose back.
      ExpectSameBits(got, want, what);
    }
  }
}

TEST(CpuKernelChannelsLastPoolTest, MaxPoolTakesOnlyF32TwoDimWindowsInside) {
  // One message for every geometry that WindowsInside (pool.cc) turns down.
  const std::string kNotInside = "the windows reach padding, are dilated or overhang the input";
  const PoolParams base = ChannelsLastParamsOf({2, 3, 7, 7, 2, 2, 2, 2, false});
  EXPECT_TRUE(MaxPoolChannelsLastTakes(base));

  std::vector<float> x(2 * 3 * 9 * 9 * 9, 1.0f), y(x.size());
  auto expect_refused = [&](const PoolParams& p, const std::string& substr, const char* what) {
    EXPECT_FALSE(MaxPoolChannelsLastTakes(p)) << what;
    EXPECT_THAT(MessageOf(MaxPoolChannelsLast(p, x.data(), y.data())), ::testing::HasSubstr(substr))
        << what;
  };
  PoolParams p = base;
  p.pads = {1, 1, 1, 1};
  expect_refused(p, kNotInside, "pads 1");
  p.pads = {0, 0, 1, 1};  // 7 + 1 end pad: the fourth window reads the pad
  expect_refused(p, kNotInside, "end pads reached");
  p = base;
  p.dilations = {2, 2};
  expect_refused(p, kNotInside, "dilations 2");
  p = base;
  p.ceil_mode = true;  // 7 wide, 2 / stride 2: the fourth window overhangs
  expect_refused(p, kNotInside, "ceil_mode overhang");
  p = base;
  p.dtype = DType::kF16;
  expect_refused(p, "f32 only", "f16");
  p.dtype = DType::kF64;
  expect_refused(p, "f32 only", "f64");
  p = base;
  p.in_spatial = {7};
  p.kernel = {2};
  p.strides = {2};
  expect_refused(p, "1 spatial dims", "1-D");
  p.in_spatial = {7, 7, 7};
  p.kernel = {2, 2, 2};
  p.strides = {2, 2, 2};
  expect_refused(p, "3 spatial dims", "3-D");
  p = base;
  p.kernel = {8, 2};
  expect_refused(p, "exceeds padded input", "kernel larger than the input");
}

TEST(CpuKernelChannelsLastPoolTest, GlobalPoolRejectsNonF32) {
  std::vector<float> x(2 * 3 * 4, 1.0f), y(2 * 3);
  EXPECT_EQ(MessageOf(GlobalPoolChannelsLast(true, DType::kF32, 2, 3, 4, x.data(), y.data())),
            "ok");
  for (DType dt : {DType::kF16, DType::kBF16, DType::kF64}) {
    for (bool max : {false, true}) {
      EXPECT_THAT(MessageOf(GlobalPoolChannelsLast(max, dt, 2, 3, 4, x.data(), y.data())),
                  ::testing::HasSubstr("f32 only"))
          << ElemName(dt) << (max ? " max" : " average");
    }
  }
}

}  // namespace
}  // namespace a8::cpu

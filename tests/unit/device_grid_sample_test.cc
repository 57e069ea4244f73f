// The kernels of GridSample, a8.GridSampleGrad, Col2Im and DeformConv (kernels/device/
// grid_sample.h): values against direct references on the CPU backend (which runs the shared
// bodies through its host launch), and the device backend (cuda-emu here, the GPU in
// a8_gpu_tests) against the CPU bit for bit, over every mode, padding and dtype. The gradients
// are checked against finite differences in grid_sample_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"  // cpu::Cast, used by device_test_util.h
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/device_test_util.h"

namespace a8 {
namespace {

using testing::Count;
using testing::Str;
using B = plan::Buffer;
using testing::Bytes;
using Dims = std::vector<int64_t>;
using testing::PlanBuilder;

std::vector<float> Floats(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

std::vector<float> Uniform(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

const char* kModes[] = {"linear", "nearest", "cubic"};
const char* kPaddings[] = {"zeros", "border", "reflection"};

// A GridSample plan X [xdims] x grid [gdims] -> Y, and (with `grad`) its gradient plan.
PlanFile GridSamplePlan(DType t, const Dims& xdims, const Dims& gdims, const std::string& mode,
                        const std::string& pad, int64_t align, bool grad) {
  Dims ydims = {xdims[0], xdims[1]};
  ydims.insert(ydims.end(), gdims.begin() + 1, gdims.end() - 1);
  PlanBuilder pb;
  const int x = pb.Buffer("x", t, xdims, B::INPUT);
  const int g = pb.Buffer("g", t, gdims, B::INPUT);
  plan::Kernel* k;
  if (grad) {
    const int dy = pb.Buffer("dy", t, ydims, B::INPUT);
    const int dx = pb.Buffer("dx", t, xdims, B::OUTPUT);
    const int dg = pb.Buffer("dg", t, gdims, B::OUTPUT);
    k = pb.Kernel("a8.GridSampleGrad", {dy, x, g}, {dx, dg});
  } else {
    const int y = pb.Buffer("y", t, ydims, B::OUTPUT);
    k = pb.Kernel("GridSample", {x, g}, {y});
  }
  Str(k, "mode", mode);
  Str(k, "padding_mode", pad);
  PlanBuilder::Int(k, "align_corners", align);
  return pb.Finish();
}

// Grid values in [-1.6, 1.6]: some points outside the image, for the padding modes.
TEST(GridSampleKernelTest, EveryModeAndPaddingIsBitForBitOnEmu) {
  for (const Dims& xd : {Dims{2, 3, 5, 4}, Dims{1, 2, 3, 4, 3}}) {
    const int64_t r = static_cast<int64_t>(xd.size()) - 2;
    const Dims gd = r == 2 ? Dims{2, 3, 6, 2} : Dims{1, 2, 3, 2, 3};
    const std::vector<float> grid = Uniform(Count(gd), -1.6f, 1.6f, 5);
    for (const char* mode : kModes) {
      for (const char* pad : kPaddings) {
        for (int64_t align : {0, 1}) {
          SCOPED_TRACE(std::string(mode) + " " + pad + " align " + std::to_string(align) +
                       " rank " + std::to_string(r));
          testing::ExpectEmuMatchesCpu(GridSamplePlan(DType::kF32, xd, gd, mode, pad, align, false),
                                       {{"g", Bytes(grid)}}, 0, 0);
          testing::ExpectEmuMatchesCpu(GridSamplePlan(DType::kF32, xd, gd, mode, pad, align, true),
                                       {{"g", Bytes(grid)}}, 0, 0);
        }
      }
    }
  }
  for (DType t : {DType::kF16, DType::kBF16, DType::kF64}) {
    testing::ExpectEmuMatchesCpu(
        GridSamplePlan(t, {1, 2, 4, 4}, {1, 3, 3, 2}, "cubic", "reflection", 0, false), {}, 0, 0);
    testing::ExpectEmuMatchesCpu(
        GridSamplePlan(t, {1, 2, 4, 4}, {1, 3, 3, 2}, "linear", "border", 1, true), {}, 0, 0);
  }
}

// Hand-computed values of X = [[0, 1, 2], [3, 4, 5]] (1x1x2x3).
TEST(GridSampleKernelTest, KnownValues) {
  const std::vector<float> x = {0, 1, 2, 3, 4, 5};
  struct Case {
    const char* mode;
    const char* pad;
    int64_t align;
    float gx, gy;  // grid[..., 0] indexes W, grid[..., 1] H
    float want;
  };
  const Case cases[] = {
      // align_corners: (-1, -1) is pixel (0, 0), (1, 1) pixel (1, 2), (0, 0) the centre.
      {"linear", "zeros", 1, -1, -1, 0},
      {"linear", "zeros", 1, 1, 1, 5},
      {"linear", "zeros", 1, 0, 0, 2.5f},
      // Without: (-1, -1) is the corner (-0.5, -0.5): a quarter of pixel (0, 0) in zeros.
      {"linear", "zeros", 0, -1, -1, 0},
      {"linear", "zeros", 0, 1, 1, 5.0f / 4},
      {"linear", "border", 0, 1, 1, 5},
      // W 3.1 reflects about 2.5 to 1.9; H 0.5: the mean of 0.1 x1 + 0.9 x2 over both rows.
      {"linear", "reflection", 0, 1.4f, 0, 3.4f},
      // x = ((0.5 + 1) * 3 - 1) / 2 = 1.75 along W, y = 0.5 along H: 0.5 (1.75 + 4.75).
      {"linear", "zeros", 0, 0.5f, 0, 3.25f},
      // Nearest rounds half to even: W 1.5 -> 2, H 0.5 -> 0.
      {"nearest", "zeros", 0, 1.0f / 3, 0, 2},
      // (2, 2) is W 4, H 2.5 -> 2 (rounded): outside, border clamps to (1, 2), zeros reads 0.
      {"nearest", "border", 0, 2, 2, 5},
      {"nearest", "zeros", 0, 2, 2, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.mode) + " " + c.pad + " " + std::to_string(c.gx) + "," +
                 std::to_string(c.gy));
    PlanFile f =
        GridSamplePlan(DType::kF32, {1, 1, 2, 3}, {1, 1, 1, 2}, c.mode, c.pad, c.align, false);
    auto got = testing::RunOn(f, MakeCpuBackend(),
                              {{"x", Bytes(x)}, {"g", Bytes(std::vector<float>{c.gx, c.gy})}});
    ASSERT_EQ(got["y"].size(), 4u);
    EXPECT_NEAR(Floats(got["y"])[0], c.want, 1e-5);
  }
  // Cubic at W 1.65 (taps 0..3 inside): Keys' a = -0.75 weights at t = 0.65 are -0.05971875,
  // 0.39265625, 0.77796875, -0.11090625 (a = -0.75 does not reproduce a ramp exactly: 1.615875,
  // not 1.65); H 0 (row 0 exactly: the other taps' weights are 0).
  const std::vector<float> ramp = {0, 1, 2, 3, 0, 1, 2, 3};
  PlanFile f = GridSamplePlan(DType::kF32, {1, 1, 2, 4}, {1, 1, 1, 2}, "cubic", "zeros", 1, false);
  auto got = testing::RunOn(f, MakeCpuBackend(),
                            {{"x", Bytes(ramp)}, {"g", Bytes(std::vector<float>{0.1f, -1})}});
  EXPECT_NEAR(Floats(got["y"])[0], 1.615875f, 1e-5);
}

// Col2Im against a direct scatter of every column entry, its gradient as its adjoint.
TEST(Col2ImKernelTest, MatchesScatterReferenceAndEmu) {
  struct Case {
    Dims image, block, dil, pads, strides;
  };
  const Case cases[] = {{{5, 5}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
                        {{6, 5}, {2, 3}, {2, 1}, {1, 0, 2, 1}, {2, 1}},
                        {{3, 4, 5}, {2, 2, 2}, {1, 1, 2}, {0, 1, 0, 0, 1, 1}, {1, 2, 1}}};
  for (const Case& c : cases) {
    const size_t r = c.image.size();
    Dims out(r);
    int64_t bsize = Count(c.block), positions = 1;
    for (size_t d = 0; d < r; ++d) {
      out[d] = (c.image[d] + c.pads[d] + c.pads[d + r] - (c.dil[d] * (c.block[d] - 1) + 1)) /
                   c.strides[d] +
               1;
      positions *= out[d];
    }
    const int64_t n = 2, ch = 3;
    const std::vector<float> x = Uniform(n * ch * bsize * positions, -1, 1, 9);
    Dims ydims = {n, ch};
    ydims.insert(ydims.end(), c.image.begin(), c.image.end());
    std::vector<double> want(Count(ydims), 0.0);
    const int64_t isize = Count(c.image);
    for (int64_t nc = 0; nc < n * ch; ++nc) {
      for (int64_t k = 0; k < bsize; ++k) {
        for (int64_t l = 0; l < positions; ++l) {
          int64_t kr = k, lr = l, at = 0;
          bool inside = true;
          Dims kd(r), ld(r);
          for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
            kd[d] = kr % c.block[d];
            kr /= c.block[d];
            ld[d] = lr % out[d];
            lr /= out[d];
          }
          for (size_t d = 0; d < r; ++d) {
            const int64_t pos = ld[d] * c.strides[d] - c.pads[d] + kd[d] * c.dil[d];
            if (pos < 0 || pos >= c.image[d]) inside = false;
            at = at * c.image[d] + pos;
          }
          if (inside) want[nc * isize + at] += x[(nc * bsize + k) * positions + l];
        }
      }
    }
    PlanBuilder pb;
    const int xb = pb.Buffer("x", DType::kF32, {n, ch * bsize, positions}, B::INPUT);
    const int ib =
        pb.Buffer("i", DType::kI64, {static_cast<int64_t>(r)}, B::CONSTANT, c.image.data());
    const int bb =
        pb.Buffer("b", DType::kI64, {static_cast<int64_t>(r)}, B::CONSTANT, c.block.data());
    const int yb = pb.Buffer("y", DType::kF32, ydims, B::OUTPUT);
    plan::Kernel* k = pb.Kernel("Col2Im", {xb, ib, bb}, {yb});
    PlanBuilder::Ints(k, "dilations", c.dil);
    PlanBuilder::Ints(k, "pads", c.pads);
    PlanBuilder::Ints(k, "strides", c.strides);
    PlanFile f = pb.Finish();
    auto got = Floats(testing::RunOn(f, MakeCpuBackend(), {{"x", Bytes(x)}})["y"]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
    testing::ExpectEmuMatchesCpu(f, {{"x", Bytes(x)}}, 0, 0);
    // The gradient (Im2Col) is Col2Im's adjoint: <Col2Im(x), dy> = <x, Col2ImGrad(dy)>.
    PlanBuilder gb;
    const int dyb = gb.Buffer("dy", DType::kF32, ydims, B::INPUT);
    const int gi =
        gb.Buffer("i", DType::kI64, {static_cast<int64_t>(r)}, B::CONSTANT, c.image.data());
    const int gbk =
        gb.Buffer("b", DType::kI64, {static_cast<int64_t>(r)}, B::CONSTANT, c.block.data());
    const int dxb = gb.Buffer("dx", DType::kF32, {n, ch * bsize, positions}, B::OUTPUT);
    plan::Kernel* gk = gb.Kernel("a8.Col2ImGrad", {dyb, gi, gbk}, {dxb});
    PlanBuilder::Ints(gk, "dilations", c.dil);
    PlanBuilder::Ints(gk, "pads", c.pads);
    PlanBuilder::Ints(gk, "strides", c.strides);
    PlanFile gf = gb.Finish();
    const std::vector<float> dy = Uniform(want.size(), -1, 1, 10);
    auto dx = Floats(testing::RunOn(gf, MakeCpuBackend(), {{"dy", Bytes(dy)}})["dx"]);
    ASSERT_EQ(dx.size(), x.size());
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < want.size(); ++i) lhs += want[i] * dy[i];
    for (size_t i = 0; i < x.size(); ++i) rhs += static_cast<double>(x[i]) * dx[i];
    EXPECT_NEAR(lhs, rhs, 1e-4);
    testing::ExpectEmuMatchesCpu(gf, {{"dy", Bytes(dy)}}, 0, 0);
  }
}

// DeformConv against a direct reference: bilinear samples (zero outside) at the offset taps.
TEST(DeformConvKernelTest, MatchesReferenceAndEmu) {
  const int64_t n = 2, c = 4, h = 5, w = 6, m = 4, kh = 2, kw = 3, group = 2, og = 2;
  const int64_t sh = 1, sw = 2, ph = 1, pw = 0, dh = 2, dw = 1;
  const int64_t oh = (h + 2 * ph - (dh * (kh - 1) + 1)) / sh + 1;
  const int64_t ow = (w + 2 * pw - (dw * (kw - 1) + 1)) / sw + 1;
  const int64_t taps = kh * kw, cpg = c / group, mpg = m / group, cpo = c / og;
  const std::vector<float> x = Uniform(n * c * h * w, -1, 1, 1);
  const std::vector<float> wt = Uniform(m * cpg * taps, -1, 1, 2);
  const std::vector<float> off = Uniform(n * 2 * og * taps * oh * ow, -1.5f, 1.5f, 3);
  const std::vector<float> bias = Uniform(m, -1, 1, 4);
  const std::vector<float> mask = Uniform(n * og * taps * oh * ow, 0, 1, 5);
  auto sample = [&](int64_t b, int64_t ch, double y, double xx) {
    const double y0 = std::floor(y), x0 = std::floor(xx);
    double s = 0;
    for (int a = 0; a < 2; ++a) {
      for (int e = 0; e < 2; ++e) {
        const int64_t yi = static_cast<int64_t>(y0) + a, xi = static_cast<int64_t>(x0) + e;
        if (yi < 0 || yi >= h || xi < 0 || xi >= w) continue;
        const double wy = a ? y - y0 : 1 - (y - y0), wx = e ? xx - x0 : 1 - (xx - x0);
        s += wy * wx * x[((b * c + ch) * h + yi) * w + xi];
      }
    }
    return s;
  };
  for (bool with_opt : {true, false}) {
    std::vector<double> want(n * m * oh * ow);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t o = 0; o < m; ++o) {
        for (int64_t i = 0; i < oh; ++i) {
          for (int64_t j = 0; j < ow; ++j) {
            double s = with_opt ? bias[o] : 0;
            for (int64_t ci = 0; ci < cpg; ++ci) {
              const int64_t ch = (o / mpg) * cpg + ci, g = ch / cpo;
              for (int64_t t = 0; t < taps; ++t) {
                const int64_t oc = (b * og + g) * taps + t;
                const double yy = i * sh - ph + (t / kw) * dh + off[((oc * 2) * oh + i) * ow + j];
                const double xx =
                    j * sw - pw + (t % kw) * dw + off[((oc * 2 + 1) * oh + i) * ow + j];
                double v = sample(b, ch, yy, xx);
                if (with_opt) v *= mask[(oc * oh + i) * ow + j];
                s += wt[(o * cpg + ci) * taps + t] * v;
              }
            }
            want[((b * m + o) * oh + i) * ow + j] = s;
          }
        }
      }
    }
    PlanBuilder pb;
    std::vector<int> ins = {pb.Buffer("x", DType::kF32, {n, c, h, w}, B::INPUT),
                            pb.Buffer("w", DType::kF32, {m, cpg, kh, kw}, B::INPUT),
                            pb.Buffer("o", DType::kF32, {n, 2 * og * taps, oh, ow}, B::INPUT)};
    std::map<std::string, std::vector<uint8_t>> in = {
        {"x", Bytes(x)}, {"w", Bytes(wt)}, {"o", Bytes(off)}};
    if (with_opt) {
      ins.push_back(pb.Buffer("b", DType::kF32, {m}, B::INPUT));
      ins.push_back(pb.Buffer("m", DType::kF32, {n, og * taps, oh, ow}, B::INPUT));
      in["b"] = Bytes(bias);
      in["m"] = Bytes(mask);
    }
    const int y = pb.Buffer("y", DType::kF32, {n, m, oh, ow}, B::OUTPUT);
    plan::Kernel* k = pb.Kernel("DeformConv", ins, {y});
    PlanBuilder::Int(k, "group", group);
    PlanBuilder::Int(k, "offset_group", og);
    PlanBuilder::Ints(k, "strides", {sh, sw});
    PlanBuilder::Ints(k, "pads", {ph, pw, ph, pw});
    PlanBuilder::Ints(k, "dilations", {dh, dw});
    PlanFile f = pb.Finish();
    auto got = Floats(testing::RunOn(f, MakeCpuBackend(), in)["y"]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
    testing::ExpectEmuMatchesCpu(f, in, 0, 0);
    // The gradient kernel (its values: finite differences in grid_sample_test.cc).
    PlanBuilder gb;
    std::vector<int> gins = {gb.Buffer("dy", DType::kF32, {n, m, oh, ow}, B::INPUT),
                             gb.Buffer("x", DType::kF32, {n, c, h, w}, B::INPUT),
                             gb.Buffer("w", DType::kF32, {m, cpg, kh, kw}, B::INPUT),
                             gb.Buffer("o", DType::kF32, {n, 2 * og * taps, oh, ow}, B::INPUT)};
    std::vector<int> gouts = {gb.Buffer("dx", DType::kF32, {n, c, h, w}, B::OUTPUT),
                              gb.Buffer("dw", DType::kF32, {m, cpg, kh, kw}, B::OUTPUT),
                              gb.Buffer("do", DType::kF32, {n, 2 * og * taps, oh, ow}, B::OUTPUT)};
    if (with_opt) {
      gins.push_back(gb.Buffer("m", DType::kF32, {n, og * taps, oh, ow}, B::INPUT));
      gouts.push_back(gb.Buffer("dm", DType::kF32, {n, og * taps, oh, ow}, B::OUTPUT));
    }
    plan::Kernel* gk = gb.Kernel("a8.DeformConvGrad", gins, gouts);
    PlanBuilder::Int(gk, "group", group);
    PlanBuilder::Int(gk, "offset_group", og);
    PlanBuilder::Ints(gk, "strides", {sh, sw});
    PlanBuilder::Ints(gk, "pads", {ph, pw, ph, pw});
    PlanBuilder::Ints(gk, "dilations", {dh, dw});
    in.erase("b");
    in["dy"] = Bytes(Uniform(n * m * oh * ow, -1, 1, 6));
    testing::ExpectEmuMatchesCpu(gb.Finish(), in, 0, 0);
  }
}

}  // namespace
}  // namespace a8

// The kernels of MaxUnpool, a8.MaxUnpoolGrad, RoiAlign and a8.RoiAlignGrad (kernels/device/
// roi_pool.h): values against double references written from onnx's reference implementation on
// random data, on the CPU backend (which runs the shared bodies through its host launch), and the
// device backend (cuda-emu here, the GPU in a8_gpu_tests) against the CPU. The gradient rules are
// checked against finite differences in roi_pool_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"  // cpu::Cast, used by device_test_util.h
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/device_test_util.h"

namespace a8::testing {
namespace {

using B = plan::Buffer;
using Dims = std::vector<int64_t>;

void Ints(plan::Kernel* k, const std::string& name, const std::vector<int64_t>& v) {
  plan::Attribute* a = k->add_attrs();
  a->set_name(name);
  for (int64_t x : v) a->mutable_ints()->add_values(x);
}

void Float(plan::Kernel* k, const std::string& name, float v) {
  plan::Attribute* a = k->add_attrs();
  a->set_name(name);
  a->set_f(v);
}

// ---- MaxUnpool: a 2x2 stride-2 MaxPool's indices (in each plane, a random tap of each window)
// of X [2, 3, 3, 4] into the inferred [2, 3, 6, 8], written into Y [2, 3, 7, 9] (output_shape).
PlanFile UnpoolPlan(DType t, const Dims& x, const Dims& y, bool grad) {
  PlanBuilder pb;
  const int idx = pb.Buffer("i", DType::kI64, x, B::INPUT);
  plan::Kernel* k;
  if (grad) {
    const int dy = pb.Buffer("dy", t, y, B::INPUT);
    const int dx = pb.Buffer("dx", t, x, B::OUTPUT);
    k = pb.Kernel("a8.MaxUnpoolGrad", {dy, idx}, {dx});
  } else {
    const int xb = pb.Buffer("x", t, x, B::INPUT);
    const int yb = pb.Buffer("y", t, y, B::OUTPUT);
    k = pb.Kernel("MaxUnpool", {xb, idx}, {yb});
  }
  Ints(k, "kernel_shape", {2, 2});
  Ints(k, "strides", {2, 2});
  return pb.Finish();
}

std::vector<int64_t> PoolIndices(const Dims& x, uint32_t seed, bool collide) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> tap(0, 3);
  const int64_t h = x[2], w = x[3], ih = 2 * h, iw = 2 * w;
  std::vector<int64_t> out;
  for (int64_t p = 0; p < x[0] * x[1]; ++p) {
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t c = 0; c < w; ++c) {
        const int t = collide && c == 1 ? 0 : tap(rng);
        // collide: window (r, 1) points at window (r, 0)'s first tap, overwriting it.
        const int64_t cc = collide && c == 1 ? 0 : 2 * c + t % 2;
        out.push_back(p * ih * iw + (2 * r + t / 2) * iw + cc);
      }
    }
  }
  return out;
}

TEST(MaxUnpoolKernelTest, MatchesReferenceAndEmu) {
  const Dims x = {2, 3, 3, 4}, y = {2, 3, 7, 9};
  for (bool collide : {false, true}) {
    const std::vector<int64_t> idx = PoolIndices(x, 5, collide);
    const std::vector<uint8_t> xb = RandomBytes(DType::kF64, Count(x), 6, -1, 1);
    const std::vector<uint8_t> dyb = RandomBytes(DType::kF64, Count(y), 7, -1, 1);
    const std::vector<double> xv = AsDoubles(DType::kF64, xb), dyv = AsDoubles(DType::kF64, dyb);
    // The reference: the inferred tensor [2, 3, 6, 8] written in element order, placed at the
    // start of Y; dX reads dY where the element stayed.
    std::vector<double> want_y(Count(y), 0), want_dx(Count(x), 0);
    std::vector<int64_t> writer(Count(y), -1);
    for (int64_t i = 0; i < Count(x); ++i) {
      const int64_t plane = idx[i] / 48, rest = idx[i] % 48;
      const int64_t o = plane * 63 + (rest / 8) * 9 + rest % 8;
      want_y[o] = xv[i];
      writer[o] = i;
    }
    for (int64_t o = 0; o < Count(y); ++o) {
      if (writer[o] >= 0) want_dx[writer[o]] = dyv[o];
    }
    auto got_y =
        AsDoubles(DType::kF64, RunOn(UnpoolPlan(DType::kF64, x, y, false), MakeCpuBackend(),
                                     {{"x", xb}, {"i", Bytes(idx)}})["y"]);
    auto got_dx =
        AsDoubles(DType::kF64, RunOn(UnpoolPlan(DType::kF64, x, y, true), MakeCpuBackend(),
                                     {{"dy", dyb}, {"i", Bytes(idx)}})["dx"]);
    EXPECT_EQ(got_y, want_y);
    EXPECT_EQ(got_dx, want_dx);
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
      SCOPED_TRACE(DTypeName(t));
      ExpectEmuMatchesCpu(UnpoolPlan(t, x, y, false), {{"i", Bytes(idx)}}, 0, 0);
      ExpectEmuMatchesCpu(UnpoolPlan(t, x, y, true), {{"i", Bytes(idx)}}, 0, 0);
    }
  }
}

// An index outside its (n, c) plane is the kernel's error, not a write out of bounds.
TEST(MaxUnpoolKernelTest, IndexOutsideItsPlaneIsAnError) {
  const Dims x = {1, 2, 1, 1}, y = {1, 2, 2, 2};
  PlanFile f = UnpoolPlan(DType::kF32, x, y, false);
  auto ex = Executor::Create(std::move(f), MakeCpuBackend());
  ASSERT_TRUE(ex.ok());
  const std::vector<float> xv = {1, 2};
  const std::vector<int64_t> iv = {0, 1};  // plane 1's index 1 lies in plane 0
  ASSERT_TRUE((*ex)->SetInput("x", xv.data(), 8).ok());
  ASSERT_TRUE((*ex)->SetInput("i", iv.data(), 16).ok());
  Status s = (*ex)->Run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("MaxUnpool"), std::string::npos) << s.message();
}

// ---- RoiAlign: onnx's reference in double.
struct RoiCase {
  std::string mode, ctm;
  int64_t out_h, out_w, sampling_ratio;
  float scale;
};

std::vector<double> RefRoiAlign(const RoiCase& c, const Dims& xd, const std::vector<double>& x,
                                const std::vector<double>& rois, const std::vector<int64_t>& bi) {
  const int64_t ch = xd[1], h = xd[2], w = xd[3], nr = static_cast<int64_t>(bi.size());
  std::vector<double> y(nr * ch * c.out_h * c.out_w);
  const bool half = c.ctm == "half_pixel";
  for (int64_t r = 0; r < nr; ++r) {
    const double off = half ? 0.5 : 0;
    const double sw = rois[4 * r] * c.scale - off, sh = rois[4 * r + 1] * c.scale - off;
    double rw = rois[4 * r + 2] * c.scale - off - sw, rh = rois[4 * r + 3] * c.scale - off - sh;
    if (!half) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / c.out_h, bw = rw / c.out_w;
    const int64_t gh = c.sampling_ratio > 0 ? c.sampling_ratio : int64_t(std::ceil(bh));
    const int64_t gw = c.sampling_ratio > 0 ? c.sampling_ratio : int64_t(std::ceil(bw));
    const double count = std::max<int64_t>(gh * gw, 1);
    for (int64_t k = 0; k < ch; ++k) {
      const double* plane = x.data() + (bi[r] * ch + k) * h * w;
      for (int64_t ph = 0; ph < c.out_h; ++ph) {
        for (int64_t pw = 0; pw < c.out_w; ++pw) {
          double out = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy) {
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = sh + ph * bh + (iy + 0.5) * bh / gh;
              double xx = sw + pw * bw + (ix + 0.5) * bw / gw;
              double v[4] = {0, 0, 0, 0};
              if (!(yy < -1 || yy > h || xx < -1 || xx > w)) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                int64_t yl = int64_t(yy), xl = int64_t(xx), yh, xh;
                if (yl >= h - 1) {
                  yh = yl = h - 1;
                  yy = double(yl);
                } else {
                  yh = yl + 1;
                }
                if (xl >= w - 1) {
                  xh = xl = w - 1;
                  xx = double(xl);
                } else {
                  xh = xl + 1;
                }
                const double ly = yy - yl, lx = xx - xl;
                v[0] = (1 - ly) * (1 - lx) * plane[yl * w + xl];
                v[1] = (1 - ly) * lx * plane[yl * w + xh];
                v[2] = ly * (1 - lx) * plane[yh * w + xl];
                v[3] = ly * lx * plane[yh * w + xh];
              } else if (c.mode == "max") {
                v[0] = v[1] = v[2] = v[3] = 0;
              }
              if (c.mode == "avg") {
                out += v[0] + v[1] + v[2] + v[3];
              } else {
                const double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                out = first ? m : std::max(out, m);
                first = false;
              }
            }
          }
          y[((r * ch + k) * c.out_h + ph) * c.out_w + pw] = c.mode == "avg" ? out / count : out;
        }
      }
    }
  }
  return y;
}

PlanFile RoiPlan(DType t, const RoiCase& c, const Dims& xd, int64_t nr, bool grad) {
  PlanBuilder pb;
  const Dims yd = {nr, xd[1], c.out_h, c.out_w};
  const int x = pb.Buffer("x", t, xd, B::INPUT);
  const int rois = pb.Buffer("rois", t, {nr, 4}, B::INPUT);
  const int bi = pb.Buffer("bi", DType::kI64, {nr}, B::INPUT);
  plan::Kernel* k;
  if (grad) {
    const int dy = pb.Buffer("dy", t, yd, B::INPUT);
    const int dx = pb.Buffer("dx", t, xd, B::OUTPUT);
    k = pb.Kernel("a8.RoiAlignGrad", {x, rois, bi, dy}, {dx});
  } else {
    const int y = pb.Buffer("y", t, yd, B::OUTPUT);
    k = pb.Kernel("RoiAlign", {x, rois, bi}, {y});
  }
  Str(k, "mode", c.mode);
  Str(k, "coordinate_transformation_mode", c.ctm);
  PlanBuilder::Int(k, "output_height", c.out_h);
  PlanBuilder::Int(k, "output_width", c.out_w);
  PlanBuilder::Int(k, "sampling_ratio", c.sampling_ratio);
  Float(k, "spatial_scale", c.scale);
  return pb.Finish();
}

// Rois inside, across the border and beyond the image (random corners in [-3, 12] of a 9 x 10
// image at scale 1, or of its double at 0.5), two images.
TEST(RoiAlignKernelTest, MatchesReferenceAndEmu) {
  const Dims xd = {2, 3, 9, 10};
  const int64_t nr = 5;
  const RoiCase cases[] = {{"avg", "half_pixel", 3, 4, 2, 1.0f},
                           {"avg", "output_half_pixel", 2, 3, 0, 0.5f},
                           {"max", "output_half_pixel", 3, 3, 2, 1.0f},
                           {"max", "half_pixel", 2, 2, 0, 0.5f},
                           {"avg", "half_pixel", 4, 4, 0, 1.0f}};
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> corner(-3, 12);
  for (const RoiCase& c : cases) {
    SCOPED_TRACE(c.mode + " " + c.ctm + " " + std::to_string(c.sampling_ratio));
    std::vector<double> rois;
    for (int64_t r = 0; r < nr; ++r) {
      const double a = corner(rng), b = corner(rng), d = corner(rng), e = corner(rng);
      rois.insert(rois.end(), {std::min(a, b) / c.scale, std::min(d, e) / c.scale,
                               std::max(a, b) / c.scale, std::max(d, e) / c.scale});
    }
    const std::vector<int64_t> bi = {0, 1, 1, 0, 1};
    const std::vector<uint8_t> xb = RandomBytes(DType::kF64, Count(xd), 4, -1, 1);
    const std::vector<double> xv = AsDoubles(DType::kF64, xb);
    const std::vector<double> want = RefRoiAlign(c, xd, xv, rois, bi);
    const std::map<std::string, std::vector<uint8_t>> in = {
        {"x", xb}, {"rois", Bytes(rois)}, {"bi", Bytes(bi)}};
    auto got = AsDoubles(DType::kF64,
                         RunOn(RoiPlan(DType::kF64, c, xd, nr, false), MakeCpuBackend(), in)["y"]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
      SCOPED_TRACE(DTypeName(t));
      std::map<std::string, std::vector<uint8_t>> tin;
      tin["bi"] = Bytes(bi);
      std::vector<uint8_t> rb(rois.size() * DTypeSize(t));
      ASSERT_TRUE(cpu::Cast(DType::kF64, t, rois.size(), rois.data(), rb.data()).ok());
      tin["rois"] = rb;
      ExpectEmuMatchesCpu(RoiPlan(t, c, xd, nr, false), tin, 0, 0);
      if (c.mode == "avg") ExpectEmuMatchesCpu(RoiPlan(t, c, xd, nr, true), tin, 0, 0);
    }
  }
}

// The gradient kernel is the forward's adjoint: <RoiAlign(x), dy> = <x, RoiAlignGrad(dy)>.
TEST(RoiAlignKernelTest, GradientIsTheAdjoint) {
  const Dims xd = {2, 2, 6, 7};
  const RoiCase c = {"avg", "half_pixel", 3, 2, 0, 1.0f};
  const std::vector<double> rois = {0.5, 1, 5, 4.5, -1, -0.5, 3, 7, 2, 2, 6.5, 5.5};
  const std::vector<int64_t> bi = {1, 0, 1};
  const std::vector<uint8_t> xb = RandomBytes(DType::kF64, Count(xd), 2, -1, 1);
  const std::vector<uint8_t> dyb = RandomBytes(DType::kF64, 3 * 2 * 3 * 2, 3, -1, 1);
  auto y =
      AsDoubles(DType::kF64, RunOn(RoiPlan(DType::kF64, c, xd, 3, false), MakeCpuBackend(),
                                   {{"x", xb}, {"rois", Bytes(rois)}, {"bi", Bytes(bi)}})["y"]);
  auto dx = AsDoubles(
      DType::kF64, RunOn(RoiPlan(DType::kF64, c, xd, 3, true), MakeCpuBackend(),
                         {{"x", xb}, {"rois", Bytes(rois)}, {"bi", Bytes(bi)}, {"dy", dyb}})["dx"]);
  const std::vector<double> xv = AsDoubles(DType::kF64, xb), dyv = AsDoubles(DType::kF64, dyb);
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < y.size(); ++i) lhs += y[i] * dyv[i];
  for (size_t i = 0; i < dx.size(); ++i) rhs += xv[i] * dx[i];
  EXPECT_NEAR(lhs, rhs, 1e-12);
  EXPECT_NE(rhs, 0.0);
}

}  // namespace
}  // namespace a8::testing

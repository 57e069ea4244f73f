// The convolution and pooling gradient kernels (kernels/cpu/grad_conv_pool.h) against central
// differences of the forward kernels in float64, and in f32/f16/bf16 against their own float64
// results on the same rounded inputs. The gradient rules that emit these kernels are tested in
// grad_nn_test.cc; the shared bodies of the other NN gradients (Softmax, Dropout, the losses) in
// shared_grad_nn_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/grad_conv_pool.h"
#include "kernels/cpu/kernels.h"
#include "tests/unit/cpu_kernels_grad_util.h"

namespace a8 {
namespace {

using cpu::Dims;

using namespace cpu::testing;  // Vec, Uniform, NumericGrad, CheckKernel

// Runs `f` with its float operands stored as `dt` (each Vec converted in, results converted back):
// `f(dt, inputs as buffers, outputs)`.
using Bufs = std::vector<cpu::testing::Buffer>;
Vec RunAs(DType dt, const std::vector<Vec>& ins, size_t out_n,
          const std::function<Status(Bufs&, cpu::testing::Buffer&)>& f) {
  Bufs b;
  for (const Vec& v : ins) b.push_back(cpu::testing::FromValues(dt, {int64_t(v.size())}, v));
  cpu::testing::Buffer out = cpu::testing::MakeBuffer(dt, {int64_t(out_n)});
  Status s = f(b, out);
  EXPECT_TRUE(s.ok()) << s.message();
  return cpu::testing::Values(out);
}

// CheckKernel of a kernel that `run(dt, inputs, output)` calls on its operands stored as `dt`,
// writing `out_n` values.
using KernelAs = std::function<Status(DType, Bufs&, cpu::testing::Buffer&)>;
void CheckKernelAs(size_t out_n, const KernelAs& run, const std::vector<Vec>& inputs,
                   const Vec& numeric, const std::string& what) {
  CheckKernel(
      [&](DType dt, const std::vector<Vec>& in) {
        return RunAs(dt, in, out_n,
                     [&](Bufs& b, cpu::testing::Buffer& o) { return run(dt, b, o); });
      },
      inputs, numeric, what);
}

// ---- convolution

struct GradConvCase {
  Dims x, w;  // X [N, C, in...], W [M, C / group, k...]
  int64_t group;
  Dims strides, dilations, pads;
};

cpu::ConvParams ParamsOf(const GradConvCase& c, DType dt) {
  cpu::ConvParams p;
  p.dtype = dt;
  p.batch = c.x[0];
  p.in_channels = c.x[1];
  p.out_channels = c.w[0];
  p.group = c.group;
  p.in_spatial.assign(c.x.begin() + 2, c.x.end());
  p.kernel.assign(c.w.begin() + 2, c.w.end());
  p.strides = c.strides;
  p.dilations = c.dilations;
  p.pads = c.pads;
  return p;
}

TEST(GradNnKernelTest, ConvFilterAndInputGradients) {
  const GradConvCase cases[] = {
      {{2, 3, 7, 6}, {4, 3, 3, 2}, 1, {2, 1}, {1, 2}, {1, 0, 2, 1}},
      {{1, 4, 5, 5}, {6, 2, 3, 3}, 2, {}, {}, {1, 1, 1, 1}},
      {{3, 2, 9}, {5, 2, 4}, 1, {3}, {}, {2, 0}},
      {{1, 2, 4, 3, 5}, {2, 1, 2, 2, 3}, 2, {1, 2, 2}, {}, {0, 1, 1, 1, 0, 0}},
  };
  for (const GradConvCase& c : cases) {
    const cpu::ConvParams p64 = ParamsOf(c, DType::kF64);
    Dims out = cpu::ConvOutputSpatial(p64, false).value();
    Dims y = {c.x[0], c.w[0]};
    y.insert(y.end(), out.begin(), out.end());
    const size_t nx = cpu::NumElements(c.x), nw = cpu::NumElements(c.w), ny = cpu::NumElements(y);
    const Vec x = Uniform(nx, 1), w = Uniform(nw, 2), r = Uniform(ny, 3);
    auto conv = [&](const Vec& xx, const Vec& ww) {
      Vec yy(ny);
      EXPECT_TRUE(cpu::Conv(p64, xx.data(), ww.data(), nullptr, yy.data()).ok());
      return yy;
    };
    CheckKernelAs(
        nw,
        [&](DType dt, Bufs& b, cpu::testing::Buffer& o) {
          return cpu::ConvGradFilter(ParamsOf(c, dt), b[0].data(), b[1].data(), o.data());
        },
        {r, x}, NumericGrad([&](const Vec& ww) { return conv(x, ww); }, w, r), "dW");
    // dX is ConvTranspose(dY, W) with the output_padding that restores X (the Conv rule).
    CheckKernelAs(
        nx,
        [&](DType dt, Bufs& b, cpu::testing::Buffer& o) {
          cpu::ConvParams t = ParamsOf(c, dt);
          t.in_channels = c.w[0];
          t.out_channels = c.x[1];
          t.in_spatial = out;
          t.output_padding.clear();
          for (size_t i = 0; i < out.size(); ++i) {
            const int64_t s = c.strides.empty() ? 1 : c.strides[i];
            const int64_t d = c.dilations.empty() ? 1 : c.dilations[i];
            const int64_t pads = c.pads[i] + c.pads[i + out.size()];
            t.output_padding.push_back(c.x[i + 2] -
                                       (s * (out[i] - 1) + (c.w[i + 2] - 1) * d + 1 - pads));
          }
          return cpu::ConvTranspose(t, b[0].data(), b[1].data(), nullptr, o.data());
        },
        {r, w}, NumericGrad([&](const Vec& xx) { return conv(xx, w); }, x, r), "dX");
  }
}

// ---- pooling

TEST(GradNnKernelTest, MaxAndAveragePoolGradients) {
  const PoolCase cases[] = {
      {{2, 3, 7, 6}, {3, 2}, {2, 2}, {}, {1, 0, 1, 1}, false, false},
      {{1, 2, 8, 7}, {3, 3}, {2, 3}, {1, 1}, {1, 1, 1, 1}, true, true},
      {{3, 2, 11}, {4}, {3}, {2}, {2, 1}, true, false},
      {{1, 2, 4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {}, {0, 1, 1, 1, 0, 0}, false, true},
      {{2, 3, 7, 6}, {3, 3}, {1, 1}, {}, {}, false, false},      // inside, overlapping
      {{2, 2, 9, 7}, {3, 2}, {1, 2}, {2, 2}, {}, false, false},  // inside, dilated
      {{2, 3, 4, 4}, {4, 4}, {}, {}, {}, false, false},  // GlobalMaxPool / GlobalAveragePool
  };
  for (const PoolCase& c : cases) {
    const cpu::PoolParams p64 = ParamsOf(c, DType::kF64);
    Dims out = cpu::PoolOutputSpatial(p64).value();
    const size_t nx = cpu::NumElements(c.x), ny = c.x[0] * c.x[1] * cpu::NumElements(out);
    const Vec x = Uniform(nx, 4), r = Uniform(ny, 5);
    auto pool = [&](bool max, const Vec& xx) {
      Vec yy(ny);
      EXPECT_TRUE((max ? cpu::MaxPool(p64, xx.data(), yy.data(), nullptr)
                       : cpu::AveragePool(p64, xx.data(), yy.data()))
                      .ok());
      return yy;
    };
    CheckKernelAs(
        nx,
        [&](DType dt, Bufs& b, cpu::testing::Buffer& o) {
          return cpu::MaxPoolGrad(ParamsOf(c, dt), b[0].data(), b[1].data(), o.data());
        },
        {r, x}, NumericGrad([&](const Vec& xx) { return pool(true, xx); }, x, r), "MaxPool");
    CheckKernelAs(
        nx,
        [&](DType dt, Bufs& b, cpu::testing::Buffer& o) {
          return cpu::AveragePoolGrad(ParamsOf(c, dt), b[0].data(), o.data());
        },
        {r}, NumericGrad([&](const Vec& xx) { return pool(false, xx); }, x, r), "AveragePool");
  }
}

// MaxPoolGrad sends each dY element to the input the forward's indices name (its window's first
// maximum), summed where windows overlap: on ties and NaNs (a NaN first tap stays the maximum, a
// later NaN never wins), for windows wholly inside the input (the unchecked path) and padded ones.
TEST(GradNnKernelTest, MaxPoolGradGoesWhereTheForwardIndicesPoint) {
  const PoolCase cases[] = {
      {{2, 3, 6, 7}, {2, 2}, {1, 1}, {}, {}, false, false},            // overlapping, inside
      {{2, 2, 9, 7}, {3, 2}, {1, 2}, {2, 2}, {}, false, false},        // dilated, inside
      {{3, 2, 11}, {3}, {1}, {2}, {}, false, false},                   // 1-D
      {{1, 2, 5, 4, 6}, {2, 3, 2}, {1, 1, 2}, {}, {}, false, false},   // 3-D
      {{2, 2, 7, 8}, {3, 3}, {2, 2}, {}, {1, 1, 1, 0}, false, false},  // padded
  };
  std::mt19937 rng(11);
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.x));
    const cpu::PoolParams p = ParamsOf(c, DType::kF32);
    const Dims out = cpu::PoolOutputSpatial(p).value();
    const size_t nx = cpu::NumElements(c.x), ny = c.x[0] * c.x[1] * cpu::NumElements(out);
    std::vector<float> x(nx), dy(ny), y(ny), dx(nx, -1);
    for (float& v : x) {  // few distinct values, so windows tie; a few NaNs
      const int r = static_cast<int>(rng() % 16);
      v = r == 0 ? std::nanf("") : static_cast<float>(r % 3);
    }
    for (float& v : dy) v = static_cast<float>(rng() % 1000) / 64.0f - 7.0f;
    std::vector<int64_t> at(ny);
    ASSERT_TRUE(cpu::MaxPool(p, x.data(), y.data(), at.data()).ok());
    std::vector<double> want(nx, 0.0);
    for (size_t o = 0; o < ny; ++o) want[at[o]] += dy[o];
    ASSERT_TRUE(cpu::MaxPoolGrad(p, dy.data(), x.data(), dx.data()).ok());
    for (size_t i = 0; i < nx; ++i) EXPECT_NEAR(dx[i], want[i], 1e-4) << "element " << i;
  }
}

}  // namespace
}  // namespace a8

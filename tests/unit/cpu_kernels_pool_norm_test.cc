#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/pool.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using namespace testing;  // cpu::testing: Buffer, ExpectClose, ExpectRoundedExactly, FromValues,
                          // MakeBuffer, RandomBuffer, Values

struct PoolCase {
  Dims in, kernel, strides, dilations, pads;
  bool ceil_mode, count_include_pad;
};

// Direct float64 pooling, padded to 3 spatial dims; fills max indices.
void RefPool(const PoolCase& pc, const Dims& out_sp, int64_t planes, const std::vector<double>& x,
             std::vector<double>* max_out, std::vector<double>* max_idx,
             std::vector<double>* avg_out) {
  const size_t r = pc.in.size();
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
          pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  for (size_t i = 0; i < r; ++i) {
    size_t j = 3 - r + i;
    in[j] = pc.in[i], k[j] = pc.kernel[i], out[j] = out_sp[i];
    if (!pc.strides.empty()) s[j] = pc.strides[i];
    if (!pc.dilations.empty()) d[j] = pc.dilations[i];
    if (!pc.pads.empty()) pb[j] = pc.pads[i], pe[j] = pc.pads[r + i];
  }
  const int64_t in_size = in[0] * in[1] * in[2], out_size = out[0] * out[1] * out[2];
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t o = 0; o < out_size; ++o) {
      int64_t oi[3] = {o / (out[1] * out[2]), (o / out[2]) % out[1], o % out[2]};
      double best = -INFINITY, sum = 0;
      int64_t best_i = -1, inside = 1, padded = 1;
      for (int a = 0; a < 3; ++a) {
        int64_t ni = 0, np = 0;
        for (int64_t t = 0; t < k[a]; ++t) {
          int64_t pos = oi[a] * s[a] - pb[a] + t * d[a];
          ni += pos >= 0 && pos < in[a];
          np += pos >= -pb[a] && pos < in[a] + pe[a];
        }
        inside *= ni;
        padded *= np;
      }
      for (int64_t t = 0; t < k[0] * k[1] * k[2]; ++t) {
        int64_t ti[3] = {t / (k[1] * k[2]), (t / k[2]) % k[1], t % k[2]};
        const int64_t idx = WindowTapSource(oi, ti, s, pb, d, in);
        if (idx < 0) continue;
        double v = x[pl * in_size + idx];
        sum += v;
        if (v > best) best = v, best_i = pl * in_size + idx;
      }
      max_out->push_back(best);
      max_idx->push_back(static_cast<double>(best_i));
      avg_out->push_back(sum / static_cast<double>(pc.count_include_pad ? padded : inside));
    }
  }
}

TEST(CpuKernelPoolTest, MaxAndAverageMatchFloat64) {
  std::vector<PoolCase> cases = {
      {{9, 7}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, false, false},
      {{9, 7}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, true, true},
      {{17}, {3}, {2}, {2}, {1, 2}, true, false},
      {{5, 4, 6}, {2, 3, 2}, {1, 2, 2}, {}, {0, 1, 1, 1, 0, 0}, false, true},
      {{65}, {1}, {3}, {}, {}, true, false},
      {{7, 7}, {2, 2}, {1, 1}, {2, 1}, {}, false, false},
      // No pads or dilations: MaxPool without indices takes the bounds-check-free path.
      {{8, 8}, {2, 2}, {2, 2}, {}, {}, false, false},
      {{7, 9}, {2, 2}, {2, 2}, {}, {}, false, false},
      {{9, 7}, {3, 2}, {2, 3}, {}, {}, false, false},
      {{9, 7}, {3, 2}, {2, 3}, {}, {}, true, false},
      {{13}, {3}, {2}, {}, {}, false, false},
  };
  std::mt19937_64 rng(20);
  int ci = 0;
  for (const PoolCase& pc : cases) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8}) {
      SCOPED_TRACE(std::string(ElemName(dt)) + " case " + std::to_string(ci));
      PoolParams p;
      p.dtype = dt;
      p.batch = 2, p.channels = 3;
      p.in_spatial = pc.in, p.kernel = pc.kernel, p.strides = pc.strides;
      p.dilations = pc.dilations, p.pads = pc.pads, p.ceil_mode = pc.ceil_mode;
      p.count_include_pad = pc.count_include_pad;
      auto out_sp = PoolOutputSpatial(p);
      ASSERT_TRUE(out_sp.ok()) << out_sp.status().message();
      Dims xd = {2, 3}, yd = {2, 3};
      xd.insert(xd.end(), pc.in.begin(), pc.in.end());
      yd.insert(yd.end(), out_sp->begin(), out_sp->end());
      Buffer x = RandomBuffer(dt, xd, rng, -100, 100);
      Buffer ymax = MakeBuffer(dt, yd);
      std::vector<int64_t> idx(NumElements(yd));
      ASSERT_TRUE(MaxPool(p, x.data(), ymax.data(), idx.data()).ok());
      std::vector<double> want_max, want_idx, want_avg;
      RefPool(pc, *out_sp, 6, Values(x), &want_max, &want_idx, &want_avg);
      ExpectRoundedExactly(ymax, want_max);
      Buffer ymax_no_idx = MakeBuffer(dt, yd);
      ASSERT_TRUE(MaxPool(p, x.data(), ymax_no_idx.data(), nullptr).ok());
      ExpectRoundedExactly(ymax_no_idx, want_max);
      // Ties (possible in i8 and f16) may pick another index with the same value.
      std::vector<double> xv = Values(x);
      for (size_t i = 0; i < idx.size(); ++i) ASSERT_EQ(xv[idx[i]], want_max[i]) << i;
      if (dt == DType::kI8) continue;
      Buffer yavg = MakeBuffer(dt, yd);
      ASSERT_TRUE(AveragePool(p, x.data(), yavg.data()).ok());
      ExpectClose(yavg, want_avg, testing::ToleranceFor(dt), nullptr, 1.0);
    }
    ++ci;
  }
}

TEST(CpuKernelPoolTest, CeilModeAndPaddingMatchOnnxRuntime) {
  auto run = [](bool max, Dims in, Dims k, Dims s, Dims pads, bool include) {
    PoolParams p;
    p.in_spatial = in, p.kernel = k, p.strides = s, p.pads = pads, p.ceil_mode = true;
    p.count_include_pad = include;
    std::vector<double> xv;
    for (int64_t i = 1; i <= in[0]; ++i) xv.push_back(static_cast<double>(i));
    Buffer x = FromValues(DType::kF32, {1, 1, in[0]}, xv);
    Buffer y = MakeBuffer(DType::kF32, {1, 1, (*PoolOutputSpatial(p))[0]});
    Status st = max ? MaxPool(p, x.data(), y.data(), nullptr) : AveragePool(p, x.data(), y.data());
    EXPECT_TRUE(st.ok());
    return Values(y);
  };
  // Expected values from onnxruntime (opset 19, CPU).
  EXPECT_EQ(run(true, {5}, {2}, {2}, {0, 1}, false), (std::vector<double>{2, 4, 5}));
  EXPECT_EQ(run(true, {6}, {2}, {2}, {1, 1}, false), (std::vector<double>{1, 3, 5, 6}));
  std::vector<double> a = run(false, {7}, {3}, {2}, {1, 1}, true);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_FLOAT_EQ(a[3], 13.0f / 3);
  EXPECT_EQ(run(false, {7}, {3}, {3}, {1, 0}, true), (std::vector<double>{1, 4, 6.5}));
  EXPECT_EQ(run(false, {7}, {3}, {3}, {1, 0}, false), (std::vector<double>{1.5, 4, 6.5}));
}

// The 2x2 / stride 2 f32 pool (four outputs a step in SSE, a scalar tail) against the scalar
// first-maximum rule bit for bit: ties, NaNs (a NaN first tap stays, a later NaN never wins) and
// signed zeros (-0 before +0 stays -0), at widths with no tail, a tail, and both.
TEST(CpuKernelPoolTest, MaxPool2x2KeepsTheFirstMaximumBitForBit) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float values[] = {nan, -0.0f, 0.0f, 1.0f, 1.0f, -2.0f, 3.0f};
  uint32_t state = 7;
  for (int64_t w : {8, 11, 18}) {
    SCOPED_TRACE("width " + std::to_string(w));
    const int64_t h = 6, planes = 3, ow = w / 2, oh = h / 2;
    std::vector<float> x(static_cast<size_t>(planes * h * w));
    for (float& v : x) {
      state = state * 1664525u + 1013904223u;
      v = values[(state >> 24) % 7];
    }
    PoolParams p;
    p.dtype = DType::kF32;
    p.batch = 1;
    p.channels = planes;
    p.in_spatial = {h, w};
    p.kernel = {2, 2};
    p.strides = {2, 2};
    std::vector<float> y(static_cast<size_t>(planes * oh * ow));
    ASSERT_TRUE(MaxPool(p, x.data(), y.data(), nullptr).ok());
    for (int64_t c = 0; c < planes; ++c) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          const float* r0 = x.data() + (c * h + 2 * i) * w + 2 * j;
          float best = r0[0];
          for (float v : {r0[1], r0[w], r0[w + 1]}) best = v > best ? v : best;
          const float got = y[static_cast<size_t>((c * oh + i) * ow + j)];
          uint32_t a, b;
          std::memcpy(&a, &got, 4);
          std::memcpy(&b, &best, 4);
          EXPECT_EQ(a, b) << "plane " << c << " output " << i << "," << j;
        }
      }
    }
  }
}

TEST(CpuKernelPoolTest, ColumnMajorIndices) {
  // 2x3 plane, 2x2 window at stride 1: onnxruntime numbers storage_order=1 indices h + w * H.
  Buffer x = FromValues(DType::kF32, {1, 2, 2, 3}, {1, 9, 2, 3, 4, 8, 5, 6, 7, 1, 2, 9});
  PoolParams p;
  p.channels = 2;
  p.in_spatial = {2, 3}, p.kernel = {2, 2};
  p.column_major_indices = true;
  Buffer y = MakeBuffer(DType::kF32, {1, 2, 1, 2});
  std::vector<int64_t> idx(4);
  ASSERT_TRUE(MaxPool(p, x.data(), y.data(), idx.data()).ok());
  // The same values and indices as onnxruntime (opset 12, CPU): plane 0: 9 at (h 0, w 1) ->
  // 0 + 1 * 2 = 2, twice; plane 1: 6 at (0, 1) -> 6 + 2, then 9 at (1, 2) -> 6 + 1 + 2 * 2.
  EXPECT_EQ(Values(y), (std::vector<double>{9, 9, 6, 9}));
  EXPECT_EQ(idx, (std::vector<int64_t>{2, 2, 8, 11}));
}

TEST(CpuKernelPoolTest, GlobalPools) {
  std::mt19937_64 rng(21);
  for (DType dt : testing::kFloatDTypes) {
    Buffer x = RandomBuffer(dt, {2, 3, 65}, rng);
    Buffer ya = MakeBuffer(dt, {2, 3}), ym = MakeBuffer(dt, {2, 3});
    ASSERT_TRUE(GlobalAveragePool(dt, 2, 3, 65, x.data(), ya.data()).ok());
    ASSERT_TRUE(GlobalMaxPool(dt, 2, 3, 65, x.data(), ym.data()).ok());
    std::vector<double> xv = Values(x), wa, wm;
    for (int p = 0; p < 6; ++p) {
      double s = 0, m = -INFINITY;
      for (int i = 0; i < 65; ++i) s += xv[p * 65 + i], m = std::max(m, xv[p * 65 + i]);
      wa.push_back(s / 65);
      wm.push_back(m);
    }
    ExpectClose(ya, wa, testing::ToleranceFor(dt), nullptr, 1.0);
    ExpectRoundedExactly(ym, wm);
  }
}

}  // namespace
}  // namespace a8::cpu

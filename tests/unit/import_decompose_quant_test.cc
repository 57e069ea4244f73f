// The integer quantization ops imported as nodes of other ops (import_decompose_quant.cc,
// import_decompose_quant_int.cc): each decomposition, over graph inputs of random data, lowered
// to a plan and run on the CPU backend and on cuda-emu (byte for byte the same), against a
// reference written here in double and int64, with rounding ties (x / scale exactly k + 1/2) and
// saturation at both ends of every integer type; and the errors a bad node gets. The ONNX node
// tests and the schema-history cases run the same ops against onnx's reference and onnxruntime.
// There is no a8_gpu_tests twin: the decompositions add no device code (the ops they are made of
// have their own device tests), and a8_gpu_tests links no compiler.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/verifier.h"
#include "compiler/onnx/import_decompose_internal.h"
#include "kernels/common/float16.h"
#include "kernels/cpu/dtype.h"
#include "passes/lowering/lower.h"
#include "passes/memory/plan_memory.h"
#include "passes/memory/schedule.h"
#include "tests/unit/decompose_test_util.h"
#include "tests/unit/device_test_util.h"
#include "tests/unit/ir_test_util.h"
#include "tests/unit/onnx_test_util.h"

namespace a8::testing {
namespace {

using ::testing::HasSubstr;

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// An operand: its dtype, dims and values (integers and f16 values exact where the test uses them).
struct Tensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  std::vector<double> v;
};
Tensor Data(DType t, std::vector<int64_t> dims, std::vector<double> v) {
  EXPECT_EQ(static_cast<int64_t>(v.size()), Count(dims));
  return Tensor{t, std::move(dims), std::move(v)};
}

std::vector<double> RandomInts(size_t n, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = static_cast<double>(dist(rng));
  return v;
}

// The op decomposed over graph inputs (dtype kBool in `operands`: absent), lowered to a plan and
// run on the CPU backend and on cuda-emu, which must agree byte for byte; the CPU's outputs.
std::vector<Tensor> RunDecomposed(const std::string& op, int version,
                                  const std::vector<Tensor>& operands,
                                  std::map<std::string, Attribute> attrs = {}, int outputs = 1) {
  Graph g;
  g.name = g.source = "quant";
  g.opsets = {{"", 21}};
  DecomposeRequest req;
  req.op = op;
  req.version = version;
  std::map<std::string, std::vector<uint8_t>> feeds;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor& t = operands[i];
    if (t.dtype == DType::kBool) {
      req.inputs.push_back(nullptr);
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    req.inputs.push_back(g.AddInput(name, TensorType{t.dtype, t.dims}));
    std::vector<uint8_t> bytes(t.v.size() * DTypeSize(t.dtype));
    EXPECT_TRUE(
        cpu::Cast(DType::kF64, t.dtype, static_cast<int64_t>(t.v.size()), t.v.data(), bytes.data())
            .ok());
    feeds[name] = std::move(bytes);
  }
  req.attrs = std::move(attrs);
  req.known_dims = [](const Value* v) -> std::optional<std::vector<int64_t>> { return v->dims(); };
  auto outs = DecomposeAsImported(g, std::move(req), outputs);
  EXPECT_TRUE(outs.ok()) << outs.status().message();
  if (!outs.ok()) return {};
  g.SetOutputs(*outs);
  Status verified = Verify(g);
  EXPECT_TRUE(verified.ok()) << verified.message();
  EXPECT_TRUE(Schedule().Run(g).ok());
  EXPECT_TRUE(PlanMemory().Run(g).ok());
  LowerOptions lo;
  lo.model_name = "quant";
  lo.model_hash = "fnv1a64:0000000000000000";
  auto plan = LowerToPlan(g, lo);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return {};
  auto emu = MakeCudaEmuBackend();
  EXPECT_TRUE(emu.ok()) << emu.status().message();
  if (!emu.ok()) return {};
  auto on_cpu = RunOn(*plan, MakeCpuBackend(), feeds);
  auto on_emu = RunOn(*plan, std::move(emu).value(), feeds);
  std::vector<Tensor> result;
  for (Value* v : *outs) {
    const std::vector<uint8_t>& bytes = on_cpu[v->name()];
    EXPECT_EQ(bytes, on_emu[v->name()]) << op << " output " << v->name() << ": cuda-emu differs";
    result.push_back(Tensor{v->dtype(), v->dims(), AsDoubles(v->dtype(), bytes)});
  }
  return result;
}

struct Range {
  DType t;
  double lo, hi;
};
constexpr Range kRanges[] = {{DType::kI8, -128, 127},
                             {DType::kU8, 0, 255},
                             {DType::kI16, -32768, 32767},
                             {DType::kU16, 0, 65535}};

double RoundHalfEven(double v) { return std::nearbyint(v); }  // the default mode: to even

// x along axis 1 of [4, 6, 3]: per axis 6 scales, blocked 2 blocks of 3 (then 4 of 2, cut).
TEST(ImportDecomposeQuantTest, QuantizeLinearRoundsHalfToEvenAndSaturates) {
  const std::vector<int64_t> dims = {4, 6, 3};
  const size_t n = static_cast<size_t>(Count(dims));
  for (const Range& r : kRanges) {
    // Scales are powers of two, so x / scale is exact in float and in double: the ties
    // k + 1/2 are exact, and the reference's rounding is the only rounding.
    const std::vector<double> scales = {0.25, 0.5, 2, 0.125, 1, 4};
    const double span = std::floor((r.hi - r.lo) * 1.5);  // past each end: saturation
    std::vector<double> zps =
        RandomInts(6, static_cast<int64_t>(r.lo), static_cast<int64_t>(r.hi), 3);
    std::vector<double> q = RandomInts(n, 0, 2 * static_cast<int64_t>(span), 5);
    // The channel whose scale and zero point element i of x uses in each mode.
    auto channel = [](int mode, size_t i) -> size_t {
      return mode == 1 ? (i / 3) % 6 : (mode == 2 ? (i / 3) % 6 / 3 * 3 : 0);
    };
    for (int mode = 0; mode < 3; ++mode) {  // per tensor, per axis, blocked
      std::vector<double> x(n);
      for (size_t i = 0; i < n; ++i) {
        const size_t c = channel(mode, i);
        const double k = q[i] - span - zps[c];
        x[i] = (i % 2 == 0 ? k + 0.5 : k + 0.25 * static_cast<double>(i % 4)) * scales[c];
      }
      std::vector<int64_t> pdims =
          mode == 0 ? std::vector<int64_t>{}
                    : (mode == 1 ? std::vector<int64_t>{6} : std::vector<int64_t>{4, 2, 3});
      auto param = [&](const std::vector<double>& per_channel) {
        std::vector<double> v;
        for (int64_t i = 0; i < Count(pdims); ++i) {
          const int64_t c = mode == 1 ? i : (mode == 2 ? (i / 3) % 2 * 3 : 0);
          v.push_back(per_channel[static_cast<size_t>(c)]);
        }
        return v;
      };
      std::map<std::string, Attribute> attrs = {{"axis", 1}};
      if (mode == 2) attrs["block_size"] = 3;
      auto y = RunDecomposed("QuantizeLinear", 21,
                             {Data(DType::kF32, dims, x), Data(DType::kF32, pdims, param(scales)),
                              Data(r.t, pdims, param(zps))},
                             attrs);
      ASSERT_EQ(y.size(), 1u);
      EXPECT_EQ(y[0].dtype, r.t);
      const std::vector<double> got = y[0].v;
      int ties = 0, saturated = 0;
      for (size_t i = 0; i < n; ++i) {
        const size_t c = channel(mode, i);
        const double ref = std::clamp(RoundHalfEven(x[i] / scales[c]) + zps[c], r.lo, r.hi);
        ASSERT_EQ(got[i], ref) << "element " << i << " x " << x[i] << " mode " << mode;
        ties += std::fabs(x[i] / scales[c] - std::trunc(x[i] / scales[c])) == 0.5;
        saturated += ref == r.lo || ref == r.hi;
      }
      EXPECT_GT(ties, 10);
      EXPECT_GT(saturated, 4);
    }
  }
}

// f16 x and scale divide in f16 (numpy's f16 / f16); the default output is uint8.
TEST(ImportDecomposeQuantTest, QuantizeLinearF16DividesInF16) {
  const std::vector<double> x = {1.0, 2.5, -3.0, 300.0, 0.3330078125, 7.0};
  auto y = RunDecomposed("QuantizeLinear", 19,
                         {Data(DType::kF16, {6}, x), Data(DType::kF16, {}, {0.3330078125})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dtype, DType::kU8);
  std::vector<double> ref;
  for (double v : x) {
    const float qf = HalfBitsToFloat(FloatToHalfBits(static_cast<float>(v) / 0.3330078125f));
    ref.push_back(std::clamp(RoundHalfEven(qf), 0.0, 255.0));
  }
  EXPECT_EQ(y[0].v, ref);
}

TEST(ImportDecomposeQuantTest, DequantizeLinearPerAxisAndBlocked) {
  const std::vector<int64_t> dims = {3, 8};
  for (const Range& r : kRanges) {
    std::vector<double> x =
        RandomInts(24, static_cast<int64_t>(r.lo), static_cast<int64_t>(r.hi), 7);
    x[0] = r.lo;
    x[1] = r.hi;
    std::vector<double> zp =
        RandomInts(8, static_cast<int64_t>(r.lo), static_cast<int64_t>(r.hi), 8);
    std::vector<double> s(8);
    for (size_t i = 0; i < 8; ++i) s[i] = 0.001 + 0.37 * static_cast<double>(i);
    // Per axis 1: 8 scales; blocked along 1 with block 3: [3, 3] (the last block cut to 2).
    for (int blocked = 0; blocked < 2; ++blocked) {
      std::vector<int64_t> pdims = blocked ? std::vector<int64_t>{3, 3} : std::vector<int64_t>{8};
      auto pick = [&](const std::vector<double>& v) {
        std::vector<double> out;
        for (int64_t i = 0; i < Count(pdims); ++i)
          out.push_back(v[static_cast<size_t>(i % (blocked ? 3 : 8))]);
        return out;
      };
      std::map<std::string, Attribute> attrs = {{"axis", 1}};
      if (blocked) attrs["block_size"] = 3;
      auto y = RunDecomposed(
          "DequantizeLinear", 21,
          {Data(r.t, dims, x), Data(DType::kF32, pdims, pick(s)), Data(r.t, pdims, pick(zp))},
          attrs);
      ASSERT_EQ(y.size(), 1u);
      EXPECT_EQ(y[0].dtype, DType::kF32);
      const std::vector<double> got = y[0].v;
      for (size_t i = 0; i < 24; ++i) {
        const size_t c = blocked ? (i % 8) / 3 : i % 8;
        const double ref = (x[i] - zp[c]) * static_cast<double>(static_cast<float>(s[c]));
        EXPECT_NEAR(got[i], ref, std::fabs(ref) * 6e-8) << i;  // one float rounding
      }
    }
  }
}

TEST(ImportDecomposeQuantTest, DynamicQuantizeLinearMatchesTheFloatSteps) {
  std::vector<float> x = RandomFloats(30, 9);
  for (float& v : x) v = v * 3 + 1.5f;  // min < 0 < max
  std::vector<double> xd(x.begin(), x.end());
  auto y = RunDecomposed("DynamicQuantizeLinear", 11, {Data(DType::kF32, {5, 6}, xd)}, {}, 3);
  ASSERT_EQ(y.size(), 3u);
  const float mx = std::max(0.0f, *std::max_element(x.begin(), x.end()));
  const float mn = std::min(0.0f, *std::min_element(x.begin(), x.end()));
  const float scale = (mx - mn) / 255.0f;
  const double zp = RoundHalfEven(std::clamp(0.0f - mn / scale, 0.0f, 255.0f));
  EXPECT_EQ(y[1].v, std::vector<double>{scale});
  EXPECT_EQ(y[2].v, std::vector<double>{zp});
  const std::vector<double> got = y[0].v;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(got[i], std::clamp(RoundHalfEven(x[i] / scale) + zp, 0.0, 255.0)) << i;
  }
}

// int64 reference GEMM of (a - za) (b - zb), a [M, K] b [K, N], per-row za and per-column zb.
std::vector<int64_t> RefMatMul(const std::vector<double>& a, const std::vector<double>& b,
                               const std::vector<double>& za, const std::vector<double>& zb,
                               int64_t M, int64_t K, int64_t N) {
  std::vector<int64_t> y(static_cast<size_t>(M * N), 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        y[static_cast<size_t>(i * N + j)] +=
            static_cast<int64_t>(a[static_cast<size_t>(i * K + k)] - za[static_cast<size_t>(i)]) *
            static_cast<int64_t>(b[static_cast<size_t>(k * N + j)] - zb[static_cast<size_t>(j)]);
  return y;
}

TEST(ImportDecomposeQuantTest, MatMulIntegerAndQLinearMatMulAccumulateInInt32) {
  const int64_t M = 5, K = 70, N = 4;  // 70 products of up to 255 * 255: past int16, as int32 must
  std::vector<double> a = RandomInts(M * K, 0, 255, 11), b = RandomInts(K * N, -128, 127, 12);
  std::vector<double> za = RandomInts(M, 0, 255, 13), zb = RandomInts(N, -128, 127, 14);
  const std::vector<int64_t> ref = RefMatMul(a, b, za, zb, M, K, N);
  auto y = RunDecomposed("MatMulInteger", 10,
                         {Data(DType::kU8, {M, K}, a), Data(DType::kI8, {K, N}, b),
                          Data(DType::kU8, {M}, za), Data(DType::kI8, {N}, zb)});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dtype, DType::kI32);
  const std::vector<double> got = y[0].v;
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(got[i], static_cast<double>(ref[i])) << i;

  // Requantized per tensor: m = as * bs / ys in float, acc * m in double, then the zero point.
  const double yz = 3;
  const std::vector<double> za1(M, za[0]), zb1(N, zb[0]);
  const std::vector<int64_t> acc = RefMatMul(a, b, za1, zb1, M, K, N);
  int64_t most = 1;
  for (int64_t v : acc) most = std::max(most, v < 0 ? -v : v);
  // y_scale maps the largest |acc| to 250: the larger values saturate, the others do not.
  const float as = 0.02f, bs = 0.015f, ys = as * bs * static_cast<float>(most) / 250;
  auto q = RunDecomposed(
      "QLinearMatMul", 21,
      {Data(DType::kU8, {M, K}, a), Data(DType::kF32, {}, {as}), Data(DType::kU8, {}, {za[0]}),
       Data(DType::kI8, {K, N}, b), Data(DType::kF32, {}, {bs}), Data(DType::kI8, {}, {zb[0]}),
       Data(DType::kF32, {}, {ys}), Data(DType::kI8, {}, {yz})});
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].dtype, DType::kI8);
  const double m = static_cast<double>(as * bs / ys);
  const std::vector<double> qgot = q[0].v;
  int saturated = 0;
  for (size_t i = 0; i < acc.size(); ++i) {
    const double r = std::clamp(RoundHalfEven(static_cast<double>(acc[i]) * m) + yz, -128.0, 127.0);
    EXPECT_EQ(qgot[i], r) << i;
    saturated += r == -128 || r == 127;
  }
  EXPECT_GT(saturated, 0);
  EXPECT_LT(saturated, static_cast<int>(acc.size()));
}

// Direct int64 convolution, NCHW, of centered x and w (per-channel w zero point), with groups,
// strides, dilations and pads.
TEST(ImportDecomposeQuantTest, ConvIntegerAndQLinearConvMatchADirectConvolution) {
  const int64_t N = 2, C = 4, H = 7, W = 6, M = 6, G = 2, KH = 3, KW = 2;
  const int64_t sh = 2, sw = 1, dh = 1, dw = 2, ph0 = 1, pw0 = 0, ph1 = 2, pw1 = 1;
  const int64_t OH = (H + ph0 + ph1 - ((KH - 1) * dh + 1)) / sh + 1;
  const int64_t OW = (W + pw0 + pw1 - ((KW - 1) * dw + 1)) / sw + 1;
  std::vector<double> x = RandomInts(N * C * H * W, 0, 255, 21);
  std::vector<double> w = RandomInts(M * (C / G) * KH * KW, -128, 127, 22);
  std::vector<double> wz = RandomInts(M, -128, 127, 23), bias = RandomInts(M, -5000, 5000, 24);
  const double xz = 131;
  std::vector<int64_t> acc(static_cast<size_t>(N * M * OH * OW), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t s = 0;
          const int64_t g = m / (M / G);
          for (int64_t c = 0; c < C / G; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * sh - ph0 + kh * dh, iw = ow * sw - pw0 + kw * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;  // pads: centered zeros
                const double xv =
                    x[static_cast<size_t>(((n * C + g * (C / G) + c) * H + ih) * W + iw)];
                const double wv = w[static_cast<size_t>(((m * (C / G) + c) * KH + kh) * KW + kw)];
                s += static_cast<int64_t>(xv - xz) *
                     static_cast<int64_t>(wv - wz[static_cast<size_t>(m)]);
              }
          acc[static_cast<size_t>(((n * M + m) * OH + oh) * OW + ow)] = s;
        }
  const std::map<std::string, Attribute> attrs = {
      {"group", G},
      {"strides", std::vector<int64_t>{sh, sw}},
      {"dilations", std::vector<int64_t>{dh, dw}},
      {"pads", std::vector<int64_t>{ph0, pw0, ph1, pw1}}};
  auto y =
      RunDecomposed("ConvInteger", 10,
                    {Data(DType::kU8, {N, C, H, W}, x), Data(DType::kI8, {M, C / G, KH, KW}, w),
                     Data(DType::kU8, {}, {xz}), Data(DType::kI8, {M}, wz)},
                    attrs);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dims, (std::vector<int64_t>{N, M, OH, OW}));
  const std::vector<double> got = y[0].v;
  for (size_t i = 0; i < acc.size(); ++i) EXPECT_EQ(got[i], static_cast<double>(acc[i])) << i;

  // QLinearConv: per-channel w_scale, int32 bias, uint8 output saturating at both ends.
  std::vector<double> ws(M);
  for (int64_t m = 0; m < M; ++m)
    ws[static_cast<size_t>(m)] = 0.01 + 0.003 * static_cast<double>(m);
  int64_t most = 1;
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t v = acc[i] + static_cast<int64_t>(bias[(i / static_cast<size_t>(OH * OW)) % M]);
    most = std::max(most, v < 0 ? -v : v);
  }
  const float xs = 0.05f, ys = xs * 0.025f * static_cast<float>(most) / 250;
  const double yz = 128;
  auto q = RunDecomposed(
      "QLinearConv", 10,
      {Data(DType::kU8, {N, C, H, W}, x), Data(DType::kF32, {}, {xs}), Data(DType::kU8, {}, {xz}),
       Data(DType::kI8, {M, C / G, KH, KW}, w), Data(DType::kF32, {M}, ws),
       Data(DType::kI8, {M}, wz), Data(DType::kF32, {}, {ys}), Data(DType::kU8, {}, {yz}),
       Data(DType::kI32, {M}, bias)},
      attrs);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].dtype, DType::kU8);
  const std::vector<double> qgot = q[0].v;
  int saturated = 0;
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t m = (i / static_cast<size_t>(OH * OW)) % static_cast<size_t>(M);
    const double mult = static_cast<double>(xs * static_cast<float>(ws[m]) / ys);
    const double v = static_cast<double>(acc[i] + static_cast<int64_t>(bias[m])) * mult;
    const double r = std::clamp(RoundHalfEven(v) + yz, 0.0, 255.0);
    EXPECT_EQ(qgot[i], r) << i;
    saturated += r == 0 || r == 255;
  }
  EXPECT_GT(saturated, 0);
}

TEST(ImportDecomposeQuantTest, BadScaleShapesAndZeroPointTypesNameTheNodeAndInput) {
  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 21]>
g (float[2, 3] x) => (uint8[2, 3] y) <float[2] s = {1, 2}> { y = QuantizeLinear <axis = 1> (x, s) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'QuantizeLinear_0' (QuantizeLinear): input 'y_scale' "
                                     "must have one element or be 1-D with x's dim along axis 1 "
                                     "(3), got shape [2]"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 21]>
g (float[2, 5] x) => (int8[2, 5] y) <float[2, 3] s = {1, 2, 3, 4, 5, 6}, int8[2, 3] z = {0, 0, 0, 0, 0, 0}> { y = QuantizeLinear <axis = 1, block_size = 3> (x, s, z) })");
  EXPECT_THAT(s.message(),
              HasSubstr("input 'y_scale' has shape [2,3]; blocked quantization of x [2,5] along "
                        "axis 1 with block_size 3 needs [2,2]"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 21]>
g (float[4] x) => (int8[4] y) <float s = {1}, uint8 z = {3}> { y = QuantizeLinear <output_dtype = 3> (x, s, z) })");
  EXPECT_THAT(s.message(), HasSubstr("(QuantizeLinear): input 'y_zero_point' is u8 but attribute "
                                     "'output_dtype' says i8"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 21]>
g (int8[4] x) => (float[4] y) <float s = {1}, uint8 z = {3}> { y = DequantizeLinear (x, s, z) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'DequantizeLinear_0' (DequantizeLinear): input "
                                     "'x_zero_point' is u8 but x is i8; they must have one type"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 10]>
g (uint8[2, 3] a, int8[3, 2] b) => (int32[2, 2] y) <int8 za = {1}> { y = MatMulInteger (a, b, za) })");
  EXPECT_THAT(s.message(), HasSubstr("(MatMulInteger): input 'a_zero_point' is i8 but 'A' is u8"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 10]>
g (uint8[2, 3] a, int8[3, 2] b) => (int32[2, 2] y) <uint8[3] za = {1, 2, 3}> { y = MatMulInteger (a, b, za) })");
  EXPECT_THAT(s.message(), HasSubstr("(MatMulInteger): input 'a_zero_point' has 3 elements; per "
                                     "row it needs A's rows (2), got A [2,3]"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 10]>
g (uint8[1, 4, 5, 5] x, int8[6, 2, 3, 3] w) => (int32[1, 6, 3, 3] y) { y = ConvInteger <group = 3> (x, w) })");
  EXPECT_THAT(s.message(), HasSubstr("(ConvInteger): group 3 does not fit x's 4 channels"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 10]>
g (uint8[1, 2, 3, 3] x, int8[4, 2, 1, 1] w) => (uint8[1, 4, 3, 3] y) <float xs = {1}, uint8 xz = {0}, float[3] ws = {1, 1, 1}, int8 wz = {0}, float ys = {1}, uint8 yz = {0}> { y = QLinearConv (x, xs, xz, w, ws, wz, ys, yz) })");
  EXPECT_THAT(s.message(), HasSubstr("(QLinearConv): input 'w_scale' must have one element or be "
                                     "1-D of 4 (the output channels), got shape [3]"));
}

TEST(ImportDecomposeQuantTest, ImportsAsIntegerOps) {
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 10]>
g (uint8[2, 3] a, int8[3, 2] b) => (int32[2, 2] y) { y = MatMulInteger (a, b) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Cast", "Cast", "MatMul"}));
  EXPECT_EQ((*g)->outputs()[0]->dtype(), DType::kI32);
}

}  // namespace
}  // namespace a8::testing

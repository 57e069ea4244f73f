// CPU registry entries against direct calls of the kernels they wrap (attributes, defaults,
// negative axes, constant shape-like inputs), and registry coverage of the kernel catalog.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compiler/plan/kernel_catalog.h"
#include "kernels/cpu/kernels.h"
#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/runtime_test_util.h"
#include "tests/unit/shared_norm_util.h"

namespace a8 {
namespace {

using testing::PlanBuilder;
using B = plan::Buffer;

using testing::RandomNormals;

// Runs a one-step plan with float input "x" and returns output "y" as floats.
std::vector<float> RunPlan(PlanFile f, const std::vector<float>& x) {
  auto ex = Executor::Create(std::move(f), MakeCpuBackend());
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  if (!ex.ok()) return {};
  EXPECT_TRUE((*ex)->SetInput("x", x.data(), x.size() * 4).ok());
  Status s = (*ex)->Run();
  EXPECT_TRUE(s.ok()) << s.message();
  const plan::Buffer* y = (*ex)->FindOutput("y");
  const float* p = reinterpret_cast<const float*>((*ex)->BufferData(y->id()));
  return std::vector<float>(p, p + y->bytes() / 4);
}

void ExpectSame(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
}

TEST(RuntimeCpuKernelsTest, GemmWithTransposeAlphaBetaAndBias) {
  std::vector<float> x = RandomNormals(3 * 5, 1), w = RandomNormals(4 * 5, 2),
                     c = RandomNormals(4, 3);
  PlanBuilder pb;
  int xi = pb.Buffer("x", DType::kF32, {3, 5}, B::INPUT);
  int wi = pb.Buffer("w", DType::kF32, {4, 5}, B::PARAMETER, w.data());
  int ci = pb.Buffer("c", DType::kF32, {4}, B::PARAMETER, c.data());
  int yi = pb.Buffer("y", DType::kF32, {3, 4}, B::OUTPUT);
  plan::Kernel* k = pb.Kernel("Gemm", {xi, wi, ci}, {yi});
  PlanBuilder::Int(k, "transB", 1);
  PlanBuilder::Float(k, "alpha", 0.5f);
  PlanBuilder::Float(k, "beta", 2.0f);
  std::vector<float> got = RunPlan(pb.Finish(), x);
  cpu::GemmParams p;
  p.m = 3, p.n = 4, p.k = 5, p.trans_b = true, p.alpha = 0.5f, p.beta = 2.0f, p.c_dims = {4};
  std::vector<float> want(12);
  ASSERT_TRUE(cpu::Gemm(p, x.data(), w.data(), c.data(), want.data()).ok());
  ExpectSame(got, want);
}

TEST(RuntimeCpuKernelsTest, LayerNormBroadcastsScaleAndBias) {
  // Normalized dims [3, 5]; Scale [1, 5] and B [5] broadcast to them (the shape rule allows it).
  std::vector<float> x = RandomNormals(2 * 3 * 5, 7), scale = RandomNormals(5, 8),
                     bias = RandomNormals(5, 9);
  PlanBuilder pb;
  int xi = pb.Buffer("x", DType::kF32, {2, 3, 5}, B::INPUT);
  int si = pb.Buffer("s", DType::kF32, {1, 5}, B::PARAMETER, scale.data());
  int bi = pb.Buffer("b", DType::kF32, {5}, B::PARAMETER, bias.data());
  int yi = pb.Buffer("y", DType::kF32, {2, 3, 5}, B::OUTPUT);
  PlanBuilder::Int(pb.Kernel("LayerNormalization", {xi, si, bi}, {yi}), "axis", 1);
  std::vector<float> got = RunPlan(pb.Finish(), x);
  std::vector<float> full_scale(15), full_bias(15), want(30);
  for (int i = 0; i < 15; ++i) full_scale[i] = scale[i % 5], full_bias[i] = bias[i % 5];
  testing::norm::LayerNormParams p;
  p.outer = 2, p.inner = 15, p.epsilon = 1e-5f;
  ASSERT_TRUE(testing::norm::LayerNorm(p, x.data(), full_scale.data(), full_bias.data(),
                                       want.data(), nullptr, nullptr)
                  .ok());
  ExpectSame(got, want);
}

TEST(RuntimeCpuKernelsTest, SoftmaxDefaultsToTheLastAxis) {
  std::vector<float> x = RandomNormals(2 * 3 * 7, 4);
  PlanBuilder pb;
  int xi = pb.Buffer("x", DType::kF32, {2, 3, 7}, B::INPUT);
  int yi = pb.Buffer("y", DType::kF32, {2, 3, 7}, B::OUTPUT);
  pb.Kernel("Softmax", {xi}, {yi});  // no axis attribute: ONNX default -1
  std::vector<float> got = RunPlan(pb.Finish(), x), want(x.size());
  ASSERT_TRUE(cpu::Softmax(DType::kF32, {2, 3, 7}, 2, false, x.data(), want.data()).ok());
  ExpectSame(got, want);
}

TEST(RuntimeCpuKernelsTest, SliceReadsConstantInputs) {
  std::vector<float> x = RandomNormals(4 * 6, 5);
  std::vector<int64_t> starts = {-1, 1}, ends = {-5, 100}, axes = {0, -1}, steps = {-2, 2};
  PlanBuilder pb;
  int xi = pb.Buffer("x", DType::kF32, {4, 6}, B::INPUT);
  int s = pb.Buffer("starts", DType::kI64, {2}, B::CONSTANT, starts.data());
  int e = pb.Buffer("ends", DType::kI64, {2}, B::CONSTANT, ends.data());
  int a = pb.Buffer("axes", DType::kI64, {2}, B::CONSTANT, axes.data());
  int st = pb.Buffer("steps", DType::kI64, {2}, B::CONSTANT, steps.data());
  int yi = pb.Buffer("y", DType::kF32, {2, 3}, B::OUTPUT);
  pb.Kernel("Slice", {xi, s, e, a, st}, {yi});
  std::vector<float> got = RunPlan(pb.Finish(), x);
  // rows 3, 1; columns 1, 3, 5
  std::vector<float> want = {x[3 * 6 + 1], x[3 * 6 + 3], x[3 * 6 + 5],
                             x[1 * 6 + 1], x[1 * 6 + 3], x[1 * 6 + 5]};
  ExpectSame(got, want);
}

TEST(RuntimeCpuKernelsTest, ReduceMeanWithAxesInputAndKeepdims) {
  std::vector<float> x = RandomNormals(3 * 4 * 5, 6);
  std::vector<int64_t> axes = {-1, 0};
  PlanBuilder pb;
  int xi = pb.Buffer("x", DType::kF32, {3, 4, 5}, B::INPUT);
  int ai = pb.Buffer("axes", DType::kI64, {2}, B::CONSTANT, axes.data());
  int yi = pb.Buffer("y", DType::kF32, {1, 4, 1}, B::OUTPUT);
  pb.Kernel("ReduceMean", {xi, ai}, {yi});
  std::vector<float> got = RunPlan(pb.Finish(), x);
  ASSERT_EQ(got.size(), 4u);
  for (int j = 0; j < 4; ++j) {
    double sum = 0, magnitude = 0;
    for (int i = 0; i < 3; ++i) {
      for (int k = 0; k < 5; ++k) {
        sum += x[(i * 4 + j) * 5 + k];
        magnitude += std::fabs(x[(i * 4 + j) * 5 + k]);
      }
    }
    EXPECT_NEAR(got[j], sum / 15, 1e-6 * magnitude / 15 + 1e-7) << "output " << j;
  }
}

TEST(RuntimeCpuKernelsTest, ConvWithPadsStridesAndGroups) {
  std::vector<float> x = RandomNormals(2 * 4 * 7 * 6, 7), w = RandomNormals(6 * 2 * 3 * 3, 8),
                     b = RandomNormals(6, 9);
  PlanBuilder pb;
  int xi = pb.Buffer("x", DType::kF32, {2, 4, 7, 6}, B::INPUT);
  int wi = pb.Buffer("w", DType::kF32, {6, 2, 3, 3}, B::PARAMETER, w.data());
  int bi = pb.Buffer("b", DType::kF32, {6}, B::PARAMETER, b.data());
  int yi = pb.Buffer("y", DType::kF32, {2, 6, 4, 3}, B::OUTPUT);
  plan::Kernel* k = pb.Kernel("Conv", {xi, wi, bi}, {yi});
  PlanBuilder::Int(k, "group", 2);
  PlanBuilder::Ints(k, "pads", {1, 0, 1, 1});
  PlanBuilder::Ints(k, "strides", {2, 2});
  std::vector<float> got = RunPlan(pb.Finish(), x), want(2 * 6 * 4 * 3);
  cpu::ConvParams p;
  p.batch = 2, p.in_channels = 4, p.out_channels = 6, p.group = 2;
  p.in_spatial = {7, 6}, p.kernel = {3, 3}, p.pads = {1, 0, 1, 1}, p.strides = {2, 2};
  ASSERT_TRUE(cpu::Conv(p, x.data(), w.data(), b.data(), want.data()).ok());
  ExpectSame(got, want);
}

TEST(RuntimeCpuKernelsTest, LeakyReluUsesTheOnnxDefaultAlpha) {
  std::vector<float> x = RandomNormals(17, 10);
  PlanBuilder pb;
  int xi = pb.Buffer("x", DType::kF32, {17}, B::INPUT);
  int yi = pb.Buffer("y", DType::kF32, {17}, B::OUTPUT);
  pb.Kernel("LeakyRelu", {xi}, {yi});
  std::vector<float> got = RunPlan(pb.Finish(), x);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(got[i], x[i] >= 0 ? x[i] : 0.01f * x[i]) << i;
}

TEST(RuntimeCpuKernelsTest, GatherWithNegativeAxisAndPadWithAxes) {
  std::vector<float> x = RandomNormals(3 * 4, 11);
  std::vector<int64_t> idx = {3, 0, -1}, pads = {1, 2}, axes = {-1};
  PlanBuilder pb;
  int xi = pb.Buffer("x", DType::kF32, {3, 4}, B::INPUT);
  int ii = pb.Buffer("idx", DType::kI64, {3}, B::CONSTANT, idx.data());
  int g = pb.Buffer("g", DType::kF32, {3, 3}, B::INTERMEDIATE);
  int pi = pb.Buffer("pads", DType::kI64, {2}, B::CONSTANT, pads.data());
  int ai = pb.Buffer("axes", DType::kI64, {1}, B::CONSTANT, axes.data());
  int yi = pb.Buffer("y", DType::kF32, {3, 6}, B::OUTPUT);
  plan::Kernel* k = pb.Kernel("Gather", {xi, ii}, {g});
  PlanBuilder::Int(k, "axis", -1);
  pb.Kernel("Pad", {g, pi, -1, ai}, {yi});
  std::vector<float> got = RunPlan(pb.Finish(), x);
  for (int r = 0; r < 3; ++r) {
    std::vector<float> row = {0, x[r * 4 + 3], x[r * 4 + 0], x[r * 4 + 3], 0, 0};
    for (int c = 0; c < 6; ++c) EXPECT_EQ(got[r * 6 + c], row[c]) << r << "," << c;
  }
}

TEST(RuntimeCpuKernelsTest, IntegerGemmWithTransposeAlphaBeta) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int32_t> d(-9, 9);
  std::vector<int32_t> a(5 * 3), b(5 * 4), c(4);
  for (auto* v : {&a, &b, &c})
    for (int32_t& x : *v) x = d(rng);
  PlanBuilder pb;
  int ai = pb.Buffer("a", DType::kI32, {5, 3}, B::INPUT);
  int bi = pb.Buffer("b", DType::kI32, {5, 4}, B::CONSTANT, b.data());
  int ci = pb.Buffer("c", DType::kI32, {1, 4}, B::CONSTANT, c.data());
  int yi = pb.Buffer("y", DType::kI32, {3, 4}, B::OUTPUT);
  plan::Kernel* k = pb.Kernel("Gemm", {ai, bi, ci}, {yi});
  PlanBuilder::Int(k, "transA", 1);
  PlanBuilder::Float(k, "alpha", 2.0f);
  PlanBuilder::Float(k, "beta", 3.0f);
  auto ex = Executor::Create(pb.Finish(), MakeCpuBackend());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  ASSERT_TRUE((*ex)->SetInput("a", a.data(), a.size() * 4).ok());
  ASSERT_TRUE((*ex)->Run().ok());
  const int32_t* y = reinterpret_cast<const int32_t*>((*ex)->BufferData(yi));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      int32_t s = 0;
      for (int q = 0; q < 5; ++q) s += a[q * 3 + i] * b[q * 4 + j];
      EXPECT_EQ(y[i * 4 + j], 2 * s + 3 * c[j]) << i << "," << j;
    }
}

// The registry's shared rows (FindCpuBackendKernel, run outside a prepared plan) report an index
// the kernel itself finds out of range: GatherND's entry leaves the check to its kernel.
TEST(RuntimeCpuKernelsTest, ASharedRowReportsTheKernelsIndexError) {
  plan::Kernel k;
  k.set_op("GatherND");
  std::vector<float> data = {1, 2, 3}, y = {0};
  std::vector<int64_t> idx = {5};
  auto arg = [](DType t, Dims dims, void* p) {
    TensorArg a;
    a.present = true;
    a.dtype = t;
    a.dims = std::move(dims);
    a.data = static_cast<uint8_t*>(p);
    return a;
  };
  KernelArgs args(&k, {arg(DType::kF32, {3}, data.data()), arg(DType::kI64, {1, 1}, idx.data())},
                  {arg(DType::kF32, {1}, y.data())}, {});
  const CpuKernelEntry* e = FindCpuBackendKernel("GatherND");
  ASSERT_NE(e, nullptr);
  const Status s = e->fn(args);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("GatherND: an index or label input is out of range"),
            std::string::npos)
      << s.message();
}

// The dtype a registry entry checks for a catalog kernel name.
TEST(RuntimeCpuKernelsTest, EveryCatalogOpHasACpuEntry) {
  std::vector<std::string> missing, rejected;
  for (const KernelPattern& row : AllKernelPatterns()) {
    const CpuKernelEntry* e = FindCpuBackendKernel(row.op);
    if (e == nullptr) {
      missing.push_back(row.op);
      continue;
    }
    for (const std::string& name : KernelNamesForOp(row.op)) {
      auto sig = ParseKernelName(name);
      ASSERT_TRUE(sig.ok()) << name;
      std::optional<DType> t;
      if (e->type_input < 0)
        t = sig->outputs.at(0);
      else if (e->type_input < static_cast<int>(sig->inputs.size()))
        t = sig->inputs[e->type_input];
      if (!t || std::find(e->types.begin(), e->types.end(), *t) == e->types.end())
        rejected.push_back(name);
    }
  }
  EXPECT_TRUE(missing.empty()) << "catalog ops without a CPU entry: "
                               << ::testing::PrintToString(missing);
  EXPECT_TRUE(rejected.empty()) << "catalog kernels the CPU entry rejects: "
                                << ::testing::PrintToString(rejected);
}

}  // namespace
}  // namespace a8

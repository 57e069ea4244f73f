// The executor on hand-built plans: buffer binding, arena reuse and in-place aliasing, the
// poison_freed debug mode, and errors for unknown kernels before anything runs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/runtime_test_util.h"
#include "tests/unit/temp_path_util.h"

namespace a8 {
namespace {

using testing::PlanBuilder;
using Role = plan::Buffer;  // for Role::INPUT etc.

using testing::RandomNormals;

// y = relu(x @ W) + b, with y reusing x's bytes and the Relu in place over h.
struct MlpPlan {
  std::vector<float> w = RandomNormals(64, 1), b = RandomNormals(8, 2);
  PlanFile Build() {
    PlanBuilder pb;
    int x = pb.Buffer("x", DType::kF32, {4, 8}, Role::INPUT, nullptr, 0);
    int wi = pb.Buffer("W", DType::kF32, {8, 8}, Role::PARAMETER, w.data());
    int bi = pb.Buffer("b", DType::kF32, {8}, Role::CONSTANT, b.data());
    int h = pb.Buffer("h", DType::kF32, {4, 8}, Role::INTERMEDIATE, nullptr, 128);
    int r = pb.Buffer("r", DType::kF32, {4, 8}, Role::INTERMEDIATE, nullptr, 128, h);
    int y = pb.Buffer("y", DType::kF32, {4, 8}, Role::OUTPUT, nullptr, 0);
    pb.Kernel("MatMul", {x, wi}, {h});
    pb.Kernel("Relu", {h}, {r});
    pb.Kernel("Add", {r, bi}, {y});
    return pb.Finish();
  }
  std::vector<double> Reference(const std::vector<float>& x) const {
    std::vector<double> y(32);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 8; ++j) {
        double s = 0;
        for (int k = 0; k < 8; ++k) s += double(x[i * 8 + k]) * w[k * 8 + j];
        y[i * 8 + j] = std::max(s, 0.0) + b[j];
      }
    return y;
  }
};

std::vector<float> RunOnce(Executor& ex, const std::vector<float>& x, const std::string& out) {
  EXPECT_TRUE(ex.SetInput("x", x.data(), x.size() * 4).ok());
  Status s = ex.Run();
  EXPECT_TRUE(s.ok()) << s.message();
  const plan::Buffer* y = ex.FindOutput(out);
  const float* p = reinterpret_cast<const float*>(ex.BufferData(y->id()));
  return std::vector<float>(p, p + y->bytes() / 4);
}

TEST(RuntimeExecutorTest, RunsKernelsInOrderWithArenaReuse) {
  MlpPlan m;
  auto ex = Executor::Create(m.Build(), MakeCpuBackend());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  for (uint32_t step = 0; step < 3; ++step) {  // persistent values survive steps
    std::vector<float> x = RandomNormals(32, 10 + step);
    std::vector<float> y = RunOnce(**ex, x, "y");
    std::vector<double> want = m.Reference(x);
    for (int i = 0; i < 32; ++i) EXPECT_NEAR(y[i], want[i], 1e-5 * (1 + std::abs(want[i])));
  }
  EXPECT_EQ((*ex)->steps_run(), 3);
}

TEST(RuntimeExecutorTest, RunsAPlanReadBackFromAFile) {
  MlpPlan m;
  std::string path = a8::testing::UniqueTempPath("mlp.plan");
  Status w = WritePlanFile(m.Build(), path);
  ASSERT_TRUE(w.ok()) << w.message();
  auto f = ReadPlanFile(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  auto ex = Executor::Create(std::move(f).value(), MakeCpuBackend());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  std::vector<float> x = RandomNormals(32, 30);
  std::vector<float> y = RunOnce(**ex, x, "y");
  std::vector<double> want = m.Reference(x);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(y[i], want[i], 1e-5 * (1 + std::abs(want[i])));
}

TEST(RuntimeExecutorTest, BuffersAre64ByteAligned) {
  MlpPlan m;
  auto ex = Executor::Create(m.Build(), MakeCpuBackend());
  ASSERT_TRUE(ex.ok());
  for (int i = 0; i < (*ex)->plan().buffers_size(); ++i)
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*ex)->BufferData(i)) % 64, 0u) << i;
}

TEST(RuntimeExecutorTest, PoisonModeGivesIdenticalOutputs) {
  MlpPlan m;
  auto plain = Executor::Create(m.Build(), MakeCpuBackend());
  ExecutorOptions opts;
  opts.poison_freed = true;
  auto poisoned = Executor::Create(m.Build(), MakeCpuBackend(), opts);
  ASSERT_TRUE(plain.ok() && poisoned.ok());
  for (uint32_t step = 0; step < 2; ++step) {
    std::vector<float> x = RandomNormals(32, 20 + step);
    std::vector<float> a = RunOnce(**plain, x, "y"), b = RunOnce(**poisoned, x, "y");
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_FALSE(std::isnan(b[i])) << i;
      EXPECT_EQ(std::memcmp(&a[i], &b[i], 4), 0) << i;
    }
  }
}

TEST(RuntimeExecutorTest, PoisonModeExposesATooShortLiveRange) {
  // y = relu(x @ W) + x, but the plan claims x dies after kernel 0.
  MlpPlan m;
  PlanBuilder pb;
  int x = pb.Buffer("x", DType::kF32, {4, 8}, Role::INPUT, nullptr, 0);
  int wi = pb.Buffer("W", DType::kF32, {8, 8}, Role::PARAMETER, m.w.data());
  int h = pb.Buffer("h", DType::kF32, {4, 8}, Role::INTERMEDIATE, nullptr, 128);
  int r = pb.Buffer("r", DType::kF32, {4, 8}, Role::INTERMEDIATE, nullptr, 256);
  int y = pb.Buffer("y", DType::kF32, {4, 8}, Role::OUTPUT, nullptr, 384);
  pb.Kernel("MatMul", {x, wi}, {h});
  pb.Kernel("Relu", {h}, {r});
  pb.Kernel("Add", {r, x}, {y});
  PlanFile f = pb.Finish();
  f.plan.mutable_buffers(x)->set_last(0);
  auto plain = Executor::Create(f, MakeCpuBackend());
  ExecutorOptions opts;
  opts.poison_freed = true;
  auto poisoned = Executor::Create(f, MakeCpuBackend(), opts);
  ASSERT_TRUE(plain.ok() && poisoned.ok());
  std::vector<float> xv = RandomNormals(32, 5);
  std::vector<float> a = RunOnce(**plain, xv, "y"), b = RunOnce(**poisoned, xv, "y");
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(std::isnan(a[i]));
    EXPECT_TRUE(std::isnan(b[i])) << i;
  }
}

TEST(RuntimeExecutorTest, UnknownKernelIsAnErrorBeforeAnythingRuns) {
  PlanBuilder pb;
  int x = pb.Buffer("x", DType::kF32, {4}, Role::INPUT);
  int h = pb.Buffer("h", DType::kF32, {4}, Role::INTERMEDIATE);
  int y = pb.Buffer("y", DType::kF32, {4}, Role::OUTPUT);
  pb.Kernel("Relu", {x}, {h});
  pb.Kernel("NoSuchOp", {h}, {y});
  auto ex = Executor::Create(pb.Finish(), MakeCpuBackend());
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(ex.status().message().find("kernel 1"), std::string::npos) << ex.status().message();
  EXPECT_NE(ex.status().message().find("'NoSuchOp'"), std::string::npos);
}

TEST(RuntimeExecutorTest, UnsupportedDtypeIsAnErrorNamingTheKernel) {
  PlanBuilder pb;
  int x = pb.Buffer("x", DType::kBool, {4}, Role::INPUT);
  int y = pb.Buffer("y", DType::kBool, {4}, Role::OUTPUT);
  pb.Kernel("Sigmoid", {x}, {y});
  auto ex = Executor::Create(pb.Finish(), MakeCpuBackend());
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("Sigmoid:bool->bool"), std::string::npos)
      << ex.status().message();
}

TEST(RuntimeExecutorTest, SetInputChecksNameAndSize) {
  MlpPlan m;
  auto ex = Executor::Create(m.Build(), MakeCpuBackend());
  ASSERT_TRUE(ex.ok());
  std::vector<float> x(32);
  EXPECT_EQ((*ex)->SetInput("nope", x.data(), 128).code(), StatusCode::kInvalidInput);
  EXPECT_EQ((*ex)->SetInput("x", x.data(), 64).code(), StatusCode::kInvalidInput);
  EXPECT_TRUE((*ex)->SetInput("x", x.data(), 128).ok());
}

TEST(RuntimeExecutorTest, RejectsABufferOutsideItsRegion) {
  MlpPlan m;
  PlanFile f = m.Build();
  f.plan.mutable_buffers(3)->set_offset(f.plan.arena_bytes());
  auto ex = Executor::Create(f, MakeCpuBackend());
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("'h'"), std::string::npos) << ex.status().message();
}

TEST(RuntimeExecutorTest, KernelFailureNamesStepAndKernel) {
  // Gather with an out-of-range index fails at run time.
  PlanBuilder pb;
  std::vector<float> data = RandomNormals(6, 3);
  int d = pb.Buffer("data", DType::kF32, {3, 2}, Role::CONSTANT, data.data());
  int idx = pb.Buffer("idx", DType::kI64, {2}, Role::INPUT);
  int y = pb.Buffer("y", DType::kF32, {2, 2}, Role::OUTPUT);
  pb.Kernel("Gather", {d, idx}, {y});
  auto ex = Executor::Create(pb.Finish(), MakeCpuBackend());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  int64_t bad[2] = {0, 7};
  ASSERT_TRUE((*ex)->SetInput("idx", bad, sizeof bad).ok());
  Status s = (*ex)->Run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("step 0: kernel 0 'Gather:f32,i64->f32'"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace a8

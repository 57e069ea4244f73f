// The CUDA backend's machinery through its host emulation (cuda-emu): registry coverage of the
// CPU backend, the executor's device-memory path (regions, copies in and out, training updates,
// the kernel-by-kernel path of --check-numerics and --poison-freed), steps as sequences.
#include "runtime/device/device_backend.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/device_test_util.h"
#include "tests/unit/training_test_util.h"

namespace a8 {
namespace {

TEST(DeviceRegistryTest, CoversEveryCpuKernelWithTheSameDtypes) {
  std::vector<std::string> missing;
  for (const CpuKernelEntry& c : CpuKernelRegistry()) {
    const emu::DevKernelEntry* d = emu::FindDeviceKernel(c.op);
    if (d == nullptr) {
      missing.push_back(c.op);
      continue;
    }
    EXPECT_EQ(d->type_input, c.type_input) << c.op;
    for (DType t : c.types)
      EXPECT_NE(std::find(d->types.begin(), d->types.end(), t), d->types.end())
          << c.op << " takes " << DTypeName(t) << " on the CPU but not on CUDA";
  }
  EXPECT_TRUE(missing.empty()) << "ops of the CPU backend the CUDA backend lacks: "
                               << fmt::format("{}", fmt::join(missing, " "));
}

TEST(DeviceBackendTest, TrainingStepsUpdatesAndEvalMatchTheCpu) {
  testing::TrainPlanOptions o;
  o.n = 37;
  std::map<std::string, std::vector<uint8_t>> inputs;
  testing::ExpectEmuMatchesCpu(testing::BuildTrainPlan(o), inputs, 0, 0, /*steps=*/3);
}

TEST(DeviceBackendTest, ReadWriteAndKernelByKernelPathsAgreeWithTheSequence) {
  testing::TrainPlanOptions o;
  o.n = 9;
  std::vector<float> x = testing::RandomNormals(9, 5);
  auto run = [&](ExecutorOptions opts) {
    auto be = MakeCudaEmuBackend();
    EXPECT_TRUE(be.ok());
    auto ex = Executor::Create(testing::BuildTrainPlan(o), std::move(be).value(), opts);
    EXPECT_TRUE(ex.ok()) << ex.status().message();
    Executor& e = **ex;
    EXPECT_FALSE(e.backend().host_memory());
    for (int s = 0; s < 2; ++s) {
      EXPECT_TRUE(e.SetInput("x", x.data(), x.size() * sizeof(float)).ok());
      Status st = e.Run();
      EXPECT_TRUE(st.ok()) << st.message();
    }
    EXPECT_TRUE(e.SetInput("x", x.data(), x.size() * sizeof(float)).ok());
    Status ev = e.RunEval();
    EXPECT_TRUE(ev.ok()) << ev.message();
    EXPECT_EQ(e.step(), 2);
    std::vector<float> w(9);
    const int w_id = e.plan().updates(0).target();
    EXPECT_TRUE(e.ReadBuffer(w_id, w.data()).ok());
    return w;
  };
  std::vector<float> plain = run({});
  ExecutorOptions checked;
  checked.check_numerics = true;
  checked.poison_freed = true;
  EXPECT_EQ(run(checked), plain);
  // W <- W + x each step, from the plan's initial W.
  std::vector<float> w0 = testing::RandomNormals(9, 7);
  for (int i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(plain[i], (w0[i] + x[i]) + x[i]) << i;
}

TEST(DeviceBackendTest, WriteBufferRoundTripsAndBadIdsAreErrors) {
  auto be = MakeCudaEmuBackend();
  ASSERT_TRUE(be.ok());
  auto ex = Executor::Create(testing::BuildTrainPlan(), std::move(be).value());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  std::vector<float> v = {1, 2, 3, 4}, back(4);
  const int w_id = (*ex)->plan().updates(0).target();
  ASSERT_TRUE((*ex)->WriteBuffer(w_id, v.data()).ok());
  ASSERT_TRUE((*ex)->ReadBuffer(w_id, back.data()).ok());
  EXPECT_EQ(back, v);
  EXPECT_FALSE((*ex)->ReadBuffer(999, back.data()).ok());
  EXPECT_FALSE((*ex)->ReadBuffer(-1, back.data()).ok());
}

// An index out of range is found by the device code, and the step fails naming the kernel (the
// CPU backend names the element), instead of training on the zeros the kernel wrote.
TEST(DeviceBackendTest, AnIndexOutOfRangeFailsTheStepNamingTheKernel) {
  using Role = plan::Buffer;
  testing::PlanBuilder pb;
  int x = pb.Buffer("x", DType::kF32, {3, 2}, Role::INPUT);
  int idx = pb.Buffer("idx", DType::kI64, {2}, Role::INPUT);
  int y = pb.Buffer("y", DType::kF32, {2, 2}, Role::OUTPUT);
  pb.Kernel("Gather", {x, idx}, {y})->set_node("embed");
  PlanFile f = pb.Finish();
  auto be = MakeCudaEmuBackend();
  ASSERT_TRUE(be.ok());
  auto ex = Executor::Create(f, std::move(be).value());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  std::vector<float> xv = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE((*ex)->SetInput("x", xv.data(), xv.size() * 4).ok());
  std::vector<int64_t> good = {2, -1}, bad = {1, 7};
  ASSERT_TRUE((*ex)->SetInput("idx", good.data(), 16).ok());
  ASSERT_TRUE((*ex)->Run().ok());
  ASSERT_TRUE((*ex)->SetInput("idx", bad.data(), 16).ok());
  Status s = (*ex)->Run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("kernel 0 'Gather:f32,i64->f32' (node 'embed')"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();
  // The next good step runs again (the error word is per step).
  ASSERT_TRUE((*ex)->SetInput("idx", good.data(), 16).ok());
  EXPECT_TRUE((*ex)->Run().ok());
}

// The ONNX optimizers' operand checks are one function for both backends
// (CheckOnnxOptimizerOperands): a group member whose tensors differ is the same error on each.
TEST(DeviceBackendTest, OnnxOptimizerOperandErrorsAreTheCpus) {
  using Role = plan::Buffer;
  testing::PlanBuilder pb;
  float rate = 0.1f;
  int64_t t = 1;
  int r = pb.Buffer("R", DType::kF32, {}, Role::CONSTANT, &rate);
  int tt = pb.Buffer("T", DType::kI64, {}, Role::CONSTANT, &t);
  int x = pb.Buffer("X", DType::kF32, {4}, Role::INPUT);
  int g = pb.Buffer("G", DType::kF32, {5}, Role::INPUT);  // not X's size
  int v = pb.Buffer("V", DType::kF32, {4}, Role::INPUT);
  int xn = pb.Buffer("X.new", DType::kF32, {4}, Role::OUTPUT);
  int vn = pb.Buffer("V.new", DType::kF32, {4}, Role::OUTPUT);
  plan::Kernel* k = pb.Kernel("ai.onnx.preview.training.Momentum", {r, tt, x, g, v}, {xn, vn});
  testing::PlanBuilder::Float(k, "alpha", 0.9f);
  testing::PlanBuilder::Float(k, "beta", 1.0f);
  PlanFile f = pb.Finish();
  auto run = [&](std::unique_ptr<Backend> be) {
    auto ex = Executor::Create(f, std::move(be));
    EXPECT_TRUE(ex.ok()) << ex.status().message();
    std::vector<float> four(4, 1.0f), five(5, 1.0f);
    EXPECT_TRUE((*ex)->SetInput("X", four.data(), 16).ok());
    EXPECT_TRUE((*ex)->SetInput("G", five.data(), 20).ok());
    EXPECT_TRUE((*ex)->SetInput("V", four.data(), 16).ok());
    return (*ex)->Run();
  };
  Status cpu = run(MakeCpuBackend());
  auto emu = MakeCudaEmuBackend();
  ASSERT_TRUE(emu.ok());
  Status dev = run(std::move(emu).value());
  ASSERT_FALSE(cpu.ok());
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(cpu.message().find("the tensors of group member 0 differ in type"), std::string::npos)
      << cpu.message();
  EXPECT_NE(dev.message().find("the tensors of group member 0 differ in type"), std::string::npos)
      << dev.message();
}

}  // namespace
}  // namespace a8

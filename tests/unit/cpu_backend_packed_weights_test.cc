// The CPU backend's fast mode keeps a weight packed for the GEMMs (kernels/cpu/stable_regions.h)
// and packs it again after every kind of write to it: a kernel's output, a copy in. A product
// after the write gives exactly what a fresh executor holding the new values gives.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/cpu/onednn_gemm.h"
#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/cpu_kernels_test_util.h"
#include "tests/unit/runtime_test_util.h"

namespace a8 {
namespace {

using B = plan::Buffer;
using cpu::testing::Buffer;
using cpu::testing::OneDnnPackingDtype;
using cpu::testing::RandomBuffer;

constexpr int64_t kM = 32, kK = 256, kN = 256;

// y = MatMul(x, w) with w a parameter; with `writer`, a second kernel then copies input `w_next`
// over w (as an optimizer writes a weight after the products that read it).
PlanFile MatMulPlan(const Buffer& w, bool writer) {
  testing::PlanBuilder pb;
  const DType t = OneDnnPackingDtype();
  const int x = pb.Buffer("x", t, {kM, kK}, B::INPUT);
  const int wn = pb.Buffer("w_next", t, {kK, kN}, B::INPUT);
  const int wi = pb.Buffer("w", t, {kK, kN}, B::PARAMETER, w.data());
  const int y = pb.Buffer("y", t, {kM, kN}, B::OUTPUT);
  pb.Kernel("MatMul", {x, wi}, {y});
  if (writer) pb.Kernel("Identity", {wn}, {wi});
  return pb.Finish();
}

std::vector<uint8_t> Output(Executor& ex) {
  const plan::Buffer* y = nullptr;
  for (const plan::Buffer& b : ex.plan().buffers())
    if (b.name() == "y") y = &b;
  const uint8_t* p = ex.BufferData(y->id());
  return std::vector<uint8_t>(p, p + y->bytes());
}

class CpuPackedWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    x_ = RandomBuffer(OneDnnPackingDtype(), {kM, kK}, rng_);
    w0_ = RandomBuffer(OneDnnPackingDtype(), {kK, kN}, rng_);
    w1_ = RandomBuffer(OneDnnPackingDtype(), {kK, kN}, rng_);
    // Skip where the fast GEMM does not run or reads B as it is (nothing to keep packed).
    std::unique_ptr<Executor> probe = Make(w0_, false);
    if (HasFatalFailure()) return;
    const int64_t execs = cpu::internal::FastGemmExecutions();
    const int64_t packs = cpu::internal::FastGemmPacks();
    ASSERT_TRUE(probe->Run().ok());
    if (cpu::internal::FastGemmExecutions() == execs || cpu::internal::FastGemmPacks() == packs)
      GTEST_SKIP() << "no fast " << ElemName(OneDnnPackingDtype())
                   << " GEMM that packs B on this CPU (" << cpu::internal::FastGemmDescription()
                   << ")";
  }
  std::unique_ptr<Executor> Make(const Buffer& w, bool writer) {
    auto ex = Executor::Create(MatMulPlan(w, writer), MakeCpuBackend(cpu::KernelMode::kFast));
    EXPECT_TRUE(ex.ok()) << ex.status().message();
    if (!ex.ok()) return nullptr;
    EXPECT_TRUE((*ex)->SetInput("x", x_.data(), x_.bytes.size()).ok());
    EXPECT_TRUE((*ex)->SetInput("w_next", w1_.data(), w1_.bytes.size()).ok());
    return std::move(*ex);
  }
  // Runs one step; returns how many times B was packed in it.
  static int64_t PacksOfRun(Executor& ex) {
    const int64_t before = cpu::internal::FastGemmPacks();
    Status s = ex.Run();
    EXPECT_TRUE(s.ok()) << s.message();
    return cpu::internal::FastGemmPacks() - before;
  }
  std::mt19937_64 rng_{22};
  Buffer x_, w0_, w1_;
};

TEST_F(CpuPackedWeightsTest, AnUnwrittenWeightIsPackedOnce) {
  std::unique_ptr<Executor> ex = Make(w0_, false);
  ASSERT_NE(ex, nullptr);
  EXPECT_EQ(PacksOfRun(*ex), 1);
  const std::vector<uint8_t> y = Output(*ex);
  EXPECT_EQ(PacksOfRun(*ex), 0);
  EXPECT_EQ(PacksOfRun(*ex), 0);
  EXPECT_EQ(Output(*ex), y);
}

TEST_F(CpuPackedWeightsTest, AWeightWrittenByAKernelIsPackedAgain) {
  std::unique_ptr<Executor> ex = Make(w0_, true), with_w1 = Make(w1_, false);
  ASSERT_NE(ex, nullptr);
  ASSERT_NE(with_w1, nullptr);
  EXPECT_EQ(PacksOfRun(*ex), 1);  // y = x w0, then w = w1
  const std::vector<uint8_t> y0 = Output(*ex);
  EXPECT_EQ(PacksOfRun(*ex), 1) << "a weight written by a kernel was not packed again";
  ASSERT_TRUE(with_w1->Run().ok());
  EXPECT_EQ(Output(*ex), Output(*with_w1));
  EXPECT_NE(Output(*ex), y0);
}

TEST_F(CpuPackedWeightsTest, AWeightCopiedInIsPackedAgain) {
  std::unique_ptr<Executor> ex = Make(w0_, false), with_w1 = Make(w1_, false);
  ASSERT_NE(ex, nullptr);
  ASSERT_NE(with_w1, nullptr);
  EXPECT_EQ(PacksOfRun(*ex), 1);
  int w = -1;
  for (const plan::Buffer& b : ex->plan().buffers())
    if (b.name() == "w") w = b.id();
  ASSERT_TRUE(ex->WriteBuffer(w, w1_.data()).ok());  // as a checkpoint load writes it
  EXPECT_EQ(PacksOfRun(*ex), 1);
  ASSERT_TRUE(with_w1->Run().ok());
  EXPECT_EQ(Output(*ex), Output(*with_w1));
}

}  // namespace
}  // namespace a8

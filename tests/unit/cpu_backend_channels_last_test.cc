// The CPU backend's channels-last activations (runtime/cpu/channels_last.h): a chain of
// convolutions, a MaxPool and a global pool runs with its inner activations stored NHWC and
// gives the output of the same plan run with every buffer NCHW, bit for bit; buffers that
// anything else reads stay NCHW, and nothing is NHWC where intermediates are observed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/executor.h"
#include "runtime/cpu/channels_last.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/cpu_kernels_test_util.h"
#include "tests/unit/runtime_test_util.h"

namespace a8 {
namespace {

using B = plan::Buffer;
using cpu::testing::Buffer;
using cpu::testing::RandomBuffer;

constexpr int64_t kChainN = 8, kChainC = 16, kChainHw = 8;

struct ChainPlan {
  PlanFile file;
  int stem_out = -1, a_out = -1, b_out = -1, pool_out = -1, c_out = -1;
};

void ConvAttrs(plan::Kernel* k, const std::string& activation) {
  testing::PlanBuilder::Ints(k, "kernel_shape", {3, 3});
  testing::PlanBuilder::Ints(k, "pads", {1, 1, 1, 1});
  testing::PlanBuilder::Ints(k, "strides", {1, 1});
  testing::PlanBuilder::Ints(k, "dilations", {1, 1});
  testing::PlanBuilder::Int(k, "group", 1);
  if (!activation.empty()) {
    plan::Attribute* a = k->add_attrs();
    a->set_name("activation");
    a->set_s(activation);
  }
}

// The example CNN's shape: x -> Conv+Relu (stem) -> FusedConv+Relu (a) -> FusedConv(+stem)+Relu
// (b) -> MaxPool 2x2 -> FusedConv 16->32 + Relu (c) -> GlobalAveragePool -> y. With `stem_out`
// also a graph output, the stem's activation is read from outside the kernels.
ChainPlan Chain(const std::vector<Buffer>& w, bool stem_is_output) {
  testing::PlanBuilder pb;
  ChainPlan c;
  const DType f = DType::kF32;
  const int x = pb.Buffer("x", f, {kChainN, kChainC, kChainHw, kChainHw}, B::INPUT);
  int wi[4], bi[4];
  const int64_t outs[4] = {kChainC, kChainC, kChainC, 2 * kChainC};
  for (int i = 0; i < 4; ++i) {
    wi[i] = pb.Buffer("w" + std::to_string(i), f, {outs[i], kChainC, 3, 3}, B::PARAMETER,
                      w[2 * i].data());
    bi[i] = pb.Buffer("b" + std::to_string(i), f, {outs[i]}, B::PARAMETER, w[2 * i + 1].data());
  }
  c.stem_out = pb.Buffer("stem_out", f, {kChainN, kChainC, kChainHw, kChainHw},
                         stem_is_output ? B::OUTPUT : B::INTERMEDIATE);
  c.a_out = pb.Buffer("a_out", f, {kChainN, kChainC, kChainHw, kChainHw}, B::INTERMEDIATE);
  c.b_out = pb.Buffer("b_out", f, {kChainN, kChainC, kChainHw, kChainHw}, B::INTERMEDIATE);
  c.pool_out =
      pb.Buffer("pool_out", f, {kChainN, kChainC, kChainHw / 2, kChainHw / 2}, B::INTERMEDIATE);
  c.c_out =
      pb.Buffer("c_out", f, {kChainN, 2 * kChainC, kChainHw / 2, kChainHw / 2}, B::INTERMEDIATE);
  const int y = pb.Buffer("y", f, {kChainN, 2 * kChainC, 1, 1}, B::OUTPUT);
  ConvAttrs(pb.Kernel("Conv", {x, wi[0], bi[0]}, {c.stem_out}), "");
  ConvAttrs(pb.Kernel("a8.FusedConv", {c.stem_out, wi[1], bi[1]}, {c.a_out}), "relu");
  ConvAttrs(pb.Kernel("a8.FusedConv", {c.a_out, wi[2], bi[2], c.stem_out}, {c.b_out}), "relu");
  plan::Kernel* pool = pb.Kernel("MaxPool", {c.b_out}, {c.pool_out});
  testing::PlanBuilder::Ints(pool, "kernel_shape", {2, 2});
  testing::PlanBuilder::Ints(pool, "strides", {2, 2});
  ConvAttrs(pb.Kernel("a8.FusedConv", {c.pool_out, wi[3], bi[3]}, {c.c_out}), "relu");
  pb.Kernel("GlobalAveragePool", {c.c_out}, {y});
  c.file = pb.Finish();
  return c;
}

class CpuChannelsLastTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(5);
    x_ = RandomBuffer(DType::kF32, {kChainN, kChainC, kChainHw, kChainHw}, rng);
    const int64_t outs[4] = {kChainC, kChainC, kChainC, 2 * kChainC};
    for (int i = 0; i < 4; ++i) {
      w_.push_back(RandomBuffer(DType::kF32, {outs[i], kChainC, 3, 3}, rng, -0.3, 0.3));
      w_.push_back(RandomBuffer(DType::kF32, {outs[i]}, rng));
    }
  }
  void TearDown() override { unsetenv("A8_CPU_CHANNELS_LAST"); }
  // Runs the chain plan once in the fast mode; returns output y's bytes and, through `nhwc`,
  // how many buffers the backend stored NHWC.
  std::vector<uint8_t> Run(bool stem_is_output, bool check_numerics, int* nhwc) {
    ExecutorOptions options;
    options.check_numerics = check_numerics;
    auto backend = std::make_unique<CpuBackend>(cpu::KernelMode::kFast);
    const CpuBackend* cpu = backend.get();
    auto ex = Executor::Create(Chain(w_, stem_is_output).file, std::move(backend), options);
    EXPECT_TRUE(ex.ok()) << ex.status().message();
    if (!ex.ok()) return {};
    EXPECT_TRUE((*ex)->SetInput("x", x_.data(), x_.bytes.size()).ok());
    const Status s = (*ex)->Run();
    EXPECT_TRUE(s.ok()) << s.message();
    *nhwc = cpu->channels_last_buffers();
    for (const plan::Buffer& b : (*ex)->plan().buffers()) {
      if (b.name() != "y") continue;
      const uint8_t* p = (*ex)->BufferData(b.id());
      return std::vector<uint8_t>(p, p + b.bytes());
    }
    return {};
  }
  Buffer x_;
  std::vector<Buffer> w_;
};

TEST_F(CpuChannelsLastTest, InnerActivationsGoNhwcWithTheSameOutputBits) {
  const ChainPlan chain = Chain(w_, false);
  const std::vector<bool> nhwc = ChannelsLastBuffers(chain.file.plan);
  if (!nhwc[chain.a_out]) GTEST_SKIP() << "this CPU's oneDNN convolution does not take NHWC here";
  // The stem is read by two convolutions (X and Z) and written by one: NHWC too; every inner
  // activation up to the global pool is, the graph's input and output are not.
  EXPECT_TRUE(nhwc[chain.stem_out]);
  EXPECT_TRUE(nhwc[chain.b_out]);
  EXPECT_TRUE(nhwc[chain.pool_out]);
  EXPECT_TRUE(nhwc[chain.c_out]);
  for (const plan::Buffer& b : chain.file.plan.buffers()) {
    if (b.role() != B::INTERMEDIATE) {
      EXPECT_FALSE(nhwc[b.id()]) << b.name();
    }
  }
  int stored = 0, none = 0;
  const std::vector<uint8_t> got = Run(false, false, &stored);
  EXPECT_EQ(stored, 5);
  setenv("A8_CPU_CHANNELS_LAST", "0", 1);
  const std::vector<uint8_t> want = Run(false, false, &none);
  EXPECT_EQ(none, 0);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(got, want);
}

TEST_F(CpuChannelsLastTest, ABufferReadFromOutsideStaysNchw) {
  const ChainPlan chain = Chain(w_, true);
  const std::vector<bool> nhwc = ChannelsLastBuffers(chain.file.plan);
  EXPECT_FALSE(nhwc[chain.stem_out]);  // a graph output
  if (!nhwc[chain.a_out]) GTEST_SKIP() << "this CPU's oneDNN convolution does not take NHWC here";
  int stored = 0;
  Run(true, false, &stored);
  EXPECT_EQ(stored, 4);  // the four after the stem
  // --check-numerics reads every output after its kernel: nothing is NHWC (five without it).
  Run(false, true, &stored);
  EXPECT_EQ(stored, 0);
}

}  // namespace
}  // namespace a8

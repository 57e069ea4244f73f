// The optimizer and loss-scaling kernels of the CUDA backend (kernels/device/loss_optim*.h)
// through its host emulation, against the CPU backend: one-kernel plans on random data, every
// dtype the entries take, optional operands, and multi-step runs with the state updated in place.
// The emulation runs the CPU's expressions in the CPU's order, so every comparison here is bit for
// bit: byte equality of every output and state buffer, after every step (device_test_util.h
// ExpectBitExact).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"  // cpu::Cast (device_test_util.h uses it too)
#include "tests/unit/device_test_util.h"

namespace a8 {
namespace {

using testing::ExpectBitExact;
using testing::Name;
using testing::PlanBuilder;
using testing::RandomBytes;
using testing::Str;
using Role = plan::Buffer;
using ByteVec = std::vector<uint8_t>;
using Feed = testing::Snapshot;

// Element i of `b` (of `dtype`) set to `v`.
void Poke(DType dtype, ByteVec* b, int64_t i, double v) {
  EXPECT_TRUE(cpu::Cast(DType::kF64, dtype, 1, &v, b->data() + i * DTypeSize(dtype)).ok());
}

ByteVec F32(float v) { return testing::Bytes(std::vector<float>{v}); }
ByteVec I64(int64_t v) { return testing::Bytes(std::vector<int64_t>{v}); }
ByteVec Ctl(float lr, float grad_scale, float applied, float updates) {
  return testing::Bytes(std::vector<float>{lr, grad_scale, applied, updates, 0.5f});
}

TEST(DeviceOptimTest, TrainControlMatchesCpuOverSteps) {
  const std::vector<float> found = {0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0};
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    PlanBuilder pb;
    int64_t zero = 0;
    float zero_f = 0;
    int step = pb.Buffer("step", DType::kI64, {}, Role::STATE, &zero);
    int updates = pb.Buffer("updates", DType::kF32, {}, Role::STATE, &zero_f);
    int ctl = pb.Buffer("ctl", DType::kF32, {5}, Role::OUTPUT);
    std::vector<int> ins = {step, updates};
    if (variant > 0) {
      ins.push_back(pb.Buffer("sq_norm", DType::kF32, {}, Role::INPUT));
      ins.push_back(pb.Buffer("found_inf", DType::kF32, {}, Role::INPUT));
    }
    plan::Kernel* k = pb.Kernel("a8.TrainControl", ins, {ctl, step, updates});
    PlanBuilder::Float(k, "lr", 0.01f);
    if (variant == 2) {
      Str(k, "schedule", "cosine");
      PlanBuilder::Int(k, "warmup_steps", 2);
      PlanBuilder::Int(k, "total_steps", 5);
      PlanBuilder::Float(k, "min_lr", 1e-4f);
      PlanBuilder::Int(k, "accumulate", 2);
      PlanBuilder::Float(k, "max_grad_norm", 1.0f);
    }
    std::vector<Feed> feeds;
    for (size_t s = 0; s < found.size(); ++s)
      feeds.push_back(
          {{"sq_norm", F32(0.3f + 1.7f * static_cast<float>(s))}, {"found_inf", F32(found[s])}});
    ExpectBitExact(pb.Finish(), feeds);
  }
}

// PRECISION.md's worked example (init 4, growth 2, backoff 0.5, interval 2), then the floor, the
// ceiling and accumulation micro-steps.
TEST(DeviceOptimTest, UpdateScaleMatchesCpuAndTheWorkedExample) {
  struct Case {
    float init, min_scale, max_scale;
    int64_t accumulate;
    std::vector<float> found;
  };
  const std::vector<Case> cases = {{4.0f, 0, 0, 1, {0, 0, 1, 0, 0, 0}},
                                   {2.0f, 1.0f, 0, 1, {1, 1, 1, 0, 1}},
                                   {4.0f, 0, 10.0f, 1, {0, 0, 0, 0, 0, 0}},
                                   {4.0f, 0, 0, 2, {0, 0, 1, 1, 0, 0, 0, 0}}};
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    SCOPED_TRACE("case " + std::to_string(ci));
    PlanBuilder pb;
    int32_t zero = 0;
    int scale = pb.Buffer("scale", DType::kF32, {}, Role::STATE, &c.init);
    int tracker = pb.Buffer("tracker", DType::kI32, {}, Role::STATE, &zero);
    int found = pb.Buffer("found_inf", DType::kF32, {}, Role::INPUT);
    int step = pb.Buffer("step", DType::kI64, {}, Role::INPUT);
    plan::Kernel* k = pb.Kernel("a8.UpdateScale", {scale, tracker, found, step}, {scale, tracker});
    PlanBuilder::Float(k, "growth_factor", 2.0f);
    PlanBuilder::Float(k, "backoff_factor", 0.5f);
    PlanBuilder::Int(k, "growth_interval", 2);
    PlanBuilder::Float(k, "min_scale", c.min_scale);
    PlanBuilder::Float(k, "max_scale", c.max_scale);
    PlanBuilder::Int(k, "accumulate", c.accumulate);
    std::vector<Feed> feeds;
    for (size_t s = 0; s < c.found.size(); ++s)
      feeds.push_back({{"found_inf", F32(c.found[s])}, {"step", I64(static_cast<int64_t>(s))}});
    auto got = ExpectBitExact(pb.Finish(), feeds);
    if (ci != 0 || got.size() != feeds.size()) continue;
    const float want[] = {4.0f, 8.0f, 4.0f, 4.0f, 8.0f, 8.0f};
    for (size_t s = 0; s < got.size(); ++s) {
      float v;
      std::memcpy(&v, got[s]["scale"].data(), 4);
      EXPECT_EQ(v, want[s]) << "step " << s;
    }
  }
}

TEST(DeviceOptimTest, UnscaleCheckFiniteMatchesCpuAndFindsEveryInf) {
  const std::vector<std::pair<DType, int64_t>> grads = {
      {DType::kF16, 15}, {DType::kBF16, 33}, {DType::kF32, 70001}, {DType::kF64, 7}};
  struct Poison {
    int tensor;
    int64_t index;
    double value;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::vector<Poison>> cases = {
      {}, {{1, 32, inf}}, {{3, 0, std::nan("")}}, {{2, 70000, -inf}}, {{0, 3, inf}, {2, 5, inf}}};
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    SCOPED_TRACE("case " + std::to_string(ci));
    PlanBuilder pb;
    std::vector<int> ins = {pb.Buffer("scale", DType::kF32, {}, Role::INPUT)}, outs;
    Feed feed = {{"scale", F32(1024.0f)}};
    for (size_t t = 0; t < grads.size(); ++t) {
      const auto [dtype, n] = grads[t];
      ByteVec g = RandomBytes(dtype, n, 20 + static_cast<uint32_t>(t), -3000, 3000);
      for (const Poison& p : cases[ci])
        if (p.tensor == static_cast<int>(t)) Poke(dtype, &g, p.index, p.value);
      const std::string name = "g" + std::to_string(t);
      if (dtype == DType::kF32) {  // unscaled in place
        int id = pb.Buffer(name, dtype, {n}, Role::STATE, g.data());
        ins.push_back(id);
        outs.push_back(id);
      } else {
        ins.push_back(pb.Buffer(name, dtype, {n}, Role::INPUT));
        outs.push_back(pb.Buffer("u" + std::to_string(t), DType::kF32, {n}, Role::OUTPUT));
        feed[name] = g;
      }
    }
    outs.push_back(pb.Buffer("found", DType::kF32, {}, Role::OUTPUT));
    pb.Kernel("a8.UnscaleCheckFinite", ins, outs);
    auto got = ExpectBitExact(pb.Finish(), {feed});
    ASSERT_EQ(got.size(), 1u);
    float found;
    std::memcpy(&found, got[0]["found"].data(), 4);
    EXPECT_EQ(found, cases[ci].empty() ? 0.0f : 1.0f);
  }
}

TEST(DeviceOptimTest, GlobalNormSqMatchesCpu) {
  PlanBuilder pb;
  std::vector<int> ins;
  int i = 0;
  for (auto [dtype, n] : std::vector<std::pair<DType, int64_t>>{
           {DType::kF16, 5}, {DType::kF32, 70001}, {DType::kBF16, 33}, {DType::kF64, 9}})
    ins.push_back(pb.Buffer("t" + std::to_string(i++), dtype, {n}, Role::INPUT));
  pb.Kernel("a8.GlobalNormSq", ins, {pb.Buffer("sq", DType::kF32, {}, Role::OUTPUT)});
  ExpectBitExact(pb.Finish(), {Feed{}});
}

TEST(DeviceOptimTest, GradAccumulateMatchesCpuOverAWindow) {
  for (DType at : kFloatTypes) {
    for (DType gt : kFloatTypes) {
      SCOPED_TRACE(std::string(Name(at)) + " += " + Name(gt));
      PlanBuilder pb;
      ByteVec init = RandomBytes(at, 37, 3);
      int acc = pb.Buffer("acc", at, {37}, Role::STATE, init.data());
      int g = pb.Buffer("g", gt, {37}, Role::INPUT);
      int step = pb.Buffer("step", DType::kI64, {}, Role::INPUT);
      plan::Kernel* k = pb.Kernel("a8.GradAccumulate", {acc, g, step}, {acc});
      PlanBuilder::Int(k, "accumulate", 3);
      std::vector<Feed> feeds;
      for (int64_t s = 1; s < 6; ++s) feeds.push_back({{"step", I64(s)}});
      ExpectBitExact(pb.Finish(), feeds);
    }
  }
}

// ---- parameter updates: applied, skipped (bit-identical state), first update

// The control vectors of a run: applied, skipped (an overflow), applied again.
std::vector<Feed> UpdateFeeds() {
  return {{{"ctl", Ctl(0.05f, 0.5f, 1, 1)}},
          {{"ctl", Ctl(0.05f, 0.5f, 0, 1)}},
          {{"ctl", Ctl(0.04f, 0.25f, 1, 2)}},
          {{"ctl", Ctl(0.03f, 1.0f, 1, 3)}}};
}

// The emulation's state after a skipped step (1) is byte for byte the state after step 0.
void ExpectSkippedStepKeepsState(const std::vector<Feed>& got,
                                 const std::vector<std::string>& names) {
  ASSERT_GE(got.size(), 2u);
  for (const std::string& n : names) EXPECT_EQ(got[1].at(n), got[0].at(n)) << n;
}

TEST(DeviceOptimTest, SgdUpdateMatchesCpuAndSkipsOnTheFlag) {
  struct Config {
    float momentum, dampening, weight_decay;
    bool nesterov, buf;
  };
  const std::vector<Config> configs = {{0, 0, 0, false, false},
                                       {0.9f, 0.1f, 0.01f, false, true},
                                       {0.9f, 0, 0, true, true},
                                       {0, 0, 0.01f, false, true}};
  for (DType pt : kFloatTypes) {
    for (DType gt : kFloatTypes) {
      for (size_t ci = 0; ci < configs.size(); ++ci) {
        const Config& c = configs[ci];
        SCOPED_TRACE(std::string(Name(pt)) + " grad " + Name(gt) + " config " + std::to_string(ci));
        PlanBuilder pb;
        ByteVec x0 = RandomBytes(pt, 29, 4), b0 = RandomBytes(pt, 29, 5);
        int x = pb.Buffer("x", pt, {29}, Role::PARAMETER, x0.data());
        int g = pb.Buffer("g", gt, {29}, Role::INPUT);
        int ctl = pb.Buffer("ctl", DType::kF32, {5}, Role::INPUT);
        std::vector<int> ins = {x, g, ctl}, outs = {x};
        if (c.buf) {
          int b = pb.Buffer("buf", pt, {29}, Role::STATE, b0.data());
          ins.push_back(b);
          outs.push_back(b);
        }
        plan::Kernel* k = pb.Kernel("a8.SgdUpdate", ins, outs);
        PlanBuilder::Float(k, "momentum", c.momentum);
        PlanBuilder::Float(k, "dampening", c.dampening);
        PlanBuilder::Float(k, "weight_decay", c.weight_decay);
        PlanBuilder::Int(k, "nesterov", c.nesterov ? 1 : 0);
        auto got = ExpectBitExact(pb.Finish(), UpdateFeeds());
        ExpectSkippedStepKeepsState(
            got, c.buf ? std::vector<std::string>{"x", "buf"} : std::vector<std::string>{"x"});
      }
    }
  }
}

TEST(DeviceOptimTest, AdamUpdateMatchesCpuAndSkipsOnTheFlag) {
  for (DType pt : kFloatTypes) {
    for (DType gt : kFloatTypes) {
      for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE(std::string(Name(pt)) + " grad " + Name(gt) + " variant " +
                     std::to_string(variant));
        PlanBuilder pb;
        ByteVec x0 = RandomBytes(pt, 31, 4), m0 = RandomBytes(pt, 31, 5),
                v0 = RandomBytes(pt, 31, 6, 0.0, 1.0);
        int x = pb.Buffer("x", pt, {31}, Role::PARAMETER, x0.data());
        int g = pb.Buffer("g", gt, {31}, Role::INPUT);
        int ctl = pb.Buffer("ctl", DType::kF32, {5}, Role::INPUT);
        int m = pb.Buffer("m", pt, {31}, Role::STATE, m0.data());
        int v = pb.Buffer("v", pt, {31}, Role::STATE, v0.data());
        plan::Kernel* k = pb.Kernel("a8.AdamUpdate", {x, g, ctl, m, v}, {x, m, v});
        if (variant > 0) PlanBuilder::Float(k, "weight_decay", 0.05f);
        if (variant == 2) PlanBuilder::Int(k, "decoupled", 1);
        PlanBuilder::Float(k, "beta2", 0.99f);
        auto got = ExpectBitExact(pb.Finish(), UpdateFeeds());
        ExpectSkippedStepKeepsState(got, {"x", "m", "v"});
      }
    }
  }
}

// fuse-optimizer's a8.AdamUpdate (the scale in, the f16/bf16 working copy out) and
// a8.CheckFinite: the CPU and cuda-emu agree bit for bit, and give the unfused chain's bits
// (UnscaleCheckFinite, the update on its f32 gradient, Cast of the new parameter), on every step,
// the skipped one (1) included.
TEST(DeviceOptimTest, FusedAdamUpdateIsTheUnfusedChain) {
  const int64_t n = 45;
  for (DType gt : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (DType ct : {DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(std::string("grad ") + Name(gt) + " copy " + Name(ct));
      const ByteVec x0 = RandomBytes(DType::kF32, n, 4), m0 = RandomBytes(DType::kF32, n, 5),
                    v0 = RandomBytes(DType::kF32, n, 6, 0.0, 1.0);
      std::vector<Feed> feeds = UpdateFeeds();
      for (size_t s = 0; s < feeds.size(); ++s) {
        feeds[s]["g"] = RandomBytes(gt, n, 30 + static_cast<uint32_t>(s), -3000, 3000);
        feeds[s]["scale"] = F32(s == 2 ? 1536.0f : 3000.0f);
      }
      std::vector<Feed> got[2];
      for (int fused = 0; fused < 2; ++fused) {
        PlanBuilder pb;
        int x = pb.Buffer("x", DType::kF32, {n}, Role::PARAMETER, x0.data());
        int g = pb.Buffer("g", gt, {n}, Role::INPUT);
        int ctl = pb.Buffer("ctl", DType::kF32, {5}, Role::INPUT);
        int m = pb.Buffer("m", DType::kF32, {n}, Role::STATE, m0.data());
        int v = pb.Buffer("v", DType::kF32, {n}, Role::STATE, v0.data());
        int scale = pb.Buffer("scale", DType::kF32, {}, Role::INPUT);
        int found = pb.Buffer("found", DType::kF32, {}, Role::OUTPUT);
        int copy = pb.Buffer("copy", ct, {n}, Role::OUTPUT);
        plan::Kernel* k = nullptr;
        if (fused) {
          pb.Kernel("a8.CheckFinite", {g}, {found});
          k = pb.Kernel("a8.AdamUpdate", {x, g, ctl, m, v, scale}, {x, m, v, copy});
          PlanBuilder::Int(k, "copy_to", ct == DType::kF16 ? 10 : 16);
        } else {
          int u = pb.Buffer("u", DType::kF32, {n}, Role::OUTPUT);
          pb.Kernel("a8.UnscaleCheckFinite", {scale, g}, {u, found});
          k = pb.Kernel("a8.AdamUpdate", {x, u, ctl, m, v}, {x, m, v});
          PlanBuilder::Int(pb.Kernel("Cast", {x}, {copy}), "to", ct == DType::kF16 ? 10 : 16);
        }
        PlanBuilder::Float(k, "weight_decay", 0.05f);
        PlanBuilder::Int(k, "decoupled", 1);
        got[fused] = ExpectBitExact(pb.Finish(), feeds);
      }
      ASSERT_EQ(got[0].size(), feeds.size());
      ASSERT_EQ(got[1].size(), feeds.size());
      for (size_t s = 0; s < feeds.size(); ++s) {
        for (const char* name : {"x", "m", "v", "copy", "found"}) {
          EXPECT_EQ(got[1][s].at(name), got[0][s].at(name)) << "step " << s << " " << name;
        }
      }
      ExpectSkippedStepKeepsState(got[1], {"x", "m", "v", "copy"});
      EXPECT_NE(got[1][0].at("x"), x0);
    }
  }
}

TEST(DeviceOptimTest, SkippedUpdateOutOfPlaceCopiesTheInputs) {
  for (DType pt : kFloatTypes) {
    SCOPED_TRACE(Name(pt));
    PlanBuilder pb;
    int x = pb.Buffer("x", pt, {17}, Role::INPUT);
    int g = pb.Buffer("g", DType::kF32, {17}, Role::INPUT);
    int ctl = pb.Buffer("ctl", DType::kF32, {5}, Role::INPUT);
    int b = pb.Buffer("buf", pt, {17}, Role::INPUT);
    int xn = pb.Buffer("x_next", pt, {17}, Role::OUTPUT);
    int bn = pb.Buffer("buf_next", pt, {17}, Role::OUTPUT);
    PlanBuilder::Float(pb.Kernel("a8.SgdUpdate", {x, g, ctl, b}, {xn, bn}), "momentum", 0.9f);
    Feed feed = {{"x", RandomBytes(pt, 17, 1)},
                 {"buf", RandomBytes(pt, 17, 2)},
                 {"ctl", Ctl(0.1f, 1.0f, 0, 4)}};
    auto got = ExpectBitExact(pb.Finish(), {feed});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0]["x_next"], feed["x"]);
    EXPECT_EQ(got[0]["buf_next"], feed["buf"]);
  }
}

// ai.onnx.preview.training.{Adam, Momentum, Adagrad} over two tensors, T = 0 then > 0.
TEST(DeviceOptimTest, OnnxOptimizersMatchCpu) {
  const std::vector<std::pair<std::string, int>> ops = {{"ai.onnx.preview.training.Adam", 4},
                                                        {"ai.onnx.preview.training.Momentum", 3},
                                                        {"ai.onnx.preview.training.Adagrad", 3}};
  for (const auto& [op, groups] : ops) {
    for (DType t : {DType::kF32, DType::kF64}) {
      for (DType rt : {DType::kF32, DType::kF64}) {
        for (int variant = 0; variant < 2; ++variant) {
          SCOPED_TRACE(op + " " + Name(t) + " R " + Name(rt) + " variant " +
                       std::to_string(variant));
          PlanBuilder pb;
          const int64_t sizes[2] = {13, 7};
          int r = pb.Buffer("R", rt, {}, Role::INPUT);
          int tt = pb.Buffer("T", DType::kI64, {}, Role::INPUT);
          std::vector<int> ins = {r, tt}, outs;
          std::vector<std::vector<int>> state(groups);
          for (int gi = 0; gi < groups; ++gi) {
            for (int i = 0; i < 2; ++i) {
              const std::string name = "s" + std::to_string(gi) + "_" + std::to_string(i);
              // Squared-gradient accumulators (Adam's H, Adagrad's H) start >= 0.
              const bool squares = gi == groups - 1 && op != "ai.onnx.preview.training.Momentum";
              ByteVec init = RandomBytes(t, sizes[i], 30 + gi * 2 + i, squares ? 0.0 : -2.0, 2.0);
              int id = gi == 1 ? pb.Buffer(name, t, {sizes[i]}, Role::INPUT)
                               : pb.Buffer(name, t, {sizes[i]}, Role::STATE, init.data());
              ins.push_back(id);
              if (gi != 1) outs.push_back(id);
            }
          }
          plan::Kernel* k = pb.Kernel(op, ins, outs);
          PlanBuilder::Float(k, "norm_coefficient", variant == 1 ? 0.01f : 0.0f);
          if (groups == 4) PlanBuilder::Float(k, "norm_coefficient_post", 0.02f);
          if (op == "ai.onnx.preview.training.Momentum") {
            PlanBuilder::Float(k, "alpha", 0.9f);
            PlanBuilder::Float(k, "beta", 0.8f);
            if (variant == 1) Str(k, "mode", "nesterov");
          }
          if (op == "ai.onnx.preview.training.Adagrad") PlanBuilder::Float(k, "decay_factor", 0.1f);
          std::vector<Feed> feeds;
          for (int64_t s = 0; s < 3; ++s)
            feeds.push_back({{"R", testing::FromDoubles(rt, {0.01 * static_cast<double>(s + 1)})},
                             {"T", I64(s)}});
          ExpectBitExact(pb.Finish(), feeds);
        }
      }
    }
  }
}

}  // namespace
}  // namespace a8

// Dynamic loss scaling (PRECISION.md "Loss scaling"): the kernels a8.UnscaleCheckFinite and
// a8.UpdateScale against references, and the loss-scaling pass in a compiled MLP run through the
// Executor: PRECISION.md's worked example and a real overflow that is skipped byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/plan/plan_file.h"
#include "compiler/plan/plan_scaler.h"
#include "driver/driver.h"
#include "kernels/common/float16.h"
#include "kernels/cpu/optim.h"
#include "passes/autodiff/build_training.h"
#include "runtime/core/executor.h"
#include "runtime/core/trainer.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/compile_test_util.h"

namespace a8 {
namespace {

std::vector<double> RandomValues(size_t n, uint32_t seed, double scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

// Unscales tensors of `dtype` and checks every output against (double)g * (1/scale in double,
// rounded to float), rounded to float.
void CheckUnscale(DType dtype, const std::vector<int64_t>& sizes, float scale,
                  const std::vector<std::pair<size_t, size_t>>& poison, double poison_value,
                  bool expect_inf) {
  std::vector<std::vector<uint16_t>> half(sizes.size());
  std::vector<std::vector<float>> f32(sizes.size());
  std::vector<std::vector<double>> ref_in(sizes.size());
  std::vector<std::vector<float>> outs(sizes.size());
  std::vector<DType> dtypes;
  std::vector<int64_t> counts;
  std::vector<const void*> grads;
  std::vector<float*> out_ptrs;
  for (size_t t = 0; t < sizes.size(); ++t) {
    std::vector<double> v = RandomValues(static_cast<size_t>(sizes[t]), 11 + t, 100.0);
    for (const auto& [pt, pi] : poison) {
      if (pt == t) v[pi] = poison_value;
    }
    outs[t].assign(v.size(), -1.0f);
    for (double x : v) {
      if (dtype == DType::kF16) {
        half[t].push_back(FloatToHalfBits(static_cast<float>(x)));
        ref_in[t].push_back(HalfBitsToFloat(half[t].back()));
      } else {
        f32[t].push_back(static_cast<float>(x));
        ref_in[t].push_back(f32[t].back());
      }
    }
    dtypes.push_back(dtype);
    counts.push_back(sizes[t]);
    grads.push_back(dtype == DType::kF16 ? static_cast<const void*>(half[t].data())
                                         : static_cast<const void*>(f32[t].data()));
    out_ptrs.push_back(outs[t].data());
  }
  float found = -1.0f;
  ASSERT_TRUE(cpu::UnscaleCheckFinite(scale, dtypes, counts, grads, out_ptrs, &found).ok());
  EXPECT_EQ(found, expect_inf ? 1.0f : 0.0f);
  const double inv = static_cast<float>(1.0 / static_cast<double>(scale));
  for (size_t t = 0; t < sizes.size(); ++t) {
    for (size_t i = 0; i < ref_in[t].size(); ++i) {
      const double want = ref_in[t][i] * inv;
      if (!std::isfinite(want)) {
        EXPECT_EQ(std::isnan(want), std::isnan(outs[t][i])) << t << "," << i;
        continue;
      }
      EXPECT_NEAR(outs[t][i], want, std::abs(want) * 1e-6 + 1e-30) << t << "," << i;
    }
  }
}

TEST(LossScalingTest, UnscaleMatchesDoubleReferenceF32AndF16) {
  CheckUnscale(DType::kF32, {1, 7, 333, 40001}, 65536.0f, {}, 0, false);
  CheckUnscale(DType::kF32, {5, 129}, 3.0f, {}, 0, false);  // 1/3 is not exact
  CheckUnscale(DType::kF16, {3, 17, 1025}, 1024.0f, {}, 0, false);
  CheckUnscale(DType::kF16, {64}, 7.0f, {}, 0, false);
}

TEST(LossScalingTest, UnscaleFlagsInfAndNanInAnyTensor) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CheckUnscale(DType::kF32, {7, 40001}, 2.0f, {{1, 40000}}, inf, true);
  CheckUnscale(DType::kF32, {7, 33}, 2.0f, {{0, 3}}, -inf, true);
  CheckUnscale(DType::kF32, {7, 33}, 2.0f, {{1, 0}}, nan, true);
  CheckUnscale(DType::kF16, {9, 20000}, 8.0f, {{1, 19999}}, nan, true);
  // 1e6 overflows f16: the gradient is Inf once stored in half.
  CheckUnscale(DType::kF16, {9}, 8.0f, {{0, 4}}, 1e6, true);
}

// PyTorch's _amp_update_scale_ written out, with a8's floor and ceiling.
struct ReferenceScaler {
  double scale;
  int tracker = 0;
  double growth, backoff, min_scale, max_scale;
  int interval;
  void Step(bool inf) {
    if (inf) {
      scale = std::max(static_cast<double>(static_cast<float>(scale * backoff)), min_scale);
      tracker = 0;
      return;
    }
    if (++tracker == interval) {
      const float grown = static_cast<float>(scale * growth);
      if (std::isfinite(grown) && (max_scale <= 0 || grown <= max_scale)) scale = grown;
      tracker = 0;
    }
  }
};

TEST(LossScalingTest, UpdateScaleWorkedExampleOfPrecisionMd) {
  cpu::UpdateScaleParams p;
  p.growth_factor = 2.0f;
  p.backoff_factor = 0.5f;
  p.growth_interval = 2;
  float scale = 4.0f, next = 0;
  int32_t tracker = 0, tracker_next = 0;
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(cpu::UpdateScale(p, scale, tracker, 0.0f, step, &next, &tracker_next).ok());
    scale = next;
    tracker = tracker_next;
  }
  EXPECT_EQ(scale, 8.0f);
  EXPECT_EQ(tracker, 0);
  ASSERT_TRUE(cpu::UpdateScale(p, scale, tracker, 1.0f, 2, &next, &tracker_next).ok());
  EXPECT_EQ(next, 4.0f);
  EXPECT_EQ(tracker_next, 0);
}

TEST(LossScalingTest, UpdateScaleFollowsPyTorchOnLongRandomSequences) {
  for (uint32_t seed = 0; seed < 6; ++seed) {
    std::mt19937 rng(seed);
    cpu::UpdateScaleParams p;
    p.growth_factor = seed % 2 ? 2.0f : 3.0f;
    p.backoff_factor = seed % 3 ? 0.5f : 0.25f;
    p.growth_interval = 1 + seed * 3;
    p.min_scale = seed >= 3 ? 1.0f : 0.0f;
    p.max_scale = seed >= 4 ? 1e6f : 0.0f;
    ReferenceScaler ref{65536.0,
                        0,
                        p.growth_factor,
                        p.backoff_factor,
                        p.min_scale,
                        p.max_scale,
                        static_cast<int>(p.growth_interval)};
    std::bernoulli_distribution overflow(seed % 2 ? 0.05 : 0.3);
    float scale = 65536.0f;
    int32_t tracker = 0;
    for (int64_t step = 0; step < 5000; ++step) {
      const bool inf = overflow(rng);
      float next = 0;
      int32_t tracker_next = 0;
      ASSERT_TRUE(
          cpu::UpdateScale(p, scale, tracker, inf ? 1.0f : 0.0f, step, &next, &tracker_next).ok());
      ref.Step(inf);
      ASSERT_EQ(next, static_cast<float>(ref.scale)) << "seed " << seed << " step " << step;
      ASSERT_EQ(tracker_next, ref.tracker) << "seed " << seed << " step " << step;
      scale = next;
      tracker = tracker_next;
    }
  }
}

TEST(LossScalingTest, UpdateScaleKeepsStateOnMicroStepsAndRejectsBadParams) {
  cpu::UpdateScaleParams p;
  p.accumulate = 4;
  p.growth_interval = 1;
  float next = 0;
  int32_t tracker = 0;
  ASSERT_TRUE(cpu::UpdateScale(p, 16.0f, 0, 1.0f, 0, &next, &tracker).ok());
  EXPECT_EQ(next, 16.0f);  // a micro-step: nothing changes, even with an overflow
  ASSERT_TRUE(cpu::UpdateScale(p, 16.0f, 0, 1.0f, 3, &next, &tracker).ok());
  EXPECT_EQ(next, 8.0f);
  p.growth_interval = 0;
  EXPECT_FALSE(cpu::UpdateScale(p, 16.0f, 0, 0.0f, 3, &next, &tracker).ok());
}

// ---- the pass, compiled and run

PlanFile CompileScaledMlp(const std::string& loss_scale, float init_scale, int64_t interval,
                          float min_scale = 1.0f) {
  TrainingConfig cfg;
  cfg.loss = "cross_entropy";
  cfg.optimizer = "adam";
  cfg.loss_scale = loss_scale;
  cfg.init_scale = init_scale;
  cfg.growth_interval = interval;
  cfg.min_scale = min_scale;
  return testing::CompileTrainingPlan("mlp", 4, cfg);
}

const plan::Buffer* Find(const plan::Plan& p, const std::string& name) {
  for (const plan::Buffer& b : p.buffers()) {
    if (b.name() == name) return &b;
  }
  return nullptr;
}

std::string Bytes(const Executor& ex, const std::string& name) {
  const plan::Buffer* b = Find(ex.plan(), name);
  if (b == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(ex.BufferData(b->id())), b->bytes());
}

template <typename T>
T Scalar(const Executor& ex, const std::string& name) {
  T v{};
  std::string b = Bytes(ex, name);
  if (b.size() == sizeof(T)) std::memcpy(&v, b.data(), sizeof(T));
  return v;
}

Status Step(Executor& ex, int64_t step, float poison) {
  std::vector<float> x(4 * 64);
  std::vector<double> v = RandomValues(x.size(), 100 + static_cast<uint32_t>(step), 1.0);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(v[i]);
  // Every input at `poison`: an fc1 unit is then 3e38 times the sum of its 64 weights (about
  // N(0, 1)), so some of the 128 units pass +FLT_MAX and Relu lets them through whatever the
  // weights are (one poisoned input could meet only negative weights).
  if (poison != 0) std::fill(x.begin(), x.end(), poison);
  std::vector<int64_t> labels = {1, 7, 3, 9};
  A8_RETURN_IF_ERROR(ex.SetInput("x", x.data(), x.size() * sizeof(float)));
  A8_RETURN_IF_ERROR(ex.SetInput("labels", labels.data(), labels.size() * sizeof(int64_t)));
  return ex.Run();
}

TEST(LossScalingTest, PassPutsScaleUnscaleAndUpdateInThePlan) {
  PlanFile pf = CompileScaledMlp("dynamic", 4.0f, 2);
  const plan::Plan& p = pf.plan;
  EXPECT_EQ(p.scaler().mode(), "dynamic");
  // The settings are stored once: the scale buffer's initial value and the UpdateScale kernel.
  auto settings = PlanScalerOf(pf);
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  EXPECT_EQ(settings->init_scale, 4.0f);
  EXPECT_EQ(settings->update.growth_interval, 2);
  const plan::Buffer* scale = Find(p, "a8.scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(p.train().scale_buffer(), scale->id());
  EXPECT_NE(Find(p, "a8.growth_tracker"), nullptr);
  // fuse-optimizer folds the unscale into the AdamW updates: one check of the scaled gradients,
  // and every update reads its scaled gradient and the scale.
  int check = 0, unscale = 0, update = 0, adam = 0, adam_scaled = 0;
  for (const plan::Kernel& k : p.kernels()) {
    check += k.op() == "a8.CheckFinite";
    unscale += k.op() == "a8.UnscaleCheckFinite";
    update += k.op() == "a8.UpdateScale";
    if (k.op() != "a8.AdamUpdate") continue;
    ++adam;
    adam_scaled += k.inputs_size() == 6 && k.inputs(5) == scale->id();
  }
  EXPECT_EQ(check, 1);
  EXPECT_EQ(unscale, 0);
  EXPECT_EQ(update, 1);
  EXPECT_GT(adam, 0);
  EXPECT_EQ(adam_scaled, adam);

  PlanFile none = CompileScaledMlp("none", 4.0f, 2);
  EXPECT_EQ(none.plan.scaler().mode(), "none");
  EXPECT_EQ(none.plan.train().scale_buffer(), -1);
  PlanFile fixed = CompileScaledMlp("static:128", 4.0f, 2);
  EXPECT_EQ(fixed.plan.scaler().mode(), "static");
  auto fixed_settings = PlanScalerOf(fixed);
  ASSERT_TRUE(fixed_settings.ok()) << fixed_settings.status().message();
  EXPECT_EQ(fixed_settings->init_scale, 128.0f);
}

// PRECISION.md's worked example in-graph: init 4, growth 2, backoff 0.5, interval 2; then a real
// overflow (inputs of 3e38 overflow the forward pass) is skipped bit for bit.
TEST(LossScalingTest, WorkedExampleAndInjectedOverflowThroughTheExecutor) {
  auto created = Executor::Create(CompileScaledMlp("dynamic", 4.0f, 2), MakeCpuBackend(), {});
  ASSERT_TRUE(created.ok()) << created.status().message();
  Executor& ex = **created;
  ASSERT_EQ(Scalar<float>(ex, "a8.scale"), 4.0f);
  for (int64_t s = 0; s < 2; ++s) ASSERT_TRUE(Step(ex, s, 0).ok());
  EXPECT_EQ(Scalar<float>(ex, "a8.scale"), 8.0f);
  EXPECT_EQ(Scalar<float>(ex, "a8.updates"), 2.0f);

  const std::vector<std::string> kept = {
      "fc1.weight",         "fc1.bias", "fc3.weight", "fc1.weight.exp_avg", "fc1.weight.exp_avg_sq",
      "fc3.bias.exp_avg_sq"};
  std::vector<std::string> before;
  for (const std::string& n : kept) before.push_back(Bytes(ex, n));
  ASSERT_TRUE(Step(ex, 2, 3e38f).ok());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_FALSE(before[i].empty()) << kept[i];
    EXPECT_TRUE(Bytes(ex, kept[i]) == before[i]) << kept[i] << " changed on a skipped step";
  }
  EXPECT_EQ(Scalar<float>(ex, "a8.updates"), 2.0f);  // Adam's t did not move
  EXPECT_EQ(Scalar<float>(ex, "a8.scale"), 4.0f);
  EXPECT_EQ(Scalar<int32_t>(ex, "a8.growth_tracker"), 0);
  EXPECT_EQ(Scalar<int64_t>(ex, "a8.step"), 3);

  // A clean step applies again.
  ASSERT_TRUE(Step(ex, 3, 0).ok());
  EXPECT_EQ(Scalar<float>(ex, "a8.updates"), 3.0f);
  EXPECT_FALSE(Bytes(ex, "fc1.weight") == before[0]);
  EXPECT_EQ(Scalar<float>(ex, "a8.scale"), 4.0f);
}

class Recorder : public TrainObserver {
 public:
  Status OnStep(const StepRecord& r) override {
    records.push_back(r);
    return Status::Ok();
  }
  std::vector<StepRecord> records;
};

// The trainer reports the scale each step ran with and the skipped updates; a scale stuck at
// --min-scale for --growth-interval updates stops the run, naming the step and the scale.
TEST(LossScalingTest, TrainerRecordsScaleAndSkipsAndStopsAtTheFloor) {
  auto created = Executor::Create(CompileScaledMlp("dynamic", 4.0f, 2), MakeCpuBackend(), {});
  ASSERT_TRUE(created.ok()) << created.status().message();
  Executor& ex = **created;
  // Steps 0-1 clean (4 -> 8), then overflows: 8 -> 4 -> 2 -> 1 -> 1 (at the floor) -> stop.
  FillInputs fill = [](Executor& e, int64_t step) -> Status {
    std::vector<float> x(4 * 64, 0.5f);
    if (step >= 2) x[0] = std::numeric_limits<float>::infinity();
    std::vector<int64_t> labels = {1, 2, 3, 4};
    A8_RETURN_IF_ERROR(e.SetInput("x", x.data(), x.size() * sizeof(float)));
    return e.SetInput("labels", labels.data(), labels.size() * sizeof(int64_t));
  };
  TrainOptions opts;
  opts.total_steps = 20;
  Recorder rec;
  auto summary = Train(ex, fill, nullptr, opts, rec);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("--min-scale=1"), std::string::npos)
      << summary.status().message();
  EXPECT_NE(summary.status().message().find("step 7"), std::string::npos)
      << summary.status().message();
  const std::vector<double> scales = {4, 4, 8, 4, 2, 1, 1};
  ASSERT_EQ(rec.records.size(), scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    EXPECT_EQ(rec.records[i].scale, scales[i]) << i;
    EXPECT_EQ(rec.records[i].skipped, i >= 2) << i;
  }
}

TEST(LossScalingTest, BadFlagsAreErrorsNamingTheFlag) {
  TrainingConfig c;
  c.loss = "mse";
  for (const auto& [set, flag] :
       std::vector<std::pair<std::function<void(TrainingConfig&)>, std::string>>{
           {[](TrainingConfig& t) { t.loss_scale = "sometimes"; }, "--loss-scale"},
           {[](TrainingConfig& t) { t.loss_scale = "static:"; }, "--loss-scale"},
           {[](TrainingConfig& t) { t.loss_scale = "static:-2"; }, "--loss-scale"},
           {[](TrainingConfig& t) { t.loss_scale = "static:1e40"; }, "--loss-scale"},
           {[](TrainingConfig& t) { t.init_scale = 0; }, "--init-scale"},
           {[](TrainingConfig& t) { t.growth_factor = 1; }, "--growth-factor"},
           {[](TrainingConfig& t) { t.backoff_factor = 1; }, "--backoff-factor"},
           {[](TrainingConfig& t) { t.growth_interval = 0; }, "--growth-interval"},
           {[](TrainingConfig& t) { t.min_scale = -1; }, "--min-scale"},
           {[](TrainingConfig& t) { t.max_scale = 0.5f; }, "--max-scale"},
       }) {
    TrainingConfig bad = c;
    bad.loss_scale = "dynamic";
    set(bad);
    Status s = CheckTrainingConfig(bad);
    EXPECT_FALSE(s.ok()) << flag;
    EXPECT_NE(s.message().find(flag), std::string::npos) << s.message();
  }
  TrainingConfig ok = c;
  ok.loss_scale = "static:1024";
  EXPECT_TRUE(CheckTrainingConfig(ok).ok());
}

}  // namespace
}  // namespace a8

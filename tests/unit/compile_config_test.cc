// The typed compile configuration (compiler/pass/compile_config.h): ValidateCompileConfig
// rejects every bad flag value with one error that names the flag, before any import; the
// passes read the configuration the PassManager hands them, never the graph; the flags'
// defaults are train_defaults.h's, which are PRECISION.md's numbers.
#include "compiler/pass/compile_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_table.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "driver/driver.h"
#include "kernels/common/optim_math.h"
#include "passes/autodiff/build_training.h"

namespace a8 {
namespace {

using Edit = std::function<void(TrainingConfig&)>;

CompileConfig Training(const Edit& edit) {
  CompileConfig c;
  c.training = TrainingConfig{};
  c.training->loss = "cross_entropy";
  edit(*c.training);
  return c;
}

TEST(CompileConfigTest, EveryBadTrainingValueIsOneErrorNamingItsFlag) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<Edit, std::string>> cases = {
      {[](TrainingConfig& t) { t.loss = "hinge"; }, "--loss: unknown loss 'hinge'"},
      {[](TrainingConfig& t) { t.optimizer = "lamb"; }, "--optimizer: unknown optimizer 'lamb'"},
      {[](TrainingConfig& t) { t.lr = 0; }, "--lr: must be a finite number > 0, got 0"},
      {[&](TrainingConfig& t) { t.lr = inf; }, "--lr: must be a finite number > 0, got inf"},
      {[](TrainingConfig& t) { t.min_lr = -1; }, "--min-lr: must be a finite number >= 0"},
      {[](TrainingConfig& t) { t.momentum = -0.5f; }, "--momentum: must be a finite number >= 0"},
      {[](TrainingConfig& t) { t.dampening = 2; }, "--dampening: must be in [0, 1], got 2"},
      {[](TrainingConfig& t) { t.beta1 = 1; }, "--beta1: must be in [0, 1), got 1"},
      {[&](TrainingConfig& t) { t.beta2 = nan; }, "--beta2: must be in [0, 1), got nan"},
      {[](TrainingConfig& t) { t.eps = -1e-8f; }, "--eps: must be a finite number >= 0"},
      {[&](TrainingConfig& t) { t.weight_decay = nan; }, "--weight-decay: must be a finite"},
      {[](TrainingConfig& t) { t.accumulate = 0; }, "--accumulate: must be >= 1, got 0"},
      {[](TrainingConfig& t) { t.clip_grad_norm = -1; }, "--clip-grad-norm: must be a finite"},
      {[](TrainingConfig& t) { t.lr_schedule = "step"; }, "--lr-schedule: unknown schedule"},
      {[](TrainingConfig& t) { t.warmup_steps = -3; }, "--warmup-steps: must be >= 0, got -3"},
      {[](TrainingConfig& t) { t.lr_schedule = "cosine"; },
       "--lr-schedule=cosine needs --total-steps > --warmup-steps"},
      {[](TrainingConfig& t) { t.bucket_mb = 0; }, "--bucket-mb: must be a positive number"},
      {[](TrainingConfig& t) { t.allreduce_dtype = "bf16"; }, "--allreduce-dtype: expected f32"},
      {[](TrainingConfig& t) { t.loss_scale = "always"; }, "--loss-scale: unknown mode 'always'"},
      {[](TrainingConfig& t) { t.loss_scale = "static:0"; }, "--loss-scale=static:0: the static"},
      {[](TrainingConfig& t) { t.init_scale = -1; }, "--init-scale: must be a finite number > 0"},
      {[](TrainingConfig& t) { t.growth_factor = 0.5f; }, "--growth-factor: must be > 1"},
      {[](TrainingConfig& t) { t.backoff_factor = 0; }, "--backoff-factor: must be in (0, 1)"},
      {[](TrainingConfig& t) { t.growth_interval = 0; }, "--growth-interval: must be in [1, "},
      {[](TrainingConfig& t) { t.min_scale = 0; }, "--min-scale: must be a finite number > 0"},
      {[](TrainingConfig& t) { t.max_scale = 0.5f; }, "--max-scale: must be a finite number >="},
      {[](TrainingConfig& t) { t.init_scale = 1e9f; },
       "--init-scale: 1000000000 is outside [--min-scale, --max-scale]"},
  };
  for (const auto& [edit, expected] : cases) {
    Status s = ValidateCompileConfig(Training(edit));
    ASSERT_FALSE(s.ok()) << expected;
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << s.message();
    EXPECT_EQ(s.message().rfind(expected, 0), 0u) << "got: " << s.message();
  }
  EXPECT_TRUE(ValidateCompileConfig(Training([](TrainingConfig&) {})).ok());
  EXPECT_TRUE(ValidateCompileConfig(CompileConfig{}).ok());
}

TEST(CompileConfigTest, BadPrecisionOverridesAreErrorsNamingTheFlag) {
  CompileConfig c;
  c.precision = PrecisionConfig{};
  c.precision->overrides = {PrecisionOverride::Fp32Nodes("(")};
  Status s = ValidateCompileConfig(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--fp32-nodes"), std::string::npos) << s.message();
  c.precision->overrides = {PrecisionOverride::Fp32Ops({"NoSuchOp"})};
  s = ValidateCompileConfig(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--fp32-ops"), std::string::npos) << s.message();
}

// The configuration is checked before the model is read: a missing model with a bad flag
// reports the flag.
TEST(CompileConfigTest, CompileChecksTheConfigurationBeforeTheModel) {
  CompileOptions opts;
  opts.model = "/nonexistent/model.onnx";
  opts.output = "-";
  opts.config = Training([](TrainingConfig& t) { t.beta2 = 1.5f; });
  std::ostringstream out;
  Status s = Compile(opts, out, [](const std::string&) {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("--beta2: must be in [0, 1), got 1.5", 0), 0u) << s.message();
}

// The flags' defaults are PRECISION.md's and CLI.md's numbers, and the optimizer kernels and the
// op table take theirs from the same header.
TEST(CompileConfigTest, DefaultsAreWrittenOnceAndArePrecisionMdsNumbers) {
  const TrainingConfig t;
  EXPECT_EQ(t.init_scale, 65536.0f);
  EXPECT_EQ(t.growth_factor, 2.0f);
  EXPECT_EQ(t.backoff_factor, 0.5f);
  EXPECT_EQ(t.growth_interval, 2000);
  EXPECT_EQ(t.min_scale, 1.0f);
  EXPECT_EQ(t.max_scale, 16777216.0f);
  EXPECT_EQ(t.lr, 1e-3f);
  EXPECT_EQ(t.beta1, 0.9f);
  EXPECT_EQ(t.beta2, 0.999f);
  EXPECT_EQ(t.eps, 1e-8f);
  EXPECT_EQ(t.momentum, 0.9f);
  TrainingConfig adamw = t, adam = t;
  adam.optimizer = "adam";
  EXPECT_EQ(adamw.EffectiveWeightDecay(), 0.01f);
  EXPECT_EQ(adam.EffectiveWeightDecay(), 0.0f);

  const cpu::UpdateScaleParams update;
  EXPECT_EQ(update.growth_factor, t.growth_factor);
  EXPECT_EQ(update.backoff_factor, t.backoff_factor);
  EXPECT_EQ(update.growth_interval, t.growth_interval);
  const cpu::AdamParams kernel;
  EXPECT_EQ(kernel.beta1, t.beta1);
  EXPECT_EQ(kernel.beta2, t.beta2);
  EXPECT_EQ(kernel.eps, t.eps);
  const OpDef* op = FindOp("a8", "AdamUpdate");
  ASSERT_NE(op, nullptr);
  std::map<std::string, float> attr_defaults;
  for (const AttrSpec& a : op->attrs) {
    if (a.default_value && a.default_value->kind() == AttrKind::kFloat) {
      attr_defaults[a.name] = a.default_value->f();
    }
  }
  EXPECT_EQ(attr_defaults["beta1"], t.beta1);
  EXPECT_EQ(attr_defaults["beta2"], t.beta2);
  EXPECT_EQ(attr_defaults["eps"], t.eps);
}

// build-training reads the configuration the PassManager hands it: the same graph with and
// without one.
TEST(CompileConfigTest, PassesReadTheConfigurationTheManagerHandsThem) {
  const char* ir = R"(graph @t opsets {"" = 17} {
  input %x : f32[2,3]
  param %w : f32[3,2] = [0.5, -0.25, 0.125, 1.0, -0.75, 0.375]
  %y = MatMul(%x, %w) : f32[2,2] loc("mm")
  output %y
})";
  auto plain = ParseIr(ir);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  PassManagerOptions pm;
  ASSERT_TRUE(RunPasses(**plain, {"build-training"}, pm).ok());
  EXPECT_FALSE((*plain)->train_step.has_value());

  auto trained = ParseIr(ir);
  ASSERT_TRUE(trained.ok());
  const CompileConfig config = Training([](TrainingConfig& t) { t.optimizer = "sgd"; });
  pm.config = &config;
  Status s = RunPasses(**trained, {"build-training"}, pm);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE((*trained)->train_step.has_value());
  EXPECT_EQ((*trained)->train_step->trainable, std::vector<std::string>{"w"});
  EXPECT_FALSE((*trained)->train_step->loss_output.empty());
  // The configuration is not on the graph: running again finds the step already built.
  const std::string once = PrintIrToString(**trained);
  ASSERT_TRUE(RunPasses(**trained, {"build-training"}, pm).ok());
  EXPECT_EQ(PrintIrToString(**trained), once);
}

}  // namespace
}  // namespace a8

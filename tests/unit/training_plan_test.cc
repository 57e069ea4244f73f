// Training plans: what lower writes for a training step (updates, the Training message, updates
// in place) and what ValidatePlan rejects when those fields are corrupt.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>

#include "compiler/plan/plan_file.h"
#include "driver/driver.h"
#include "tests/unit/compile_test_util.h"

namespace a8 {
namespace {

// The MLP compiled as a training step (batch 4).
PlanFile CompileMlp(const std::string& optimizer = "adamw", int64_t accumulate = 1) {
  TrainingConfig cfg;
  cfg.loss = "cross_entropy";
  cfg.optimizer = optimizer;
  cfg.accumulate = accumulate;
  return testing::CompileTrainingPlan("mlp", 4, cfg);
}

int BufferId(const plan::Plan& p, const std::string& name) {
  for (const plan::Buffer& b : p.buffers()) {
    if (b.name() == name) return b.id();
  }
  return -1;
}

TEST(TrainingPlanTest, LowerWritesUpdatesTrainingAndUpdatesInPlace) {
  PlanFile pf = CompileMlp();
  const plan::Plan& p = pf.plan;
  ASSERT_TRUE(p.training());
  EXPECT_EQ(p.train().loss(), "loss");
  EXPECT_EQ(p.train().logits(), "logits");
  EXPECT_EQ(p.train().labels(), "labels");
  EXPECT_EQ(p.train().optimizer(), "adamw");
  EXPECT_FLOAT_EQ(p.train().weight_decay(), 0.01f);
  EXPECT_EQ(p.train().trainable_size(), 6);
  // 6 parameters x (param, exp_avg, exp_avg_sq) + step, updates, control.
  EXPECT_EQ(p.updates_size(), 21);
  const int step = p.train().step_buffer();
  ASSERT_GE(step, 0);
  EXPECT_EQ(p.buffers(step).name(), "a8.step");
  // The eval step is the forward pass and the loss: Gemm + Relu (fused), Gemm + Relu (fused),
  // Gemm, loss.
  EXPECT_EQ(p.train().eval_kernels_size(), 4);
  // Every parameter's new value is written in place.
  int in_place = 0;
  for (const plan::Update& u : p.updates()) {
    const plan::Buffer& src = p.buffers(u.source());
    if (src.region() == plan::Buffer::PERSISTENT) {
      ++in_place;
      EXPECT_EQ(src.alias_of(), u.target());
      EXPECT_EQ(src.offset(), p.buffers(u.target()).offset());
    }
  }
  EXPECT_EQ(in_place, 18);
  EXPECT_TRUE(ValidatePlan(pf, "t").ok());
}

TEST(TrainingPlanTest, AccumulationAddsStateAndStillValidates) {
  PlanFile pf = CompileMlp("sgd", 4);
  EXPECT_EQ(pf.plan.train().accumulate(), 4);
  EXPECT_GE(BufferId(pf.plan, "fc1.weight.grad_acc"), 0);
  EXPECT_TRUE(ValidatePlan(pf, "t").ok());
}

void ExpectInvalid(const std::function<void(plan::Plan*)>& corrupt, const std::string& message) {
  PlanFile pf = CompileMlp();
  corrupt(&pf.plan);
  Status s = ValidatePlan(pf, "t.plan");
  ASSERT_FALSE(s.ok()) << "expected: " << message;
  EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
}

TEST(TrainingPlanTest, CorruptTrainingFieldsAreClearErrors) {
  ExpectInvalid([](plan::Plan* p) { p->mutable_updates(0)->set_target(9999); },
                "updates[0]: buffer ids 9999");
  ExpectInvalid([](plan::Plan* p) { p->mutable_updates(0)->set_target(BufferId(*p, "x")); },
                "is not a parameter or state buffer");
  ExpectInvalid(
      [](plan::Plan* p) { p->mutable_updates(3)->set_source(BufferId(*p, "a8.step.next")); },
      "does not have the type of target");
  ExpectInvalid([](plan::Plan* p) { *p->add_updates() = p->updates(1); }, "is updated twice");
  ExpectInvalid([](plan::Plan* p) { p->mutable_train()->set_loss("nope"); },
                "train.loss: 'nope' is not a plan output");
  ExpectInvalid([](plan::Plan* p) { p->mutable_train()->set_labels("nope"); },
                "train.labels: 'nope' is not a plan input");
  ExpectInvalid(
      [](plan::Plan* p) { p->mutable_train()->set_step_buffer(BufferId(*p, "a8.control")); },
      "train.step_buffer");
  ExpectInvalid([](plan::Plan* p) { p->mutable_train()->set_accumulate(0); },
                "train.accumulate: 0 must be >= 1");
  ExpectInvalid(
      [](plan::Plan* p) {
        p->mutable_train()->mutable_eval_kernels()->Add(0);  // not ascending
      },
      "train.eval_kernels");
  ExpectInvalid([](plan::Plan* p) { p->set_training(false); }, "train: set in an inference plan");
  // An update in place that does not sit on its target's bytes.
  ExpectInvalid(
      [](plan::Plan* p) {
        plan::Buffer* b = p->mutable_buffers(BufferId(*p, "fc1.weight.next"));
        b->set_offset(b->offset() + 64);
      },
      "must share the offset and size");
  // A persistent result that is not an update source.
  ExpectInvalid(
      [](plan::Plan* p) {
        for (plan::Update& u : *p->mutable_updates()) {
          if (p->buffers(u.source()).name() == "fc1.weight.next") {
            u.set_source(BufferId(*p, "fc1.weight"));
          }
        }
      },
      "written in place over buffer");
}

}  // namespace
}  // namespace a8

// The executor on hand-built training plans: a step runs every kernel and then applies the
// updates in order; an evaluation step runs the forward kernels only, with StepInfo.eval, and
// changes nothing; the step counter comes from the step buffer; poisoning never touches an
// update source before it is copied; malformed updates are errors before anything runs. The
// training loop (trainer.h): evaluation over a dataset whose last batch is padded, and the
// schedule of steps, evaluations and checkpoints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>

#include "runtime/core/checkpoint.h"
#include "runtime/core/executor.h"
#include "runtime/core/trainer.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/temp_path_util.h"
#include "tests/unit/training_test_util.h"

namespace a8 {
namespace {

using testing::BuildTrainPlan;
using testing::RandomNormals;
using testing::TrainPlanOptions;

std::vector<float> Read(const Executor& ex, const std::string& name) {
  for (const plan::Buffer& b : ex.plan().buffers())
    if (b.name() == name) {
      const float* p = reinterpret_cast<const float*>(ex.BufferData(b.id()));
      return std::vector<float>(p, p + b.bytes() / 4);
    }
  ADD_FAILURE() << "no buffer " << name;
  return {};
}

std::unique_ptr<Executor> Make(PlanFile f, ExecutorOptions opts = {}) {
  auto ex = Executor::Create(std::move(f), MakeCpuBackend(), opts);
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  return ex.ok() ? std::move(ex).value() : nullptr;
}

TEST(RuntimeTrainingTest, RunAppliesUpdatesAfterTheKernels) {
  auto ex = Make(BuildTrainPlan());
  ASSERT_TRUE(ex);
  std::vector<float> w = Read(*ex, "W");
  for (int step = 0; step < 3; ++step) {
    std::vector<float> x = RandomNormals(4, 100 + step);
    ASSERT_TRUE(ex->SetInput("x", x.data(), 16).ok());
    Status s = ex->Run();
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<float> y = Read(*ex, "y");
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(y[i], w[i] * x[i]) << "the forward pass sees the weights before the update";
      w[i] += x[i];
    }
    EXPECT_EQ(Read(*ex, "W"), w);
    EXPECT_EQ(ex->step(), step + 1);
    EXPECT_EQ(ex->steps_run(), step + 1);
  }
}

TEST(RuntimeTrainingTest, RunEvalRunsTheForwardKernelsOnlyAndChangesNothing) {
  TrainPlanOptions o;
  o.dropout = true;
  o.n = 64;
  auto ex = Make(BuildTrainPlan(o));
  ASSERT_TRUE(ex);
  std::vector<float> x = RandomNormals(64, 3);
  ASSERT_TRUE(ex->SetInput("x", x.data(), x.size() * 4).ok());
  std::vector<float> w = Read(*ex, "W");
  Status s = ex->RunEval();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Read(*ex, "W"), w);
  EXPECT_EQ(ex->step(), 0);
  EXPECT_EQ(ex->steps_run(), 0);
  std::vector<float> y = Read(*ex, "y");
  for (int i = 0; i < 64; ++i) EXPECT_EQ(y[i], w[i] * x[i]);
  EXPECT_EQ(Read(*ex, "d"), x) << "Dropout passes through in an evaluation step";
  // A training step drops about half.
  ASSERT_TRUE(ex->Run().ok());
  std::vector<float> d = Read(*ex, "d");
  int zeros = 0;
  for (float v : d) zeros += v == 0.0f;
  EXPECT_GT(zeros, 8);
  EXPECT_LT(zeros, 56);
}

TEST(RuntimeTrainingTest, TheStepBufferIsTheKernelsStep) {
  // The dropout mask is a function of (seed, step): a plan whose step buffer starts at 7 draws
  // the mask that a plan without a step buffer draws after 7 steps.
  TrainPlanOptions a;
  a.dropout = true;
  a.n = 64;
  a.initial_step = 7;
  TrainPlanOptions b = a;
  b.step_buffer = false;
  ExecutorOptions opts;
  opts.seed = 11;
  auto ex_a = Make(BuildTrainPlan(a), opts);
  auto ex_b = Make(BuildTrainPlan(b), opts);
  ASSERT_TRUE(ex_a && ex_b);
  EXPECT_EQ(ex_a->step(), 7);
  ex_b->set_steps_run(7);
  EXPECT_EQ(ex_b->step(), 7);
  std::vector<float> x = RandomNormals(64, 4);
  for (Executor* ex : {ex_a.get(), ex_b.get()}) {
    ASSERT_TRUE(ex->SetInput("x", x.data(), x.size() * 4).ok());
    ASSERT_TRUE(ex->Run().ok());
  }
  std::vector<float> da = Read(*ex_a, "d");
  EXPECT_EQ(da, Read(*ex_b, "d"));
  EXPECT_EQ(ex_a->step(), 8);
  EXPECT_EQ(ex_b->step(), 8);
  ASSERT_TRUE(ex_a->Run().ok());
  EXPECT_NE(Read(*ex_a, "d"), da) << "step 8 draws another mask";
}

TEST(RuntimeTrainingTest, PoisonNeverTouchesAnUpdateSourceBeforeItIsCopied) {
  // W.next's last reader is kernel 1 as far as live ranges go (nothing reads it), so a plain
  // poisoning pass would fill it with NaN before the update copies it.
  PlanFile f = BuildTrainPlan();
  ExecutorOptions opts;
  opts.poison_freed = true;
  auto poisoned = Make(f, opts);
  auto plain = Make(f);
  ASSERT_TRUE(poisoned && plain);
  for (int step = 0; step < 2; ++step) {
    std::vector<float> x = RandomNormals(4, 50 + step);
    for (Executor* ex : {poisoned.get(), plain.get()}) {
      ASSERT_TRUE(ex->SetInput("x", x.data(), 16).ok());
      ASSERT_TRUE(ex->Run().ok());
    }
    EXPECT_EQ(Read(*poisoned, "W"), Read(*plain, "W"));
    EXPECT_EQ(poisoned->step(), plain->step());
  }
  std::vector<float> x = RandomNormals(4, 60);
  ASSERT_TRUE(poisoned->SetInput("x", x.data(), 16).ok());
  ASSERT_TRUE(poisoned->RunEval().ok());
  ASSERT_TRUE(plain->SetInput("x", x.data(), 16).ok());
  ASSERT_TRUE(plain->RunEval().ok());
  EXPECT_EQ(Read(*poisoned, "y"), Read(*plain, "y"));
}

TEST(RuntimeTrainingTest, AnUpdateWrittenInPlaceIsNotCopied) {
  // W.next placed at W's address (a PERSISTENT buffer written in place by the Add).
  PlanFile f = BuildTrainPlan({.step_buffer = false});
  plan::Plan& p = f.plan;
  int w = p.updates(0).target(), w_next = p.updates(0).source();
  p.mutable_buffers(w_next)->set_region(plan::Buffer::PERSISTENT);
  p.mutable_buffers(w_next)->set_offset(p.buffers(w).offset());
  auto ex = Make(f);
  ASSERT_TRUE(ex);
  EXPECT_EQ(ex->BufferData(w), ex->BufferData(w_next));
  std::vector<float> w0 = Read(*ex, "W"), x = RandomNormals(4, 9);
  ASSERT_TRUE(ex->SetInput("x", x.data(), 16).ok());
  ASSERT_TRUE(ex->Run().ok());
  std::vector<float> w1 = Read(*ex, "W");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(w1[i], w0[i] + x[i]);
}

TEST(RuntimeTrainingTest, CheckpointBuffersAreTheParametersAndState) {
  auto ex = Make(BuildTrainPlan());
  ASSERT_TRUE(ex);
  std::vector<std::string> names;
  for (int id : ex->checkpoint_buffers()) names.push_back(ex->plan().buffers(id).name());
  EXPECT_EQ(names, (std::vector<std::string>{"W", "step"}));
}

TEST(RuntimeTrainingTest, MalformedTrainingFieldsAreErrorsBeforeAnythingRuns) {
  struct Case {
    const char* what;
    std::function<void(plan::Plan&)> edit;
  };
  std::vector<Case> cases = {
      {"out of range", [](plan::Plan& p) { p.mutable_updates(0)->set_source(99); }},
      {"is not a persistent buffer",
       [](plan::Plan& p) { p.mutable_updates(0)->set_target(p.updates(0).source()); }},
      {"has 16 bytes",
       [](plan::Plan& p) { p.mutable_updates(0)->set_source(p.updates(1).source()); }},
      {"step_buffer", [](plan::Plan& p) { p.mutable_train()->set_step_buffer(0); }},
      {"control_buffer", [](plan::Plan& p) { p.mutable_train()->set_control_buffer(1); }},
      {"eval_kernels", [](plan::Plan& p) { p.mutable_train()->add_eval_kernels(3); }},
  };
  for (const Case& c : cases) {
    PlanFile f = BuildTrainPlan();
    c.edit(f.plan);
    auto ex = Executor::Create(f, MakeCpuBackend());
    ASSERT_FALSE(ex.ok()) << c.what;
    EXPECT_EQ(ex.status().code(), StatusCode::kInternal) << c.what;
    EXPECT_NE(ex.status().message().find(c.what), std::string::npos) << ex.status().message();
  }
}

TEST(RuntimeTrainingTest, RunEvalOnAnInferencePlanIsAnError) {
  PlanFile f = BuildTrainPlan();
  f.plan.set_training(false);
  f.plan.clear_updates();
  auto ex = Make(f);
  ASSERT_TRUE(ex);
  EXPECT_EQ(ex->RunEval().code(), StatusCode::kInvalidInput);
  // An inference plan's step is the number of steps run, and nothing is updated.
  std::vector<float> w = Read(*ex, "W"), x = RandomNormals(4, 1);
  ASSERT_TRUE(ex->SetInput("x", x.data(), 16).ok());
  ASSERT_TRUE(ex->Run().ok());
  EXPECT_EQ(Read(*ex, "W"), w);
  EXPECT_EQ(ex->step(), 1);
}

// logits = Identity(x), loss = SoftmaxCrossEntropyLoss(x, labels): x f32[4,5], labels i64[4].
PlanFile ClassifierPlan(const std::string& loss_kind) {
  using Role = plan::Buffer;
  testing::PlanBuilder pb;
  int x = pb.Buffer("x", DType::kF32, {4, 5}, Role::INPUT);
  int labels = pb.Buffer("labels", DType::kI64, {4}, Role::INPUT);
  int logits = pb.Buffer("logits", DType::kF32, {4, 5}, Role::OUTPUT);
  int loss = pb.Buffer("loss", DType::kF32, {}, Role::OUTPUT);
  pb.Kernel("Identity", {x}, {logits});
  pb.Kernel("SoftmaxCrossEntropyLoss", {x, labels}, {loss});
  PlanFile f = pb.Finish();
  f.plan.set_training(true);
  plan::Training* t = f.plan.mutable_train();
  t->set_loss("loss");
  t->set_logits("logits");
  t->set_labels("labels");
  t->set_loss_kind(loss_kind);
  t->set_step_buffer(-1);
  t->set_control_buffer(-1);
  t->add_eval_kernels(0);
  t->add_eval_kernels(1);
  t->set_lr(0.5f);
  return f;
}

struct Classifier {
  std::vector<float> x = RandomNormals(50, 77);
  std::vector<int64_t> y = {3, 0, 4, 4, 1, 2, 0, 3, 1, 2};
  std::unique_ptr<Executor> ex;
  Dataset data;

  // Mean cross entropy of samples `idx` in float64.
  double Loss(const std::vector<int>& idx, int* correct = nullptr) const {
    double sum = 0;
    for (int i : idx) {
      const float* r = x.data() + 5 * i;
      double top = *std::max_element(r, r + 5), z = 0;
      for (int c = 0; c < 5; ++c) z += std::exp(r[c] - top);
      sum += top + std::log(z) - r[y[i]];
      if (correct != nullptr) *correct += std::max_element(r, r + 5) - r == y[i];
    }
    return sum / static_cast<double>(idx.size());
  }
};

Classifier MakeClassifier(const std::string& loss_kind) {
  Classifier c;
  std::string dir = a8::testing::UniqueTempPath("clf");
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(WriteNpyFile(dir + "/clf_x.npy", DType::kF32, {10, 5}, c.x.data()).ok());
  EXPECT_TRUE(WriteNpyFile(dir + "/clf_y.npy", DType::kI64, {10}, c.y.data()).ok());
  c.ex = Make(ClassifierPlan(loss_kind));
  auto d =
      Dataset::Load(c.ex->plan(), {{"x", dir + "/clf_x.npy"}, {"labels", dir + "/clf_y.npy"}}, {});
  EXPECT_TRUE(d.ok()) << d.status().message();
  c.data = std::move(d).value();
  return c;
}

TEST(RuntimeTrainingTest, EvaluateCountsOnlyTheRealSamplesOfThePaddedBatch) {
  Classifier c = MakeClassifier("cross_entropy");
  ASSERT_TRUE(c.ex);
  auto r = Evaluate(*c.ex, c.data);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int correct = 0;
  double want = c.Loss({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, &correct);
  EXPECT_EQ(r->samples, 10);
  EXPECT_TRUE(r->has_accuracy);
  EXPECT_EQ(r->correct, correct);
  EXPECT_DOUBLE_EQ(r->accuracy, correct / 10.0);
  EXPECT_NEAR(r->loss, want, 1e-12 * (1 + want)) << "exact, from the logits";
}

TEST(RuntimeTrainingTest, EvaluateWeighsBatchLossesByTheirRealSamples) {
  // Without cross entropy there is no per-sample loss: the padded batch (8, 9, 0, 1) counts
  // for two samples.
  Classifier c = MakeClassifier("output");
  ASSERT_TRUE(c.ex);
  auto r = Evaluate(*c.ex, c.data);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->has_accuracy);
  double want =
      (4 * c.Loss({0, 1, 2, 3}) + 4 * c.Loss({4, 5, 6, 7}) + 2 * c.Loss({8, 9, 0, 1})) / 10;
  EXPECT_NEAR(r->loss, want, 1e-6 * (1 + want));
}

class RecordingObserver : public TrainObserver {
 public:
  Status OnStep(const StepRecord& r) override {
    steps.push_back(r);
    return Status::Ok();
  }
  void OnEval(const EvalResult& e) override { evals.push_back(e.step); }
  void OnSave(const std::string&, int64_t step) override { saves.push_back(step); }
  std::vector<StepRecord> steps;
  std::vector<int64_t> evals, saves;
};

TEST(RuntimeTrainingTest, TrainRunsStepsEvaluationsAndSavesOnSchedule) {
  Classifier c = MakeClassifier("cross_entropy");
  ASSERT_TRUE(c.ex);
  Classifier eval = MakeClassifier("cross_entropy");
  TrainOptions o;
  o.total_steps = 6;
  o.eval_every = 4;
  o.save_every = 4;
  o.checkpoint = a8::testing::UniqueTempPath("trainer.safetensors");
  RecordingObserver obs;
  FillInputs fill = [&](Executor& ex, int64_t step) {
    return c.data.FillTrainBatch(step, false, 0, ex);
  };
  auto s = Train(*c.ex, fill, &eval.data, o, obs);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(obs.steps.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(obs.steps[i].step, i + 1);
    // Batches 0, 1, 0, 1, ...: samples 0-3 and 4-7 (8 and 9 are the dropped rest).
    std::vector<int> idx = i % 2 == 0 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{4, 5, 6, 7};
    EXPECT_NEAR(obs.steps[i].loss, c.Loss(idx), 1e-5);
    EXPECT_EQ(obs.steps[i].lr, 0.5) << "the plan's lr without a control buffer";
    EXPECT_EQ(obs.steps[i].scale, 1.0);
    EXPECT_FALSE(obs.steps[i].has_grad_norm);
  }
  EXPECT_EQ(obs.evals, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(obs.saves, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(s->first_step, 0);
  EXPECT_EQ(s->last_step, 6);
  EXPECT_TRUE(s->has_eval);
  auto resumed = MakeClassifier("cross_entropy");
  auto info = LoadCheckpoint(*resumed.ex, o.checkpoint);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(resumed.ex->step(), 6);
  // Already at the total: no step runs, nothing is saved again, the final evaluation still is.
  RecordingObserver again;
  auto s2 = Train(*resumed.ex, fill, &eval.data, o, again);
  ASSERT_TRUE(s2.ok());
  EXPECT_TRUE(again.steps.empty());
  EXPECT_TRUE(again.saves.empty());
  EXPECT_EQ(again.evals, (std::vector<int64_t>{6}));
}

}  // namespace
}  // namespace a8

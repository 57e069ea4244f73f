// A tiny hand-built training plan for the runtime tests (executor, checkpoints, datasets):
//   kernel 0: y = Mul(W, x)          (the forward pass: eval kernel, graph output)
//   kernel 1: W.next = Add(W, x)     (the "optimizer": W <- W + x)
//   kernel 2: step.next = Add(step, one)
// with updates W <- W.next and step <- step.next, and a Dropout output when asked for.
#pragma once

#include <random>
#include <vector>

#include "compiler/plan/plan_file.h"
#include "tests/unit/random_util.h"
#include "tests/unit/runtime_test_util.h"

namespace a8::testing {

struct TrainPlanOptions {
  bool step_buffer = true;  // else train.step_buffer = -1 and no step kernel
  int64_t initial_step = 0;
  bool dropout = false;  // adds d = Dropout(x, 0.5, true) as output "d" (an eval kernel too)
  int64_t n = 4;         // elements of x and W
};


inline PlanFile BuildTrainPlan(const TrainPlanOptions& o = {}) {
  using Role = plan::Buffer;
  PlanBuilder pb;
  std::vector<float> w0 = RandomNormals(static_cast<size_t>(o.n), 7);
  int64_t one = 1;
  bool yes = true;
  float ratio = 0.5f;
  int x = pb.Buffer("x", DType::kF32, {o.n}, Role::INPUT);
  int w = pb.Buffer("W", DType::kF32, {o.n}, Role::PARAMETER, w0.data());
  int step = -1, step_next = -1, one_id = -1;
  if (o.step_buffer) {
    step = pb.Buffer("step", DType::kI64, {}, Role::STATE, &o.initial_step);
    one_id = pb.Buffer("one", DType::kI64, {}, Role::CONSTANT, &one);
  }
  int y = pb.Buffer("y", DType::kF32, {o.n}, Role::OUTPUT);
  int w_next = pb.Buffer("W.next", DType::kF32, {o.n}, Role::INTERMEDIATE);
  if (o.step_buffer) step_next = pb.Buffer("step.next", DType::kI64, {}, Role::INTERMEDIATE);
  pb.Kernel("Mul", {w, x}, {y});
  pb.Kernel("Add", {w, x}, {w_next});
  if (o.step_buffer) pb.Kernel("Add", {step, one_id}, {step_next});
  int dropout_kernel = -1;
  if (o.dropout) {
    int r = pb.Buffer("ratio", DType::kF32, {}, Role::CONSTANT, &ratio);
    int t = pb.Buffer("training", DType::kBool, {}, Role::CONSTANT, &yes);
    int d = pb.Buffer("d", DType::kF32, {o.n}, Role::OUTPUT);
    // The mask's stream is keyed by the node name: the same in both layouts.
    pb.Kernel("Dropout", {x, r, t}, {d})->set_node("dropout");
    dropout_kernel = o.step_buffer ? 3 : 2;
  }
  PlanFile f = pb.Finish();
  plan::Plan& p = f.plan;
  p.set_training(true);
  plan::Update* u = p.add_updates();
  u->set_target(w);
  u->set_source(w_next);
  if (o.step_buffer) {
    u = p.add_updates();
    u->set_target(step);
    u->set_source(step_next);
  }
  plan::Training* t = p.mutable_train();
  t->set_loss("y");
  t->set_loss_kind("output");
  t->set_optimizer("sgd");
  t->set_accumulate(1);
  t->set_step_buffer(step);
  t->set_control_buffer(-1);
  t->add_eval_kernels(0);
  if (dropout_kernel >= 0) t->add_eval_kernels(dropout_kernel);
  t->add_trainable("W");
  return f;
}

}  // namespace a8::testing

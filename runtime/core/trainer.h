// The training loop of a training plan, shared by a800c-run and the tests: fill the inputs of the
// step, run it, read the loss and the control buffer, evaluate and save checkpoints on schedule.
// What is printed, and how, is the observer's business (a800c-run: a progress bar or plain lines,
// and the --metrics JSONL file).
//
// Evaluation runs the plan's forward kernels (Executor::RunEval) over a whole dataset in batches
// of the plan's batch size; the last, partial batch is padded by wrapping around to the first
// samples, and only the real samples count. For cross-entropy plans it reports the accuracy
// (argmax of the logits == label) and the exact mean loss, recomputed per sample from the
// logits; for other losses, the batch losses weighted by their real samples.
//
// Loss scaling (PRECISION.md): with a scaler, each step records the scale it ran with (read from
// train.scale_buffer before the step) and whether its update was skipped for an overflow (an
// update step whose control vector says not applied). A dynamic scale that ran at --min-scale and
// stayed there for growth_interval consecutive updates means every scale overflows: the run
// stops with an error naming the step and the scale. Without a loss scaler nothing skips an
// update, so a non-finite loss stops the run at once (after the observer saw the step), with a
// hint to rerun with --check-numerics.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "compiler/ir/status.h"
#include "runtime/core/dataset.h"
#include "runtime/core/executor.h"

namespace a8 {

// One training step as the metrics file records it.
struct StepRecord {
  int64_t step = 0;  // steps done after this one (the step counter)
  double loss = 0;
  double lr = 0;
  double scale = 1;      // the loss scale (1 while there is no scaler)
  bool skipped = false;  // an update skipped for non-finite gradients
  bool has_grad_norm = false;
  double grad_norm = 0;  // with gradient clipping
  double step_ms = 0;
};

struct EvalResult {
  int64_t step = 0;
  int64_t samples = 0;
  double loss = 0;
  bool has_accuracy = false;
  int64_t correct = 0;
  double accuracy = 0;  // correct / samples
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual Status OnStep(const StepRecord&) { return Status::Ok(); }
  virtual void OnEval(const EvalResult&) {}
  virtual void OnSave(const std::string& /*path*/, int64_t /*step*/) {}
};

// Fills every input of `ex` for training step `step`.
using FillInputs = std::function<Status(Executor& ex, int64_t step)>;

struct TrainOptions {
  int64_t total_steps = 0;  // train until the step counter reaches this
  int64_t eval_every = 0;   // 0: evaluate only at the end (when there is an eval set)
  std::string checkpoint;   // "" for none
  int64_t save_every = 0;   // 0: save only at the end
  // > 0: every save also writes a step-numbered checkpoint and keeps the newest this many
  // (checkpoint_files.h); with keep_best, also the one of the lowest eval loss, and a step whose
  // evaluation beats every saved one is saved.
  int64_t keep_checkpoints = 0;
  bool keep_best = false;
  uint64_t seed = 0;
  std::map<std::string, std::string> checkpoint_extra = {};
  // false: a save whose parameters or optimizer state hold an Inf or NaN is refused (an error
  // naming the tensor), so a checkpoint never replaces finite weights with non-finite ones.
  bool allow_nonfinite = false;
};

struct TrainSummary {
  int64_t first_step = 0, last_step = 0;  // the counter before and after
  std::vector<double> step_ms;
  double final_loss = 0;
  bool scaled = false;     // the plan has a loss scaler
  double final_scale = 1;  // the scale after the last step
  int64_t skipped = 0;     // updates skipped for non-finite gradients
  bool has_eval = false;
  EvalResult eval;
};

// Runs the forward kernels over all of `data`.
StatusOr<EvalResult> Evaluate(Executor& ex, Dataset& data);

// Trains from ex.step() to options.total_steps; `eval` may be null.
StatusOr<TrainSummary> Train(Executor& ex, const FillInputs& fill, Dataset* eval,
                             const TrainOptions& options, TrainObserver& observer);

// The number of classes of a cross-entropy plan: the last dim of its logits (0 when unknown).
int64_t NumClasses(const plan::Plan& plan);

}  // namespace a8

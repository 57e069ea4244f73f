#include "runtime/core/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "compiler/plan/plan_scaler.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/optim.h"
#include "runtime/core/checkpoint.h"
#include "runtime/core/checkpoint_files.h"
#include "runtime/core/numerics.h"

namespace a8 {
namespace {

int64_t Elements(const plan::Buffer& b) {
  int64_t n = 1;
  for (int64_t d : b.type().dims()) n *= d;
  return n;
}

// Buffer `b` converted to `to` (float64 for floats, int64 for indices).
template <typename T>
StatusOr<std::vector<T>> ReadAs(const Executor& ex, const plan::Buffer& b, DType to) {
  std::vector<T> out(static_cast<size_t>(Elements(b)));
  std::vector<uint8_t> raw(b.bytes());
  A8_RETURN_IF_ERROR(ex.ReadBuffer(b.id(), raw.data()));
  A8_RETURN_IF_ERROR(
      cpu::Cast(static_cast<DType>(b.type().dtype()), to, Elements(b), raw.data(), out.data()));
  return out;
}

StatusOr<const plan::Buffer*> LossOutput(const Executor& ex) {
  const plan::Plan& p = ex.plan();
  if (!p.training()) return InvalidInput("not a training plan");
  const plan::Buffer* loss = ex.FindOutput(p.train().loss());
  if (loss == nullptr || !IsFloat(static_cast<DType>(loss->type().dtype())) || Elements(*loss) != 1)
    return InvalidInput("the plan's loss '{}' is not a float scalar graph output",
                        p.train().loss());
  return loss;
}

// A checkpoint never holds what a diverged run computed: the first PARAMETER or STATE buffer
// holding an Inf or NaN is an error.
Status CheckFiniteBeforeSave(const Executor& ex, const std::string& path) {
  const plan::Plan& p = ex.plan();
  for (int id : ex.checkpoint_buffers()) {
    const plan::Buffer& b = p.buffers(id);
    const DType dtype = static_cast<DType>(b.type().dtype());
    if (!IsFloat(dtype)) continue;
    std::vector<uint8_t> raw(b.bytes());
    A8_RETURN_IF_ERROR(ex.ReadBuffer(id, raw.data()));
    auto bad = FindNonFinite(dtype, raw.data(), static_cast<int64_t>(b.bytes() / DTypeSize(dtype)));
    if (!bad) continue;
    return Internal(
        "step {}: {} '{}' holds a non-finite value (element {} is {}): not saving {}, so that a "
        "checkpoint never replaces finite weights with non-finite ones (--allow-nonfinite saves "
        "it anyway)",
        ex.step(), b.role() == plan::Buffer::PARAMETER ? "parameter" : "state", b.name(),
        bad->index, NonFiniteName(bad->value), path);
  }
  return Status::Ok();
}

}  // namespace

int64_t NumClasses(const plan::Plan& plan) {
  if (!plan.training() || plan.train().logits().empty()) return 0;
  for (const plan::Binding& b : plan.outputs()) {
    if (b.name() != plan.train().logits()) continue;
    const plan::TensorType& t = plan.buffers(b.buffer()).type();
    return t.dims_size() > 0 ? t.dims(t.dims_size() - 1) : 0;
  }
  return 0;
}

StatusOr<EvalResult> Evaluate(Executor& ex, Dataset& data) {
  const plan::Plan& p = ex.plan();
  A8_ASSIGN_OR_RETURN(const plan::Buffer* loss, LossOutput(ex));
  const plan::Training& t = p.train();
  const int64_t batch = data.batch(), samples = data.samples();
  if (samples <= 0) return InvalidInput("evaluation: the dataset holds no samples");
  if (t.eval_kernels_size() == 0) return InvalidInput("evaluation: the plan has no eval kernels");
  const plan::Buffer* logits = t.logits().empty() ? nullptr : ex.FindOutput(t.logits());
  const plan::Buffer* labels = t.labels().empty() ? nullptr : ex.FindInput(t.labels());
  const int64_t classes = NumClasses(p);
  // Accuracy: one integer label per row of logits.
  bool accuracy = t.loss_kind() == "cross_entropy" && logits != nullptr && labels != nullptr &&
                  classes > 0 && !IsFloat(static_cast<DType>(labels->type().dtype())) &&
                  Elements(*logits) == Elements(*labels) * classes &&
                  Elements(*labels) % batch == 0;
  const int64_t rows_per_sample = accuracy ? Elements(*labels) / batch : 0;

  EvalResult r;
  r.step = ex.step();
  r.samples = samples;
  r.has_accuracy = accuracy;
  double loss_sum = 0;
  int64_t counted = 0;  // rows (accuracy) or samples (batch losses) in loss_sum
  for (int64_t k = 0; k * batch < samples; ++k) {
    A8_RETURN_IF_ERROR(data.FillWrapped(k, false, 0, ex));
    std::vector<int64_t> label;
    if (accuracy) {  // read before the step: the arena may reuse an input's bytes
      A8_ASSIGN_OR_RETURN(label, ReadAs<int64_t>(ex, *labels, DType::kI64));
    }
    A8_RETURN_IF_ERROR(ex.RunEval());
    const int64_t real = std::min(batch, samples - k * batch);
    if (!accuracy) {
      A8_ASSIGN_OR_RETURN(std::vector<double> l, ReadAs<double>(ex, *loss, DType::kF64));
      loss_sum += l[0] * static_cast<double>(real);
      counted += real;
      continue;
    }
    A8_ASSIGN_OR_RETURN(std::vector<double> z, ReadAs<double>(ex, *logits, DType::kF64));
    for (int64_t row = 0; row < real * rows_per_sample; ++row) {
      const double* x = z.data() + row * classes;
      int64_t y = label[static_cast<size_t>(row)];
      if (y < 0 || y >= classes) continue;  // an ignored label (ignore_index)
      int64_t best = std::max_element(x, x + classes) - x;
      double top = x[best], sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(x[c] - top);
      loss_sum += top + std::log(sum) - x[y];
      r.correct += best == y;
      ++counted;
    }
  }
  r.loss = counted > 0 ? loss_sum / static_cast<double>(counted) : 0.0;
  r.accuracy = counted > 0 ? static_cast<double>(r.correct) / static_cast<double>(counted) : 0.0;
  return r;
}

StatusOr<TrainSummary> Train(Executor& ex, const FillInputs& fill, Dataset* eval,
                             const TrainOptions& options, TrainObserver& observer) {
  const plan::Plan& p = ex.plan();
  A8_ASSIGN_OR_RETURN(const plan::Buffer* loss, LossOutput(ex));
  const plan::Training& t = p.train();
  // The control vector and the scale, read back after each step (they may be device memory).
  float control_values[5] = {};
  const float* control = t.control_buffer() >= 0 ? control_values : nullptr;
  // The loss scale (static or dynamic); none: every step reports 1.
  const std::string& scaler = p.scaler().mode();
  const bool dynamic = scaler == "dynamic";
  float scale_value = 1;
  const float* scale = nullptr;
  if (scaler == "static" || dynamic) {
    const int id = t.scale_buffer();
    if (id < 0 || id >= p.buffers_size()) {
      return InvalidInput("the plan's train.scale_buffer {} is not a buffer", id);
    }
    scale = &scale_value;
  }
  auto read_state = [&]() -> Status {
    if (scale != nullptr) A8_RETURN_IF_ERROR(ex.ReadBuffer(t.scale_buffer(), &scale_value));
    if (control != nullptr) A8_RETURN_IF_ERROR(ex.ReadBuffer(t.control_buffer(), control_values));
    return Status::Ok();
  };
  A8_RETURN_IF_ERROR(read_state());
  const int64_t accumulate = std::max<int64_t>(t.accumulate(), 1);
  // The dynamic scaler's settings, from the a8.UpdateScale kernel that applies them.
  A8_ASSIGN_OR_RETURN(const PlanScaler scaler_settings, PlanScalerOf(ex.file()));
  const int64_t floor_limit = dynamic ? scaler_settings.update.growth_interval : 0;
  int64_t at_floor = 0;  // consecutive updates that ran at the floor and stayed there
  TrainSummary s;
  s.scaled = scale != nullptr;
  s.first_step = ex.step();
  int64_t saved_at = -1, evaluated_at = -1;
  auto evaluate = [&]() -> Status {
    A8_ASSIGN_OR_RETURN(s.eval, Evaluate(ex, *eval));
    s.has_eval = true;
    evaluated_at = ex.step();
    observer.OnEval(s.eval);
    return Status::Ok();
  };
  // --keep-best: the lowest eval loss of the checkpoints kept so far (this run's or earlier).
  double best_loss = 0;
  bool has_best = options.keep_best && BestEvalLoss(options.checkpoint, &best_loss);
  bool save_best = false;  // this step's evaluation beat every saved one
  auto save = [&]() -> Status {
    if (!options.allow_nonfinite) A8_RETURN_IF_ERROR(CheckFiniteBeforeSave(ex, options.checkpoint));
    CheckpointInfo info;
    info.seed = options.seed;
    info.extra = options.checkpoint_extra;
    if (s.has_eval && evaluated_at == ex.step() && std::isfinite(s.eval.loss))
      info.extra["eval_loss"] = fmt::format("{}", s.eval.loss);
    A8_ASSIGN_OR_RETURN(std::string bytes, SerializeCheckpoint(ex, info));
    const bool numbered = options.keep_checkpoints > 0;
    A8_RETURN_IF_ERROR(WriteCheckpointFiles(options.checkpoint, ex.step(), numbered, bytes));
    if (numbered) {
      A8_RETURN_IF_ERROR(
          PruneCheckpoints(options.checkpoint, options.keep_checkpoints, options.keep_best)
              .status());
    }
    saved_at = ex.step();
    save_best = false;
    observer.OnSave(
        numbered ? StepCheckpointPath(options.checkpoint, saved_at) : options.checkpoint, saved_at);
    return Status::Ok();
  };
  auto evaluate_and_rank = [&]() -> Status {
    A8_RETURN_IF_ERROR(evaluate());
    if (options.keep_best && std::isfinite(s.eval.loss) && (!has_best || s.eval.loss < best_loss)) {
      best_loss = s.eval.loss;
      has_best = true;
      save_best = !options.checkpoint.empty();
    }
    return Status::Ok();
  };
  while (ex.step() < options.total_steps) {
    A8_RETURN_IF_ERROR(fill(ex, ex.step()));
    const int64_t step_before = ex.step();
    const double scale_before = scale != nullptr ? *scale : 1.0;
    auto t0 = std::chrono::steady_clock::now();
    A8_RETURN_IF_ERROR(ex.Run());
    A8_RETURN_IF_ERROR(read_state());
    auto t1 = std::chrono::steady_clock::now();
    StepRecord rec;
    rec.step = ex.step();
    rec.step_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    A8_ASSIGN_OR_RETURN(std::vector<double> l, ReadAs<double>(ex, *loss, DType::kF64));
    rec.loss = l[0];
    rec.lr = control != nullptr ? control[cpu::kCtlLr] : t.lr();
    rec.scale = scale_before;
    const bool update_step = (step_before + 1) % accumulate == 0;
    rec.skipped =
        scale != nullptr && control != nullptr && update_step && control[cpu::kCtlApplied] == 0.0f;
    s.skipped += rec.skipped ? 1 : 0;
    s.final_scale = scale != nullptr ? *scale : 1.0;
    if (t.clip_grad_norm() > 0 && control != nullptr) {
      rec.has_grad_norm = true;
      rec.grad_norm = control[4];
    }
    s.step_ms.push_back(rec.step_ms);
    s.final_loss = rec.loss;
    A8_RETURN_IF_ERROR(observer.OnStep(rec));
    if (scale == nullptr && !std::isfinite(rec.loss)) {
      return Internal(
          "step {}: the loss is {} and this plan has no loss scaling to skip the update: "
          "stopped (rerun with --check-numerics to find the ONNX node that produced the first "
          "non-finite value)",
          rec.step, NonFiniteName(rec.loss));
    }
    if (dynamic && update_step && floor_limit > 0) {
      const double floor = scaler_settings.update.min_scale;
      at_floor = scale_before <= floor && *scale <= floor ? at_floor + 1 : 0;
      if (at_floor >= floor_limit) {
        return Internal(
            "step {}: the loss scale has been at --min-scale={} for {} consecutive updates "
            "(--growth-interval) with non-finite gradients: training has diverged (a lower "
            "learning rate, or fp32, may help)",
            rec.step, floor, at_floor);
      }
    }
    if (eval != nullptr && options.eval_every > 0 && rec.step % options.eval_every == 0)
      A8_RETURN_IF_ERROR(evaluate_and_rank());
    if (!options.checkpoint.empty() &&
        (save_best || (options.save_every > 0 && rec.step % options.save_every == 0)))
      A8_RETURN_IF_ERROR(save());
  }
  s.last_step = ex.step();
  if (eval != nullptr && evaluated_at != ex.step()) A8_RETURN_IF_ERROR(evaluate_and_rank());
  // (Again when the final evaluation made the step's checkpoint the best: it records the loss.)
  if (!options.checkpoint.empty() && (saved_at != ex.step() || save_best) &&
      s.last_step > s.first_step)
    A8_RETURN_IF_ERROR(save());
  return s;
}

}  // namespace a8

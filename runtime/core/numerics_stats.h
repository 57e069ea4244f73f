// `a800c-run --numerics-stats=FILE.jsonl [--every=N]`: how close a training run's values sit to
// the edges of FP16, per group, on sampled steps. This is how a user sees why the loss scale keeps
// falling (gradients near overflow) or that small gradients underflow (zero or subnormal).
//
// Classes, always by FP16's thresholds (for FP16 tensors: what they hold; for FP32 and BF16
// tensors: what they WOULD hold once cast to FP16, round to nearest even):
// - zero: 0 in FP16 (|v| < 2^-25, which rounds to 0, or an exact 0);
// - subnormal: 2^-25 <= |v| < 2^-14 (FP16 keeps fewer than 11 significant bits there);
// - near_overflow: |v| >= 32752, within 2x of FP16's largest value 65504 (Inf and NaN count too).
//
// Groups:
// - parameters: by name up to its last '.' or '/' (the module path of PyTorch exports:
//   "encoder.layer.0.attention.query.weight" -> "encoder.layer.0.attention.query"), else the
//   name. Per group: the parameters' values after the step, and their gradients as the backward
//   pass wrote them, before unscaling (so multiplied by the loss scale: what FP16 must hold).
// - activations: the outputs of the forward kernels (casts aside), by their first ONNX node's
//   name up to its last '.' or '/' (the exporter's module path, "/encoder/layer.0/MatMul" ->
//   "/encoder/layer.0"), else that node's name.
//
// Per sampled step, one JSON object a line: `step`, `scale` (the scale the step ran with),
// `skipped`, `grad_norm` (L2 norm of the unscaled gradients), `grad_max_abs` (the largest
// unscaled gradient), `headroom_log2` = log2(65504 / (scale * grad_max_abs)) (how many doublings
// of the scale the largest scaled gradient still fits in FP16; negative: it overflows at this
// scale), and `params` / `activations`: per group {values, zero, subnormal, near_overflow} as
// shares of values (and grad_values, grad_zero, grad_subnormal, grad_near_overflow for
// parameters). Sampled steps: the first, then every N-th (step counter % N == 0).
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "runtime/core/backend.h"
#include "runtime/core/executor.h"
#include "runtime/core/trainer.h"

namespace a8 {

struct Fp16Classes {
  int64_t values = 0, zero = 0, subnormal = 0, near_overflow = 0;
  void Add(const Fp16Classes& o);
};

// Classifies `count` elements of `dtype` at `data` (see the header comment).
Fp16Classes ClassifyForFp16(DType dtype, const uint8_t* data, int64_t count);

// "a.b.c" -> "a.b", "/x/y/MatMul" -> "/x/y", "w3" -> "w3".
std::string GroupOf(const std::string& name);

class NumericsStats {
 public:
  // Tables from the plan (kept by buffer and kernel id); opens `path` for the JSON lines. Steps
  // whose counter (after the step) is 1 or a multiple of `every` are sampled.
  static StatusOr<std::unique_ptr<NumericsStats>> Create(const plan::Plan& plan,
                                                         const std::string& path, int64_t every);

  // The executor running the plan (before its first step).
  void Attach(const Executor& ex) { ex_ = &ex; }
  // ExecutorOptions::after_kernel: reads activations and scaled gradients on sampled steps.
  Status AfterKernel(int k, const StepInfo& info);
  // After the step (the trainer's record): reads the parameters and writes the line.
  Status OnStep(const StepRecord& rec);

 private:
  NumericsStats() = default;
  bool Sampled(int64_t step_after) const { return step_after == 1 || step_after % every_ == 0; }
  Status Read(int id, std::vector<uint8_t>* raw) const;

  const Executor* ex_ = nullptr;
  std::string path_;
  std::ofstream out_;
  int64_t every_ = 1;
  std::map<int, std::string> activation_group_;    // kernel -> group
  std::map<int, std::string> param_group_;         // parameter buffer -> group
  std::map<int, std::string> grad_group_;          // scaled gradient buffer -> group
  std::map<int, std::vector<int>> grads_written_;  // kernel -> scaled gradient buffers it writes
  // The sampled step's accumulators.
  std::map<std::string, Fp16Classes> activations_, grads_;
  double grad_sq_ = 0, grad_max_ = 0;
};

// Passes every event on to `inner`, and each step to the statistics too.
class NumericsStatsObserver : public TrainObserver {
 public:
  NumericsStatsObserver(TrainObserver& inner, NumericsStats& stats)
      : inner_(inner), stats_(stats) {}
  Status OnStep(const StepRecord& rec) override {
    A8_RETURN_IF_ERROR(inner_.OnStep(rec));
    return stats_.OnStep(rec);
  }
  void OnEval(const EvalResult& r) override { inner_.OnEval(r); }
  void OnSave(const std::string& path, int64_t step) override { inner_.OnSave(path, step); }

 private:
  TrainObserver& inner_;
  NumericsStats& stats_;
};

}  // namespace a8

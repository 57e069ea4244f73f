// The console side of a training run (a800c-run): progress (a bar on a terminal, plain lines every
// `log_every` steps otherwise, runtime/core/progress.h), eval and checkpoint lines, and the
// --metrics JSONL file, one object a step.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>

#include "runtime/core/progress.h"
#include "runtime/core/trainer.h"

namespace a8 {

// JSON has no NaN or infinity: a non-finite value is null.
std::string JsonNumber(double v);

// Prints training progress (a bar on a terminal, plain lines every `log_every` steps otherwise)
// and appends one JSON object a step to the metrics file.
class ConsoleObserver : public TrainObserver {
 public:
  // `rank` >= 0: data parallel, the rank that writes (metrics lines carry it).
  ConsoleObserver(int64_t first, int64_t total, int64_t log_every, ProgressMode mode,
                  std::ofstream* metrics, int rank = -1)
      : first_(first),
        total_(total),
        log_every_(log_every),
        bar_(mode == ProgressMode::kBar),
        lines_(mode == ProgressMode::kLines),
        metrics_(metrics),
        rank_(rank) {}

  Status OnStep(const StepRecord& r) override;
  void OnEval(const EvalResult& e) override;
  void OnSave(const std::string& path, int64_t step) override;

  // Ends the bar's line, if one is open.
  void EndLine();

 private:
  int64_t first_, total_, log_every_;
  bool bar_, lines_, open_line_ = false;
  std::ofstream* metrics_;
  int rank_;
  std::chrono::steady_clock::time_point drawn_{};
};

// The other ranks of a data-parallel run: rank 0 alone prints, writes metrics and checkpoints.
class QuietObserver : public TrainObserver {
 public:
  Status OnStep(const StepRecord&) override { return Status::Ok(); }
  void OnEval(const EvalResult&) override {}
  void OnSave(const std::string&, int64_t) override {}
};

}  // namespace a8

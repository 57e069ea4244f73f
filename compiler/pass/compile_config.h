// The typed configuration of one compile: the precision request and the training flags (loss,
// optimizer and its hyper-parameters, the loss scaler's settings, data parallel). The tools fill
// it from the flags (tools/training_flags.h, precision_flags.h); the driver validates it once,
// before any import (ValidateCompileConfig, driver/driver.h, which adds the precision policy's
// checks to CheckTrainingConfig below); the PassManager hands it to every pass
// (PassManagerOptions::config, Pass::config()) and lowering reads it (LowerOptions::config).
// Nothing stores it on the graph: what a pass builds is recorded in Graph::train_step.
// Defaults: kernels/common/train_defaults.h.
#pragma once

#include <optional>
#include <string>

#include "compiler/ir/precision_config.h"
#include "compiler/ir/status.h"
#include "compiler/ir/training_config.h"

namespace a8 {

struct CompileConfig {
  // The training flags; nullopt: an inference compile (unless the model carries its own
  // TrainingInfoProto step).
  std::optional<TrainingConfig> training;
  // The precision flags; nullopt: fp32.
  std::optional<PrecisionConfig> precision;

  PrecisionMode mode() const { return precision ? precision->mode : PrecisionMode::kFp32; }
  // amp, fp16 or bf16: the mixed-precision passes have work to do.
  bool mixed() const { return precision && precision->mixed(); }
  // GEMM and convolution inputs rounded to TF32 (lowering marks the kernels).
  bool tf32() const { return mode() == PrecisionMode::kTf32; }
  // The training flags, or their defaults for a step the flags did not ask for (a model's
  // TrainingInfoProto).
  const TrainingConfig& training_or_defaults() const;
};

// The parsed --loss-scale: mode "none", "static" (with `static_scale`) or "dynamic".
struct LossScaleMode {
  std::string mode = "none";
  float static_scale = 1.0f;
};

// Parses and checks --loss-scale and the scaler flags of `config`. Errors name the flag.
// An empty --loss-scale parses as "none"; EffectiveLossScale resolves the precision's default.
StatusOr<LossScaleMode> ParseLossScale(const TrainingConfig& config);

// The loss scaling a step gets: --loss-scale, or PRECISION.md's default when it is not given
// (dynamic for amp and fp16 when the step has a seed of a8's to scale, none otherwise).
StatusOr<LossScaleMode> EffectiveLossScale(const TrainingConfig& config, PrecisionMode mode,
                                           bool has_seed);

// Checks the training flags alone (known loss and optimizer, ranges, the scaler, data
// parallel), so that a typo costs no import. Errors name the flag.
Status CheckTrainingConfig(const TrainingConfig& config);

}  // namespace a8

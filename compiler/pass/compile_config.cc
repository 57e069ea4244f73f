// The compile configuration's checks (see compile_config.h).
#include "compiler/pass/compile_config.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

namespace a8 {

const TrainingConfig& CompileConfig::training_or_defaults() const {
  static const TrainingConfig kDefaults;
  return training ? *training : kDefaults;
}

StatusOr<LossScaleMode> ParseLossScale(const TrainingConfig& c) {
  LossScaleMode m;
  const std::string& s = c.loss_scale;
  if (s.empty() || s == "none" || s == "dynamic") {
    m.mode = s.empty() ? "none" : s;
  } else if (s.rfind("static:", 0) == 0) {
    const std::string value = s.substr(7);
    char* end = nullptr;
    const double v = value.empty() ? 0.0 : std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v) || !(v > 0) ||
        !std::isfinite(static_cast<float>(v))) {
      return InvalidInput("--loss-scale={}: the static scale must be a finite number > 0", s);
    }
    m.mode = "static";
    m.static_scale = static_cast<float>(v);
  } else {
    return InvalidInput("--loss-scale: unknown mode '{}' (expected dynamic, static:VALUE or none)",
                        s);
  }
  auto positive = [](float v) { return std::isfinite(v) && v > 0.0f; };
  if (!positive(c.init_scale)) {
    return InvalidInput("--init-scale: must be a finite number > 0, got {}", c.init_scale);
  }
  if (!std::isfinite(c.growth_factor) || !(c.growth_factor > 1.0f)) {
    return InvalidInput("--growth-factor: must be > 1, got {}", c.growth_factor);
  }
  if (!(c.backoff_factor > 0.0f && c.backoff_factor < 1.0f)) {
    return InvalidInput("--backoff-factor: must be in (0, 1), got {}", c.backoff_factor);
  }
  if (c.growth_interval < 1 || c.growth_interval > INT32_MAX) {
    return InvalidInput("--growth-interval: must be in [1, {}], got {}", INT32_MAX,
                        c.growth_interval);
  }
  if (!positive(c.min_scale)) {
    return InvalidInput("--min-scale: must be a finite number > 0, got {}", c.min_scale);
  }
  if (!positive(c.max_scale) || c.max_scale < c.min_scale) {
    return InvalidInput("--max-scale: must be a finite number >= --min-scale ({}), got {}",
                        c.min_scale, c.max_scale);
  }
  if (c.init_scale < c.min_scale || c.init_scale > c.max_scale) {
    return InvalidInput("--init-scale: {} is outside [--min-scale, --max-scale] = [{}, {}]",
                        c.init_scale, c.min_scale, c.max_scale);
  }
  return m;
}

StatusOr<LossScaleMode> EffectiveLossScale(const TrainingConfig& config, PrecisionMode mode,
                                           bool has_seed) {
  if (!config.loss_scale.empty()) return ParseLossScale(config);
  // PRECISION.md: amp and fp16 scale dynamically by default; fp32, tf32 and bf16 do not. A
  // TrainingInfoProto step has no seed of a8's to scale.
  TrainingConfig resolved = config;
  const bool low = mode == PrecisionMode::kAmp || mode == PrecisionMode::kFp16;
  resolved.loss_scale = low && has_seed ? "dynamic" : "none";
  return ParseLossScale(resolved);
}

Status CheckTrainingConfig(const TrainingConfig& cfg) {
  static const std::set<std::string> kOptimizers = {"sgd", "momentum", "nesterov", "adam", "adamw"};
  if (kOptimizers.count(cfg.optimizer) == 0) {
    return InvalidInput(
        "--optimizer: unknown optimizer '{}' (expected sgd, momentum, nesterov, "
        "adam or adamw)",
        cfg.optimizer);
  }
  const std::string& loss = cfg.loss;
  static const std::set<std::string> kLosses = {"cross_entropy", "mse", "bce_logits", "l1", "onnx"};
  if (kLosses.count(loss) == 0 && loss.rfind("output:", 0) != 0) {
    return InvalidInput(
        "--loss: unknown loss '{}' (expected cross_entropy, mse, bce_logits, l1 "
        "or output:NAME)",
        loss);
  }
  if (!(cfg.lr > 0.0f) || !std::isfinite(cfg.lr)) {
    return InvalidInput("--lr: must be a finite number > 0, got {}", cfg.lr);
  }
  if (!(cfg.min_lr >= 0.0f) || !std::isfinite(cfg.min_lr)) {
    return InvalidInput("--min-lr: must be a finite number >= 0, got {}", cfg.min_lr);
  }
  if (!(cfg.momentum >= 0.0f) || !std::isfinite(cfg.momentum)) {
    return InvalidInput("--momentum: must be a finite number >= 0, got {}", cfg.momentum);
  }
  if (!(cfg.dampening >= 0.0f && cfg.dampening <= 1.0f)) {
    return InvalidInput("--dampening: must be in [0, 1], got {}", cfg.dampening);
  }
  if (!(cfg.beta1 >= 0.0f && cfg.beta1 < 1.0f)) {
    return InvalidInput("--beta1: must be in [0, 1), got {}", cfg.beta1);
  }
  if (!(cfg.beta2 >= 0.0f && cfg.beta2 < 1.0f)) {
    return InvalidInput("--beta2: must be in [0, 1), got {}", cfg.beta2);
  }
  if (!(cfg.eps >= 0.0f) || !std::isfinite(cfg.eps)) {
    return InvalidInput("--eps: must be a finite number >= 0, got {}", cfg.eps);
  }
  if (!std::isfinite(cfg.weight_decay)) {
    return InvalidInput("--weight-decay: must be a finite number, got {}", cfg.weight_decay);
  }
  if (cfg.accumulate < 1) {
    return InvalidInput("--accumulate: must be >= 1, got {}", cfg.accumulate);
  }
  if (!(cfg.clip_grad_norm >= 0.0f) || !std::isfinite(cfg.clip_grad_norm)) {
    return InvalidInput("--clip-grad-norm: must be a finite number >= 0, got {}",
                        cfg.clip_grad_norm);
  }
  if (cfg.lr_schedule != "constant" && cfg.lr_schedule != "cosine") {
    return InvalidInput("--lr-schedule: unknown schedule '{}' (expected constant or cosine)",
                        cfg.lr_schedule);
  }
  if (cfg.warmup_steps < 0) {
    return InvalidInput("--warmup-steps: must be >= 0, got {}", cfg.warmup_steps);
  }
  if (cfg.lr_schedule == "cosine" && cfg.total_steps <= cfg.warmup_steps) {
    return InvalidInput("--lr-schedule=cosine needs --total-steps > --warmup-steps (got {} and {})",
                        cfg.total_steps, cfg.warmup_steps);
  }
  if (!(cfg.bucket_mb > 0) || !std::isfinite(cfg.bucket_mb)) {
    return InvalidInput("--bucket-mb: must be a positive number of MiB, got {}", cfg.bucket_mb);
  }
  if (cfg.allreduce_dtype != "f32" && cfg.allreduce_dtype != "f16") {
    return InvalidInput("--allreduce-dtype: expected f32 or f16, got '{}'", cfg.allreduce_dtype);
  }
  return ParseLossScale(cfg).status();
}

}  // namespace a8

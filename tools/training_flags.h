// The training flags of `a800c` and `a800c-opt` (CLI.md: --loss, --optimizer, ...), mapped to a
// TrainingConfig. Without --loss there is no training: the plan is an inference plan.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "compiler/ir/status.h"
#include "compiler/ir/training_config.h"

namespace a8::cli {

struct TrainingFlags {
  TrainingConfig config;
};

// The --help sections of the training flags; every flag in them but --loss needs --loss.
inline constexpr const char* kTrainingGroup = "Training";
inline constexpr const char* kScalingGroup = "Loss scaling";
inline constexpr const char* kDataParallelGroup = "Data parallel (mpirun -np N a800c-run PLAN ...)";

inline void AddTrainingFlags(CLI::App& app, TrainingFlags& f) {
  TrainingConfig& c = f.config;
  // An option of `type_name` in `group` (the --help section it is listed under).
  auto option = [&app](const char* name, auto& field, const std::string& help,
                       const char* type_name, const char* group = kTrainingGroup) {
    app.add_option(name, field, help)->type_name(type_name)->group(group);
  };
  option("--loss", c.loss,
         "Train: the loss on the logits (cross_entropy with i64 class labels; mse, l1, "
         "bce_logits with labels shaped like the logits) or output:NAME (a model output "
         "that already is the loss). Without it the plan is an inference plan",
         "cross_entropy|mse|bce_logits|l1|output:NAME");
  option("--logits", c.logits, "The model output the loss reads (default: the first)", "NAME");
  option("--labels", c.labels, "Name of the new label input (default: labels)", "NAME");
  option("--class-axis", c.class_axis,
         "cross_entropy: the axis of the logits that holds the classes; needed for "
         "logits of rank >= 3: -1 for [B, T, V] logits with [B, T] labels (language "
         "models), 1 for the ONNX convention [N, C, d1, ...]",
         "K");
  option("--ignore-index", c.ignore_index,
         "cross_entropy: labels equal to I do not count; the mean is over the others, as "
         "PyTorch's CrossEntropyLoss (default: -100)",
         "I");
  app.add_flag("--shift-labels", c.shift_labels,
               "cross_entropy: causal LM; the logits at position t are scored against the label "
               "at t + 1 (the last position and the first label drop out), as transformers' "
               "LM loss")
      ->group(kTrainingGroup);
  option("--optimizer", c.optimizer,
         "Optimizer with FP32 master weights, PyTorch's definitions (default: adamw)",
         "sgd|momentum|nesterov|adam|adamw");
  option("--lr", c.lr, fmt::format("Learning rate (default: {})", defaults::kLr), "X");
  option("--momentum", c.momentum,
         fmt::format("momentum/nesterov: momentum (default: {})", defaults::kMomentum), "X");
  option("--dampening", c.dampening,
         fmt::format("momentum: dampening (default: {})", defaults::kDampening), "X");
  option("--beta1", c.beta1, fmt::format("adam/adamw: beta1 (default: {})", defaults::kBeta1), "X");
  option("--beta2", c.beta2, fmt::format("adam/adamw: beta2 (default: {})", defaults::kBeta2), "X");
  option("--eps", c.eps, fmt::format("adam/adamw: epsilon (default: {})", defaults::kEps), "X");
  option("--weight-decay", c.weight_decay,
         fmt::format("Weight decay (default: {} for adamw, decoupled; {} for the others, L2)",
                     defaults::kAdamWWeightDecay, defaults::kWeightDecay),
         "X");
  option("--clip-grad-norm", c.clip_grad_norm,
         "Clip the global gradient norm to X, as torch.nn.utils.clip_grad_norm_ "
         "(default: 0, off)",
         "X");
  option("--accumulate", c.accumulate,
         "Micro-steps per optimizer update; gradients are averaged (default: 1)", "N");
  option("--lr-schedule", c.lr_schedule,
         "constant, or cosine: linear warm-up over --warmup-steps updates, then cosine "
         "decay to --min-lr at --total-steps (default: constant)",
         "constant|cosine");
  option("--warmup-steps", c.warmup_steps, "cosine: warm-up updates (default: 0)", "N");
  option("--total-steps", c.total_steps, "cosine: updates of the whole schedule", "N");
  option("--min-lr", c.min_lr, "cosine: the final learning rate (default: 0)", "X");
  option("--freeze", c.freeze,
         "Parameters whose name matches this regular expression are not trained", "REGEX");
  option("--trainable", c.trainable_regex,
         "Exactly the float initializers whose name matches this regular expression "
         "train (if the loss depends on them), instead of the default choice (module "
         "parameters; exporter constants, exponents, masks, shapes and indices stay "
         "constant: a800c --list-params MODEL). --freeze still applies",
         "REGEX");
  option("--loss-scale", c.loss_scale,
         "Loss scaling (PRECISION.md): dynamic (PyTorch's GradScaler, in the graph), "
         "static:VALUE (a fixed scale; overflowing steps are still skipped) or none "
         "(default: dynamic with --precision=amp or fp16, none otherwise)",
         "dynamic|static:VALUE|none", kScalingGroup);
  option("--init-scale", c.init_scale,
         fmt::format("dynamic: the first scale (default: {})", defaults::kInitScale), "X",
         kScalingGroup);
  option(
      "--growth-factor", c.growth_factor,
      fmt::format("dynamic: scale multiplier after --growth-interval clean updates (default: {})",
                  defaults::kGrowthFactor),
      "X", kScalingGroup);
  option("--backoff-factor", c.backoff_factor,
         fmt::format("dynamic: scale multiplier after an overflow (default: {})",
                     defaults::kBackoffFactor),
         "X", kScalingGroup);
  option("--growth-interval", c.growth_interval,
         fmt::format("dynamic: clean updates between growths (default: {})",
                     defaults::kGrowthInterval),
         "N", kScalingGroup);
  option("--min-scale", c.min_scale,
         fmt::format("dynamic: the floor of the scale; a run whose scale stays there for "
                     "--growth-interval updates stops (default: {})",
                     defaults::kMinScale),
         "X", kScalingGroup);
  option("--max-scale", c.max_scale,
         fmt::format("dynamic: the ceiling of the scale (default: {})", defaults::kMaxScale), "X",
         kScalingGroup);
  option("--bucket-mb", c.bucket_mb,
         "Gradients are all-reduced across ranks in buckets of about this many MiB, each "
         "started as soon as backward has produced it (default: 25)",
         "N", kDataParallelGroup);
  option("--allreduce-dtype", c.allreduce_dtype,
         "The gradients' dtype on the wire: f32, or f16 to halve the bytes (each rank "
         "divides by the number of ranks before the sum) (default: f32)",
         "f32|f16", kDataParallelGroup);
}

// The config when --loss was given; nullopt for an inference plan. Training-only flags without
// --loss are an error (they would silently do nothing).
inline StatusOr<std::optional<TrainingConfig>> TrainingConfigFromFlags(const CLI::App& app,
                                                                       const TrainingFlags& f) {
  if (app.count("--loss") > 0) {
    TrainingConfig c = f.config;
    c.has_class_axis = app.count("--class-axis") > 0;
    if (c.loss != "cross_entropy") {
      for (const char* flag : {"--class-axis", "--ignore-index", "--shift-labels"}) {
        if (app.count(flag) > 0) {
          return InvalidInput("{}: only --loss=cross_entropy has it (--loss={})", flag, c.loss);
        }
      }
    }
    return std::optional<TrainingConfig>(c);
  }
  for (const CLI::Option* o : app.get_options()) {
    const std::string& g = o->get_group();
    if (o->get_name() == "--loss" || o->count() == 0 ||
        (g != kTrainingGroup && g != kScalingGroup && g != kDataParallelGroup)) {
      continue;
    }
    return InvalidInput(
        "{}: a training flag needs --loss (without it the plan is an inference "
        "plan)",
        o->get_name());
  }
  return std::optional<TrainingConfig>();
}

}  // namespace a8::cli

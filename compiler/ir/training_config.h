// The training flags of CLI.md (TrainingConfig: the loss, the optimizer and its settings, the
// loss scaler's settings, data parallel) and what the passes of a training step record on the
// graph (TrainingStep).
//
// TrainingConfig is part of the compile configuration (compiler/pass/compile_config.h): the
// driver validates it once (CheckTrainingConfig) and hands it to the passes that read it; it is
// not stored on the graph. Defaults are train_defaults.h's, written nowhere else.
//
// TrainingStep is the graph's own record of its training step: which of its values are the
// loss, the labels, the step counters, the loss scale. build-training (or the importer, for a
// model's TrainingInfoProto) creates it, loss-scaling completes it, lowering writes it to
// Plan.train.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/train_defaults.h"

namespace a8 {

struct TrainingConfig {
  std::string loss;               // cross_entropy | mse | bce_logits | l1 | output:NAME | onnx
  std::string logits;             // the model output the loss reads; "" = the first output
  std::string labels = "labels";  // the name of the new label input
  // cross_entropy: the class axis of the logits. Rank-2 logits default to 1 ([N, C]); logits of
  // rank >= 3 need it said (ONNX puts classes on axis 1, PyTorch's LMs on the last axis).
  bool has_class_axis = false;
  int64_t class_axis = 1;
  int64_t ignore_index = -100;  // cross_entropy: labels equal to this do not count (PyTorch's)
  bool shift_labels = false;    // cross_entropy: logits[:, t] predict labels[:, t + 1] (causal LM)
  std::string optimizer = "adamw";  // sgd | momentum | nesterov | adam | adamw | onnx
  float lr = defaults::kLr;
  float momentum = defaults::kMomentum;    // momentum, nesterov
  float dampening = defaults::kDampening;  // momentum (PyTorch SGD's dampening)
  float beta1 = defaults::kBeta1, beta2 = defaults::kBeta2, eps = defaults::kEps;
  float weight_decay = -1.0f;            // < 0: the optimizer's default (EffectiveWeightDecay)
  float clip_grad_norm = 0.0f;           // 0: off
  int64_t accumulate = 1;                // micro-steps per update
  std::string lr_schedule = "constant";  // constant | cosine
  int64_t warmup_steps = 0;              // cosine: linear warm-up updates
  int64_t total_steps = 0;               // cosine: updates until the minimum learning rate
  float min_lr = 0.0f;
  std::string freeze;           // ECMAScript regex over parameter names; "" = none
  std::string trainable_regex;  // ECMAScript regex: exactly the matching float initializers the
                                // loss depends on train (overrides the default choice); "" = off
  // Loss scaling (PRECISION.md "Loss scaling").
  std::string loss_scale;  // dynamic | static:V | none; "" = the precision mode's default
                           // (dynamic for amp and fp16, none otherwise: PRECISION.md)
  float init_scale = defaults::kInitScale;
  float growth_factor = defaults::kGrowthFactor;
  float backoff_factor = defaults::kBackoffFactor;
  int64_t growth_interval = defaults::kGrowthInterval;
  float min_scale = defaults::kMinScale;
  float max_scale = defaults::kMaxScale;
  // Data parallel (bucket-gradients): gradients are all-reduced in buckets of about this many
  // MiB, in this dtype on the wire ("f32" or "f16").
  double bucket_mb = 25.0;
  std::string allreduce_dtype = "f32";

  float EffectiveWeightDecay() const {
    if (weight_decay >= 0.0f) return weight_decay;
    return optimizer == "adamw" ? defaults::kAdamWWeightDecay : defaults::kWeightDecay;
  }
};

// The training step a graph holds, by value names (Graph::train_step).
struct TrainingStep {
  // The model's own TrainingInfoProto (loss and optimizer "onnx"): build-training leaves it
  // alone, expand-gradient names its loss.
  bool from_model = false;
  // ---- filled by build-training (or the importer and expand-gradient for from_model)
  std::string loss_output;    // graph output holding the loss
  std::string logits_output;  // graph output accuracy is computed from ("" none)
  std::string labels_input;   // graph input of the labels ("" none)
  std::string step_state;     // i64 scalar state: micro-steps done
  std::string control_state;  // f32[5] state: [lr, grad scale, applied, updates, grad norm]
  std::string grad_seed;      // the f32[] constant d(loss)/d(loss) = 1 (loss-scaling swaps it)
  std::vector<std::string> trainable, frozen;
  // Why each initializer that is not trained stays constant (parallel to `frozen`).
  std::vector<std::string> frozen_reasons;
  std::string parameter_summary;  // ParameterSummary's one line, printed by the compile
  // ---- filled by loss-scaling
  std::string scale_mode;     // "static" or "dynamic" (Plan.scaler.mode); "" = not scaled
  std::string scale_value;    // the f32[] loss scale: state (dynamic) or a constant (static)
  std::string tracker_state;  // dynamic: the i32[] growth tracker
};

}  // namespace a8

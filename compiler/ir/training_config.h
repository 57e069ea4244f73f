// What `build-training` turns a forward graph into: the loss, the optimizer and its settings
// (the training flags of CLI.md), and, once the pass has run, where it put things.
//
// The driver fills `Graph::training` from the flags (or the importer from a model's
// TrainingInfoProto); a graph without it is an inference graph and build-training leaves it
// alone. Defaults follow PyTorch's optimizers, except that the learning rate has a default
// (1e-3) so that `--loss` alone gives a working plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/optim_math.h"

namespace a8 {

struct TrainingConfig {
  // ---- requested (flags)
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
  float lr = 1e-3f;
  float momentum = 0.9f;   // momentum, nesterov
  float dampening = 0.0f;  // momentum (PyTorch SGD's dampening)
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = -1.0f;            // < 0: the optimizer's default (adamw 0.01, others 0)
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
  float init_scale = 65536.0f;
  // The dynamic scaler's factors and interval: the a8.UpdateScale kernel's defaults
  // (cpu::UpdateScaleParams, kernels/common/optim_math.h: the one place they are written).
  float growth_factor = cpu::UpdateScaleParams{}.growth_factor;
  float backoff_factor = cpu::UpdateScaleParams{}.backoff_factor;
  int64_t growth_interval = cpu::UpdateScaleParams{}.growth_interval;
  float min_scale = 1.0f;
  float max_scale = 16777216.0f;
  // Data parallel (bucket-gradients): gradients are all-reduced in buckets of about this many
  // MiB, in this dtype on the wire ("f32" or "f16").
  double bucket_mb = 25.0;
  std::string allreduce_dtype = "f32";

  float EffectiveWeightDecay() const {
    if (weight_decay >= 0.0f) return weight_decay;
    return optimizer == "adamw" ? 0.01f : 0.0f;
  }

  // ---- filled by build-training
  bool built = false;
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
  std::string scale_value;    // the f32[] loss scale: state (dynamic) or a constant (static)
  std::string tracker_state;  // dynamic: the i32[] growth tracker
};

}  // namespace a8

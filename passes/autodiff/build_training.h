// build-training: turns a forward graph into one full training step.
//
// Runs only when the compile configuration has training flags (config().training: --loss,
// --optimizer, ...) and the graph has no training step yet (a model's TrainingInfoProto brings
// its own); otherwise it changes nothing, so inference plans are untouched. It records the step
// it builds in `Graph::train_step`.
//
// What the step computes, in order:
// 1. the forward graph in training mode: BatchNormalization uses batch statistics and its
//    running mean and variance become state updated every step (`update %mean = %bn.mean`);
//    Dropout draws its mask (Philox, seeded by the run's seed and the step) and keeps it for the
//    backward pass;
// 2. the loss, attached to the logits (`--logits`, default the first output) with a new label
//    input (`--labels`, default `labels`): SoftmaxCrossEntropyLoss (i64 class indices; logits
//    [N,C] or [N,C,d..]), a8.MseLoss, a8.L1Loss, a8.BceWithLogitsLoss (labels of the logits'
//    type and shape), or `output:NAME` (a model output that already is the loss, an f32
//    scalar); the seed d(loss)/d(loss) is an f32 constant of its own (TrainingStep::grad_seed);
// 3. the gradients of the loss with respect to every trainable parameter (float parameters the
//    loss depends on, minus --freeze), by reverse-mode autodiff (autodiff.h);
// 4. the update: with --accumulate=N each gradient is summed into FP32 state over N micro-steps
//    (a8.GradAccumulate) and the optimizer applies every N-th step; a8.GlobalNormSq feeds
//    --clip-grad-norm; a8.TrainControl computes the learning rate of the schedule, the gradient
//    scale (1/N times the clip factor) and whether this step applies, and counts steps in state
//    (`a8.step`, `a8.updates`, and `a8.control` for the runner's metrics); one a8.SgdUpdate or
//    a8.AdamUpdate per parameter (PyTorch's SGD/momentum/Nesterov/Adam/AdamW) updates the FP32
//    master weight and its moments, all as state updates.
// Graph outputs become: the loss, then the model's outputs. Errors name the flag or the value:
// an unknown --logits, a label name that already exists, labels of a loss that cannot apply to
// the logits, a model where every parameter is frozen.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

class BuildTraining : public Pass {
 public:
  BuildTraining() = default;
  StatusOr<bool> Run(Graph& graph) override;
};

// An error when `graph` holds a training step built by build-training (its a8.TrainControl
// node) but not the record of it, Graph::train_step (the loss, labels and loss scaler by name),
// which the passes after build-training and the plan's training section read: IR text dumped
// after build-training, which does not carry the record. `who` starts the message (the file,
// or the pass that needs the record). Ok otherwise.
Status CheckTrainingRecord(const Graph& graph, const std::string& who);

}  // namespace a8

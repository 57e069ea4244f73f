// loss-scaling: dynamic (or static) loss scaling inside a built training step, PRECISION.md
// "Loss scaling (dynamic)", PyTorch's GradScaler without any host synchronisation.
//
// Runs on a graph that build-training has built (Graph::train_step) when the compile
// configuration's --loss-scale (EffectiveLossScale, compile_config.h) is not "none"; changes
// nothing otherwise. On such a graph:
// 1. the scale is state `a8.scale` (f32[], --init-scale) with the growth tracker
//    `a8.growth_tracker` (i32[], 0) for `dynamic`, or the constant `a8.scale` for `static:V`;
// 2. the loss-gradient seed (TrainingStep::grad_seed, 1) is replaced by the scale in all its
//    uses, so every gradient is computed scaled;
// 3. one a8.UnscaleCheckFinite(scale, g_1..g_n) -> (g_1'..g_n' f32, found_inf) takes the
//    gradients the optimizer reads: after a8.GradAccumulate (an Inf/NaN of any micro-step stays
//    in the sum, so checking the sum at the update step suffices) and before a8.GlobalNormSq
//    (PyTorch unscales before clipping). Gradients of different float types get one op per type,
//    their flags combined by Max;
// 4. found_inf is a8.TrainControl's input 3: an overflowing step applies no update, and Adam's
//    step count does not move;
// 5. dynamic: a8.UpdateScale(scale, tracker, found_inf, step) -> (scale', tracker') with the
//    flags' settings, state updates of the scale and the tracker (PyTorch's _amp_update_scale_,
//    on update steps only).
// It records the scale's value name (and the tracker's) in Graph::train_step for lowering.
#pragma once

#include <string>

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(LossScaling);

}  // namespace a8

// fuse-optimizer: folds the loss scaler's unscale and the low-precision working copies into the
// a8.AdamUpdate that reads and writes them, so the step stops writing and re-reading those
// tensors (PRECISION.md "Loss scaling"; the working copies: insert_casts.cc).
//
// 1. A working copy `%w.f16.next = Cast(%w.next)` of an f32 parameter to f16 or bf16, where
//    %w.next is an a8.AdamUpdate's param_next, becomes that update's fourth output (attribute
//    copy_to = the Cast's `to`): the update rounds each new element as the Cast would, in the
//    same pass over memory (on a skipped step, the unchanged parameter, as the Cast did).
// 2. An a8.UnscaleCheckFinite(scale, g_1..g_n) whose every unscaled output is read only as the
//    gradient of a8.AdamUpdates (no GlobalNormSq: with --clip-grad-norm the norm reads them; no
//    graph output) is replaced by a8.CheckFinite(g_1..g_n), which only sets found_inf, and each
//    of those updates reads g_i itself with `scale` as its input 5: it multiplies each element by
//    1/scale exactly as a8.UnscaleCheckFinite stored it (optim_math.h UnscaleElement) before
//    anything else.
//
// Both keep every bit of the unfused plan: the same products and roundings, in the same order.
// What they save: the unscaled f32 copy of every gradient (written once and read once) and the
// copy's re-read of the new f32 master (on the fp16 BERT-base-width encoder, 52 M parameters:
// about 0.6 GB of memory traffic a step). SGD is left as it is.
//
// Runs after bucket-gradients (which all-reduces the gradients a8.UnscaleCheckFinite reads),
// before schedule; `a800c --no-fuse` leaves it out. Stats: working-copies-folded,
// unscales-folded.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(FuseOptimizer);

}  // namespace a8

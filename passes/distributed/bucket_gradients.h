// bucket-gradients: the data-parallel gradient all-reduce, in buckets, as early as backward
// allows (DESIGN.md, issue 7).
//
// Runs on training graphs after loss-scaling. The gradients are what the loss scaler's unscale
// ops read (or, without loss scaling, the optimizer's gradient operands and the clip norm's
// inputs); gradients that are constants (a parameter the loss does not reach) are the same on
// every rank and are left alone. Guarantees, after Run:
// - the gradients form buckets in the order backward produces them, each of one dtype and of
//   about --bucket-mb MiB (a bucket closes when it reaches that size, or before a gradient
//   produced after a reader of the bucket's gradients already ran);
// - per bucket, one `a8.AllReduceStart(g_1..g_n){bucket, dtype}` right after the last of its
//   gradients is produced, so its all-reduce overlaps the rest of backward; per gradient, one
//   `%g.avg = a8.AllReduceWait(token, %g){bucket}` right before the first node that reads it,
//   and every reader reads %g.avg: the unscale (and so the Inf/NaN check, which then sees the
//   same gradients on every rank: every rank skips the same steps and keeps the same scale),
//   the optimizer and the clip norm;
// - with --accumulate > 1 the reduced values are the micro-steps' gradients (what
//   a8.GradAccumulate adds), so every rank accumulates the same averages: correct, at one
//   all-reduce per micro-step rather than one per update;
// - on one rank (no communicator) the kernels reduce to an in-place copy.
// Stats: buckets, gradients, bytes.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(BucketGradients);

}  // namespace a8

// fuse-gelu: recognizes GELU written with Erf, 0.5 * x * (1 + erf(x / sqrt(2))), as one Gelu op
// (opset 20, approximate="none").
//
// Why: PRECISION.md pins Erf to FP32 "when not part of a fused GELU". Written out, the GELU of
// every BERT feed-forward layer costs two Casts per step in amp (the MatMul output to f32 for
// Erf, the product back to f16 for the next MatMul) and five elementwise kernels; Gelu is a
// follow op with one kernel and one gradient kernel (a8.GeluGrad).
//
// Guarantees, after Run:
// - every Mul whose factors are x, (1 + erf(x / c)) and 0.5 in any nesting and operand order,
//   with c = sqrt(2) (or x * c' with c' = 1/sqrt(2)) as scalar constants within 1e-6 relative, and
//   whose inner nodes have no other use, is replaced by Gelu(x) that keeps the Mul's output name;
// - nothing else changes; the dead inner nodes go (they had no other use).
// Runs before build-training, so the backward pass differentiates the fused Gelu.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(FuseGelu);

}  // namespace a8

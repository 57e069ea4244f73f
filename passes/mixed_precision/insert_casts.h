// insert-casts: applies assign-precision's decisions (PRECISION.md, "Casts").
//
// For every node with `a8.precision` = T:
// - its f32/f16/bf16 results are retyped to T;
// - each f32/f16/bf16 operand of another type is read through a Cast to T, except the gradient
//   operand of the optimizer and of gradient accumulation, which read f16/bf16 gradients into
//   their FP32 state directly (PrecisionPolicy::ReadsAnyFloat).
// - a8.FusedAttention's LSE and bias (and its gradient's LSE, bias and dBias) stay f32
//   (PrecisionPolicy::KeepsF32Operand/Result);
// - a normalization with `a8.edge` = E (pin-fp32) reads its edge operands and writes its edge
//   result in E, everything else in its `a8.precision`;
// - an f32 constant read in f16/bf16 is rounded at compile time into a new constant, no Cast;
// - a node without `a8.precision` (Cast, CastLike, Shape, ...) reads its operands in the types
//   they had before the pass: CastLike's result type is its second operand's.
// - fp16 mode: a parameter read only through its Cast to f16 becomes an FP16 working copy, state
//   that the step rewrites from the new FP32 master right after the optimizer (training), or an
//   f16 parameter (inference); see KeepLowWorkingCopies in the .cc;
// Guarantees:
// - one cast per (value, type): every consumer that needs `%w` in f16 reads the same `%w.f16`,
//   placed right after `%w` is defined (at the start of the step for parameters, inputs and
//   constants), so a weight is cast at most once per step;
// - graph inputs, graph outputs and state updates keep their types and names: a retyped result
//   that is an output or an update's value is renamed `%y.f16`, and a Cast back to its old type
//   takes its name `%y`;
// - a cast appears only where a value crosses from one type to another.
// Does nothing on a graph without `a8.precision` attributes (fp32 and tf32).
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(InsertCasts);

}  // namespace a8

// fold-casts: removes redundant Cast nodes left by insert-casts (XLA's SimplifyFPConversions).
//
// Guarantees, after Run:
// - a widening round trip `Cast(Cast(x: A) -> B) -> A` where B holds every value of A (f16 or
//   bf16 through f32 or f64, f32 through f64) reads `x` directly: it is the identity;
// - a narrowing round trip (f32 -> f16 -> f32) is never folded: it rounds, and it is what the
//   program asked for;
// - a Cast to its operand's own type reads its operand directly;
// - two Casts of the same value to the same type are merged into the first;
// - a Cast whose result is a graph output or a state update's value keeps its name and stays;
// - Casts left without uses are removed.
// Runs once: folding creates no new folding opportunity that one walk in program order misses.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(FoldCasts);

// Whether every value of type `from` is exactly representable in type `to` (float types).
bool FloatWidens(DType from, DType to);

}  // namespace a8

// pin-fp32: keeps the numerically sensitive ops in FP32 and decides where they may touch FP16
// (PRECISION.md: "Normalisations may read FP16 input and write FP16 output, but compute their
// statistics in FP32 and keep FP32 scale, bias and running stats").
//
// Runs after assign-precision, before insert-casts; only on graphs assign-precision annotated.
// Guarantees, after Run:
// - every node whose op is pinned (the optimizer, the losses, a8.TrainControl, internal ops no
//   list names) computes in FP32 (`a8.precision="f32"`); anything else is an internal error;
// - a LayerNormalization or BatchNormalization that computes in FP32 because of the default
//   lists (reason deny, or pinned in fp16 mode), whose X is produced in the low type, carries
//   `a8.edge="f16"` (or "bf16"): insert-casts then leaves X and Y in that type, while scale, bias,
//   mean, variance and the saved statistics stay FP32 and the kernel computes in FP32. The rule
//   is the one assign-precision's painting assumed, so the follow ops around agree with it;
// - their gradient ops (`<forward>.grad...`) carry the forward node's `a8.edge`: dY, X and dX in
//   the low type, dScale and dBias FP32;
// - a user override of a normalization (--fp32-ops, --fp32-nodes, policy file) gets no edges:
//   the user asked for FP32 at its edges too.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(PinFp32);

// The type `a8.edge` names on `node`; nullopt when it has none.
std::optional<DType> EdgePrecision(const Node& node);

}  // namespace a8

// assign-precision: decides the compute type of every float node (PRECISION.md).
//
// Runs only when the compile configuration (config().precision) asks for amp, fp16 or bf16; in
// fp32 and tf32 it changes nothing (tf32 is lower's: it lists each GEMM/conv kernel's TF32
// operands, Kernel.tf32_inputs).
//
// Guarantees, after Run, for every node that reads or writes f32/f16/bf16 (nodes touching f64 are
// left alone: that is the gradient checks' type) and whose op computes in a float type:
// - attribute `a8.precision` is "f32", "f16" or "bf16" and `a8.why` its PRECISION.md reason
//   (mode, allow, deny, follow, user-op, user-node, policy-file, pinned);
// - the decision is the policy's (policy.h) for allow, deny, pinned and overridden ops;
// - a gradient node (`<forward>.grad`, `.grad.N`, `.grad.sum`) takes its forward node's precision
//   and reason, unless its own op is pinned or denied by the defaults (the reductions of a
//   gradient stay FP32) while the forward node's decision came from the defaults too;
// - follow ops are painted in the spirit of TensorFlow's AutoMixedPrecision: forward, a follow
//   node takes the widest type of the nodes that feed it (graph inputs, parameters and constants
//   do not vote; no vote means FP32), so follow ops between low-precision ops stay low and no
//   casts ping-pong; then backward, a low follow node whose every consumer computes or is kept in
//   FP32 (deny ops, graph outputs, state updates) goes FP32, so what only feeds deny ops stays
//   FP32;
// - a LayerNormalization or BatchNormalization kept FP32 by the defaults votes, for its Y, with
//   the type its X arrives in (it will read and write that type at its edges: pin-fp32), so a
//   Relu after a BatchNorm after an FP16 Conv stays FP16.
// Values keep their types: insert-casts applies the decisions. Unknown ONNX ops are an error
// naming the node.
#pragma once

#include <string>

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(AssignPrecision);

// The dtype a node's string attribute `name` names ("f16"); nullopt when it has none.
std::optional<DType> DTypeAttribute(const Node& node, const std::string& name);
// The dtype a node's `a8.precision` names; nullopt when it has none.
std::optional<DType> AssignedPrecision(const Node& node);

}  // namespace a8

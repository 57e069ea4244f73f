// expand-gradient: replaces every ONNX `Gradient` node (ai.onnx.preview.training) by the nodes
// that compute it.
//
// Gradient{xs, y, zs}(xs..., zs...) returns dy/dx for each x in xs. The pass runs reverse-mode
// autodiff (autodiff.h) from the value named `y` to the node's first |xs| inputs, rewires the
// node's outputs to the results and erases it, then restores a topological node order (the
// gradient nodes are appended; the Gradient node's users may come before them). This is what
// gives a model's TrainingInfoProto algorithm its meaning, and it also serves a Gradient node
// in an ordinary graph (the ONNX backend tests `test_gradient_of_add*`). Errors name the node:
// `y` not a value of the graph, an input that is not float, an op on the path without a rule.
// It runs before `canonicalize` in the pipelines: `y` is named by an attribute, not used as an
// operand, so dead-code elimination would otherwise remove the loss it names.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(ExpandGradient);

}  // namespace a8

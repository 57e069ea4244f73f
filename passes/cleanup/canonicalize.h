// canonicalize: the cleanup every later pass can rely on, run to a fixed point.
//
// Each round applies, in order:
// 1. constant folding: a node whose inputs are all constant (Shape/Size: whose input is typed)
//    and whose op the evaluator knows (constant_folding.h) is replaced by constants named after
//    its outputs; ops the evaluator declines stay;
// 2. identity removal: Identity; Dropout in inference form in a graph that is not to be
//    trained (training_mode absent or a constant false, mask output unused); Cast to the
//    input's dtype; Reshape and Expand whose output type equals the input type. Their uses read
//    the input instead;
// 3. common subexpression elimination (cse.h; never random ops);
// 4. dead code elimination (dce.h: dead nodes and unused constants; inputs, parameters and state
//    always stay).
// Graph output names are the model's interface: an identity or duplicate whose output is a
// graph output keeps that output (the node stays, its other uses move), so no output is renamed.
//
// Weights computed by constant subgraphs: after the fixed point, a constant created by folding
// in this run becomes a parameter (role kParameter, same name and data) when it is a float
// tensor with more than one element, all finite, that some node reads as data (not as a
// shape-like operand, see IsShapeOperand). That is how an exporter's `ConstantOfShape + Add`
// weight becomes trainable like an initializer. Only in a graph without parameters: a model
// that holds its weights as initializers holds all of them there, and what folds in it (an
// attention mask from an all-ones mask, a zero position bias) is not a weight. Scalars stay
// constants (scales, epsilons), and so do tensors holding Inf/NaN (attention masks are not
// weights). Constants that came from the model itself keep the role the importer gave them.
//
// Types stay valid: folding checks each result against the inferred type, and the rewrites only
// forward values of equal type. Run shape-inference first.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

struct CanonicalizeOptions {
  // Whether folded float tensors read as data become parameters (see above). Off for cleanup
  // runs after training is built, where a folded tensor is never a new weight.
  bool promote_folded_weights = true;
};

class Canonicalize : public Pass {
 public:
  Canonicalize() = default;
  explicit Canonicalize(CanonicalizeOptions options) : options_(options) {}
  StatusOr<bool> Run(Graph& graph) override;

 private:
  CanonicalizeOptions options_;
};

}  // namespace a8

// Reverse-mode automatic differentiation over the IR.
//
// BuildGradients appends to `graph` the nodes that compute d(loss)/d(v) for each v in `wrt`:
// it walks the nodes that lie on a path from a `wrt` value to `loss` in reverse program order,
// asks each node's gradient rule (grad_rule.h) for its inputs' gradients, and sums fan-out
// contributions (`Sum`). What the loss does not reach is pruned; a `wrt` value the loss does not
// depend on gets a zero gradient. The seed is d(loss)/d(loss) = `seed` (1 by default; the
// loss-scaling pass seeds with the scale). Summed gradients are named `<value>.grad`; gradient
// nodes are named after their forward node (`<node>.grad`, `<node>.grad.1`, ... unique) so that
// errors and numerics checks can name the ONNX node. Errors: an op on the path without a rule names
// the node and the op.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

struct GradientOptions {
  // d(loss)/d(loss): null for a constant 1 of the loss's type.
  Value* seed = nullptr;
};

// `loss` must be a float value (any shape; a non-scalar loss is seeded with ones, i.e. the
// gradient of its sum). Returns one gradient per `wrt` value, in order, each of its value's type.
StatusOr<std::vector<Value*>> BuildGradients(Graph& graph, Value* loss,
                                             const std::vector<Value*>& wrt,
                                             const GradientOptions& options = {});

}  // namespace a8

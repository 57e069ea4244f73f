// dead code elimination: removes what no graph output depends on.
//
// Guarantees, after Run:
// - every node has at least one output that is used by a node or is a graph output; nodes with
//   no outputs at all are kept (they exist for an effect);
// - every constant (role kConstant) is used or is a graph output. Inputs, parameters and state
//   are never removed, even when unused: they are the model's interface and its trained weights,
//   and a plan must accept the same inputs and save the same parameters as the model declares.
// Runs in one backward walk (a node's inputs become dead only after the node itself), so a dead
// chain of any length goes in one run.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

struct DeadCodeCounts {
  int64_t nodes = 0;
  int64_t constants = 0;
};

// The walk itself, shared with canonicalize.
DeadCodeCounts RemoveDeadCode(Graph& graph);

A8_DECLARE_PASS(DeadCodeElimination);

}  // namespace a8

// The IR verifier: structural invariants every pass must keep.
//
// - every node input is defined: a graph-level value or the output of an earlier node
//   (topological order; a cycle shows up as a use before its definition);
// - use lists agree with operands; producers agree with outputs; names are unique;
// - every op is in the op table, its arity and attribute kinds match the OpDef;
// - types agree where the op requires it: the node's output types equal what its shape rule
//   infers from its inputs (when `check_types` is set and the op has a rule);
// - graph-level values with data have data whose size matches their type.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

struct VerifyOptions {
  bool check_types = true;
};

Status Verify(const Graph& g, const VerifyOptions& opts = {});

}  // namespace a8

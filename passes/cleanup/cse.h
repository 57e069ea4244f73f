// common subexpression elimination: one node per distinct computation.
//
// Two nodes compute the same thing when they have the same domain, op, version, attributes
// (compared by value, tensors by bytes) and the same input values in the same order, and the
// same output types; node names do not matter. The later node's uses move to the earlier one,
// which dominates it because nodes are kept in topological order.
//
// Never merged:
// - random ops (Dropout, RandomNormal, RandomUniform and their -Like forms, Bernoulli,
//   Multinomial): two draws are two different tensors;
// - ops outside the default ONNX domain (training updates, a8 collectives): they may act on
//   state, and later passes own them;
// - nodes without outputs.
// A duplicate whose output is a graph output keeps that output (graph output names are part of
// the model's interface): its other uses still move, and the node stays.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

// Whether `node` draws random numbers (never folded, merged or duplicated).
bool IsRandomOp(const Node& node);

// The merge itself, shared with canonicalize. Returns the number of nodes merged away plus the
// number of nodes whose uses moved; 0 means nothing changed.
int64_t EliminateCommonSubexpressions(Graph& graph);

A8_DECLARE_PASS(CommonSubexpressionElimination);

}  // namespace a8

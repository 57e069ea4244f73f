// schedule: fixes the execution order of the nodes so that peak arena memory stays low.
//
// Guarantees, after Run:
// - the node order is a topological order of the data dependencies;
// - nodes whose relative order is observable keep it: nodes without results (they exist for an
//   effect), random ops (the order of draws), collectives and ops of other domains
//   (ai.onnx.preview.training); a800c's own ops (gradients, optimizer updates) are pure;
// - a state update that plan-memory may write in place (InPlaceUpdateTarget) comes after every
//   other reader of the state it overwrites;
// - the peak live bytes of the new order (liveness.h: the largest sum of aligned sizes of arena
//   values live at one position) is never above the original order's: the pass computes both
//   and keeps the original when the candidate is not strictly better;
// - the result is deterministic (ties go to the original order);
// - graph.memory_plan is cleared (it is only valid for the order it was planned for).
//
// The candidate is a greedy list schedule: among the ready nodes, take the one whose run
// changes the live bytes the least (bytes of results allocated minus bytes of operands freed,
// a freed operand being one whose last remaining use this is), ties to the earliest original
// position. On graphs with independent branches this runs one branch to its end before
// starting the next one, instead of keeping both branches' intermediates alive.
//
// Stats: peak-bytes-before, peak-bytes-after, nodes-moved.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

class Schedule : public Pass {
 public:
  Schedule() = default;
  StatusOr<bool> Run(Graph& graph) override;
};

}  // namespace a8

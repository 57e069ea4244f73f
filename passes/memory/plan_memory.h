// plan-memory: one arena offset for every graph input, intermediate and graph output, for the
// node order fixed by `schedule` (compiler/ir/memory_plan.h is the contract).
//
// Guarantees, after Run (graph.memory_plan is set):
// - every arena value (liveness.h) has a BufferAssignment: bytes = elements * dtype size, offset
//   a multiple of the alignment (64), live range [first, last] by node position;
// - two values whose live ranges overlap have disjoint bytes, except an in-place result and the
//   operand it overwrites (alias_of): the node is elementwise (InPlaceOperands below), the
//   operand has the result's dims and byte size (so no broadcast and no size change), it dies
//   at that node (last == the result's first), it is not a graph input or output, and no other
//   result overwrites it. The kernel reads element i of the operand before it writes element i;
//   the ranges touch only at that node. A view (Reshape, Flatten, Squeeze, Unsqueeze, Identity:
//   IsView) takes its operand's bytes under the same rules but any dims: its result is those
//   bytes, and its kernel copies nothing when the two buffers coincide;
// - lower_bound is the largest sum of aligned sizes of values live at one position (an in-place
//   pair counted once): no placement of these live ranges can use less;
// - arena_bytes = the largest offset + bytes, rounded up to the alignment.
//
// Placement is the "greedy by size" heuristic of TFLite's arena planner: buffers (an in-place
// chain is one buffer) in decreasing size, each at the lowest offset where it overlaps no placed
// buffer whose live range overlaps its own. Three placements are tried and the smallest arena
// kept; ties keep the first, so the plan is deterministic: decreasing size with the lowest offset,
// then with best fit, placed by PlaceInOrder (placement.h: a segment tree over positions holding
// merged address intervals, O(log n) small sets read per buffer, same offsets as the direct
// walk); then best fit in order of first use, as a run-time allocator would, with ordered sets of
// the free gaps (O(n log n)). That last one, the cheapest, runs first, and the others stop once
// their arena passes the best so far (same plan, less work where they lose).
//
// State updates in place: a value that is the new value of a parameter or state
// (Graph::updates), produced by an optimizer op that may overwrite that operand
// (InPlaceUpdateOperand), or by a node that writes it without reading it (InPlaceUpdateTarget),
// at the last node reading it, takes no arena bytes: its entry has
// alias_of = the parameter or state (a persistent value), and `lower` binds it to the same
// persistent bytes, so the update costs no copy and no arena space.
//
// Stats: arena-bytes, lower-bound-bytes, values, in-place, updates-in-place.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/memory_plan.h"
#include "compiler/pass/pass.h"

namespace a8 {

// The operands of `node` that its (single) result may overwrite when the shapes allow it: the
// elementwise ops whose kernels read element i of the operand only to write element i.
std::vector<int> InPlaceOperands(const Node& node);

// Whether `node` is a view (OpDef::in_place == InPlace::kView): its result is operand 0's bytes.
bool IsView(const Node& node);

// For output `output` of an optimizer op (a8.SgdUpdate, a8.AdamUpdate, a8.GradAccumulate), the
// operand it is the new value of, whose kernel reads element i of it before writing element i;
// -1 for every other op and output.
int InPlaceUpdateOperand(const Node& node, int output);

// The target of each update value (Graph::updates), by Value::id(); null for other values.
std::vector<const Value*> UpdateTargetsById(const Graph& graph);

// The parameter or state whose bytes output `output` of `node` may be written over, given the
// update targets by value id (UpdateTargetsById): the operand that output replaces
// (InPlaceUpdateOperand), or the target of an update value that nothing reads, made by a node
// that is not a view and does not read that target (the low-precision working copy's Cast after
// the optimizer, insert_casts.cc; the optimizer's own working-copy output): such a kernel writes
// the target without reading it. Null for every other output. Either way the write is in place
// only once every other reader of the target has run (schedule orders them first where it can;
// plan-memory checks it).
const Value* InPlaceUpdateTarget(const Node& node, int output,
                                 const std::vector<const Value*>& update_targets);

// The plan for the graph's current node order.
StatusOr<MemoryPlan> ComputeMemoryPlan(const Graph& graph);

A8_DECLARE_PASS(PlanMemory);

}  // namespace a8

// The memory plan of a graph, computed by `plan-memory` (passes/memory/) after `schedule` has
// fixed the node order, and read by the plan writer (`lower`).
//
// Every graph input, intermediate and graph output gets an offset in one arena. A value's bytes
// are its own from its definition to its last use (by position in the node order: inputs from
// -1, graph outputs to num_nodes); two values whose live ranges overlap never share bytes
// unless one is an in-place alias of the other (an elementwise op writing over an input that
// dies at that op). Parameters, state and constants are not in the arena (they are persistent).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace a8 {

struct BufferAssignment {
  int64_t offset = 0;
  int64_t bytes = 0;
  int first = -1;        // index of the defining node; -1 for graph inputs
  int last = -1;         // index of the last reading node; num_nodes for graph outputs
  std::string alias_of;  // non-empty: shares bytes with this value (in-place)
};

struct MemoryPlan {
  int64_t alignment = 64;
  int64_t arena_bytes = 0;
  // The largest total size (each value rounded up to the alignment) of values live at once:
  // no placement can use less.
  int64_t lower_bound = 0;
  // By value name. Unordered (a sorted map's string compares grew faster than the graph); who
  // lists it sorts it (the IR printer: by first use, then name).
  std::unordered_map<std::string, BufferAssignment> values;
};

}  // namespace a8

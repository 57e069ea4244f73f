// Liveness of the arena values of a graph, shared by `schedule` and `plan-memory`.
//
// The arena holds every graph input and every node output; parameters, state and constants are
// persistent and never in it. A value is live from its definition to its last use, by position
// in a node order: graph inputs are defined at -1, a graph output is used at num_nodes, and a
// value with no uses that is not a graph output dies where it is defined (last = first). Ranges
// are inclusive: an operand of node i and a result of node i are both live at i, because the
// kernel reads one while it writes the other.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

inline constexpr int64_t kArenaAlignment = 64;

inline int64_t AlignUp(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Whether `v` lives in the arena (a graph input or a node output).
bool IsArenaValue(const Value& v);

// elements * dtype size of an arena value; an error naming the value when its shape is not
// static (run shape-inference and bind the batch first).
StatusOr<int64_t> ValueBytes(const Value& v, const char* pass_name);

struct LiveValue {
  Value* value = nullptr;
  int64_t bytes = 0;
  int first = -1;
  int last = -1;
};

// The arena values of `graph` with their live ranges under `order` (a permutation of the
// graph's nodes): graph inputs first, in graph order, then node outputs in `order`.
StatusOr<std::vector<LiveValue>> ComputeLiveness(const Graph& graph,
                                                 const std::vector<Node*>& order,
                                                 const char* pass_name);

// The largest sum of aligned sizes of values live at one position of the order.
int64_t PeakLiveBytes(const std::vector<LiveValue>& values, int num_nodes, int64_t alignment);

}  // namespace a8

#include "passes/memory/liveness.h"

#include <algorithm>
#include <vector>

namespace a8 {

bool IsArenaValue(const Value& v) {
  return v.role() == ValueRole::kInput || v.role() == ValueRole::kIntermediate;
}

StatusOr<int64_t> ValueBytes(const Value& v, const char* pass_name) {
  StatusOr<int64_t> elements = v.type().NumElements();
  if (!elements.ok()) {
    return InvalidInput(
        "{}: value '%{}' has no static size ({}); run shape-inference with every "
        "dynamic dim bound first",
        pass_name, v.name(), elements.status().message());
  }
  int64_t size = static_cast<int64_t>(DTypeSize(v.dtype()));
  if (*elements > (int64_t{1} << 56) / std::max<int64_t>(size, 1)) {
    return InvalidInput("{}: value '%{}' of type {} is too large for the arena", pass_name,
                        v.name(), v.type().ToString());
  }
  return *elements * size;
}

StatusOr<std::vector<LiveValue>> ComputeLiveness(const Graph& graph,
                                                 const std::vector<Node*>& order,
                                                 const char* pass_name) {
  const int num_nodes = static_cast<int>(order.size());
  // Indexed by Node::id(): a hash map here grew faster than the graph.
  std::vector<int> position(graph.node_id_bound(), -1);
  for (int i = 0; i < num_nodes; ++i) position[order[i]->id()] = i;

  std::vector<LiveValue> values;
  auto add = [&](Value* v, int first) -> Status {
    A8_ASSIGN_OR_RETURN(int64_t bytes, ValueBytes(*v, pass_name));
    int last = first;
    for (const Use& use : v->uses()) {
      const int at = use.node->graph() == &graph && use.node->id() < graph.node_id_bound()
                         ? position[use.node->id()]
                         : -1;
      if (at < 0) {
        return Internal("{}: a use of '%{}' is not in the node order", pass_name, v->name());
      }
      last = std::max(last, at);
    }
    if (v->is_graph_output()) last = num_nodes;
    values.push_back({v, bytes, first, last});
    return Status::Ok();
  };
  for (Value* v : graph.inputs()) A8_RETURN_IF_ERROR(add(v, -1));
  for (int i = 0; i < num_nodes; ++i) {
    for (Value* v : order[i]->outputs()) {
      if (v && IsArenaValue(*v)) A8_RETURN_IF_ERROR(add(v, i));
    }
  }
  return values;
}

int64_t PeakLiveBytes(const std::vector<LiveValue>& values, int num_nodes, int64_t alignment) {
  // delta[p + 1] for positions -1 .. num_nodes, then a prefix sum.
  std::vector<int64_t> delta(num_nodes + 3, 0);
  for (const LiveValue& v : values) {
    int64_t size = AlignUp(v.bytes, alignment);
    delta[v.first + 1] += size;
    delta[v.last + 2] -= size;
  }
  int64_t live = 0, peak = 0;
  for (int p = 0; p < num_nodes + 2; ++p) {
    live += delta[p];
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace a8

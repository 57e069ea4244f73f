#include "passes/memory/schedule.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>

#include "passes/cleanup/cse.h"
#include "passes/memory/liveness.h"
#include "passes/memory/plan_memory.h"

namespace a8 {
namespace {

constexpr const char* kPass = "schedule";

// Nodes whose relative order must not change (see schedule.h).
// a800c's internal ops are pure functions of their operands (gradients, losses, optimizer
// updates: a state update is a new value, ordered by the edges below) except the collectives,
// whose order must match across ranks.
bool IsOrderedNode(const Node& n) {
  if (n.num_outputs() == 0 || IsRandomOp(n)) return true;
  if (n.domain() == "a8") return n.op().find("AllReduce") != std::string::npos;
  return !n.domain().empty();
}

}  // namespace

StatusOr<std::vector<Node*>> GreedyMemorySchedule(const Graph& graph) {
  const std::vector<Node*> original = graph.NodeList();
  const int num_nodes = static_cast<int>(original.size());
  std::unordered_map<const Node*, int> index;
  for (int i = 0; i < num_nodes; ++i) index[original[i]] = i;

  // Dependencies: data edges, plus a chain through the ordered nodes.
  std::vector<std::vector<int>> successors(num_nodes);
  std::vector<int> pending(num_nodes, 0);
  auto add_edge = [&](int from, int to) {
    successors[from].push_back(to);
    ++pending[to];
  };
  int last_ordered = -1;
  for (int i = 0; i < num_nodes; ++i) {
    std::set<int> producers;  // an operand used twice is one dependency
    for (Value* v : original[i]->inputs()) {
      if (v && v->producer()) producers.insert(index.at(v->producer()));
    }
    for (int p : producers) add_edge(p, i);
    // An update written in place (plan_memory.h: InPlaceUpdateOperand) must come after every
    // other reader of the value it overwrites; readers later in the original order are left
    // alone (plan-memory then copies instead of writing in place).
    for (int out = 0; out < original[i]->num_outputs(); ++out) {
      const int k = InPlaceUpdateOperand(*original[i], out);
      if (k < 0 || original[i]->input(k) == nullptr) continue;
      for (const Use& u : original[i]->input(k)->uses()) {
        const auto it = index.find(u.node);
        if (it != index.end() && it->second < i && !producers.count(it->second)) {
          producers.insert(it->second);
          add_edge(it->second, i);
        }
      }
    }
    if (IsOrderedNode(*original[i])) {
      if (last_ordered >= 0 && !producers.count(last_ordered)) add_edge(last_ordered, i);
      last_ordered = i;
    }
  }

  // Arena bytes of each value, and how many uses of it are still to run.
  std::unordered_map<const Value*, int64_t> bytes;
  std::unordered_map<const Value*, int> remaining_uses;
  auto note_value = [&](Value* v) -> Status {
    if (!v || !IsArenaValue(*v) || bytes.count(v)) return Status::Ok();
    A8_ASSIGN_OR_RETURN(int64_t b, ValueBytes(*v, kPass));
    bytes[v] = AlignUp(b, kArenaAlignment);
    remaining_uses[v] = static_cast<int>(v->uses().size());
    return Status::Ok();
  };
  for (Value* v : graph.inputs()) A8_RETURN_IF_ERROR(note_value(v));
  for (Node* n : original) {
    for (Value* v : n->outputs()) A8_RETURN_IF_ERROR(note_value(v));
  }

  // The change in live bytes once node i has run.
  auto delta = [&](int i) {
    const Node* n = original[i];
    int64_t d = 0;
    for (Value* v : n->outputs()) {
      if (v && bytes.count(v) && (!v->uses().empty() || v->is_graph_output())) d += bytes[v];
    }
    std::unordered_map<const Value*, int> uses_here;
    for (Value* v : n->inputs()) {
      if (v && bytes.count(v)) ++uses_here[v];
    }
    for (const auto& [v, count] : uses_here) {
      if (!v->is_graph_output() && remaining_uses[v] == count) d -= bytes[v];
    }
    return d;
  };

  // The ready nodes by (delta, index): the first is the node to run, the earliest original node
  // among those freeing the most. A node's delta changes only when an input's remaining uses
  // change, so after each step only the ready readers of the step's inputs are re-keyed:
  // O(n log n) over the schedule instead of re-scanning every ready node at every step.
  std::set<std::pair<int64_t, int>> ready;
  std::vector<int64_t> key(num_nodes, 0);
  std::vector<char> is_ready(num_nodes, 0);
  auto make_ready = [&](int i) {
    key[i] = delta(i);
    is_ready[i] = 1;
    ready.emplace(key[i], i);
  };
  auto rekey = [&](int i) {
    const int64_t d = delta(i);
    if (d == key[i]) return;
    ready.erase({key[i], i});
    key[i] = d;
    ready.emplace(d, i);
  };
  for (int i = 0; i < num_nodes; ++i) {
    if (pending[i] == 0) make_ready(i);
  }
  std::vector<Node*> order;
  order.reserve(num_nodes);
  std::unordered_map<const Value*, int> max_uses_by_one_node;
  for (const Node* n : original) {
    for (int a = 0; a < n->num_inputs(); ++a) {
      Value* v = n->input(a);
      if (v == nullptr || !remaining_uses.count(v)) continue;
      int count = 0;
      for (const Value* w : n->inputs()) count += w == v;
      int& m = max_uses_by_one_node[v];
      m = std::max(m, count);
    }
  }
  std::vector<int> touched;
  while (!ready.empty()) {
    const int best = ready.begin()->second;
    ready.erase(ready.begin());
    is_ready[best] = 0;
    order.push_back(original[best]);
    touched.clear();
    for (Value* v : original[best]->inputs()) {
      if (!v || !remaining_uses.count(v)) continue;
      // A reader's delta counts v as freed when v's remaining uses are all its own: that can
      // change only once the remaining uses are down to the most one node makes of v.
      if (--remaining_uses[v] > max_uses_by_one_node[v]) continue;
      for (const Use& u : v->uses()) {
        const auto it = index.find(u.node);
        if (it != index.end() && is_ready[it->second]) touched.push_back(it->second);
      }
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int i : touched) rekey(i);
    for (int s : successors[best]) {
      if (--pending[s] == 0) make_ready(s);
    }
  }
  if (static_cast<int>(order.size()) != num_nodes) {
    return Internal("{}: the graph has a cycle; cannot order its nodes", kPass);
  }
  return order;
}

StatusOr<bool> Schedule::Run(Graph& graph) {
  const bool had_plan = graph.memory_plan.has_value();
  graph.memory_plan.reset();
  const std::vector<Node*> original = graph.NodeList();
  const int num_nodes = static_cast<int>(original.size());
  A8_ASSIGN_OR_RETURN(std::vector<LiveValue> before, ComputeLiveness(graph, original, kPass));
  const int64_t peak_before = PeakLiveBytes(before, num_nodes, kArenaAlignment);
  A8_ASSIGN_OR_RETURN(std::vector<Node*> candidate, GreedyMemorySchedule(graph));
  A8_ASSIGN_OR_RETURN(std::vector<LiveValue> after, ComputeLiveness(graph, candidate, kPass));
  const int64_t peak_after = PeakLiveBytes(after, num_nodes, kArenaAlignment);

  stats_["peak-bytes-before"] = peak_before;
  if (peak_after >= peak_before) {
    stats_["peak-bytes-after"] = peak_before;
    stats_["nodes-moved"] = 0;
    return had_plan;
  }
  int64_t moved = 0;
  for (int i = 0; i < num_nodes; ++i) moved += candidate[i] != original[i];
  graph.Reorder(candidate);
  stats_["peak-bytes-after"] = peak_after;
  stats_["nodes-moved"] = moved;
  return true;
}

}  // namespace a8

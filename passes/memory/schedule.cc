#include "passes/memory/schedule.h"

#include <algorithm>
#include <set>
#include <utility>

#include "passes/cleanup/cse.h"
#include "passes/memory/liveness.h"
#include "passes/memory/plan_memory.h"

namespace a8 {
namespace {

constexpr const char* kSchedulePass = "schedule";

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
  // Everything below is indexed by dense ids (Node::id(), Value::id()), not hashed by pointer:
  // the hash maps were most of this pass's time, and grew faster than the graph (cache misses).
  std::vector<int> index(graph.node_id_bound(), -1);
  for (int i = 0; i < num_nodes; ++i) index[original[i]->id()] = i;

  // Dependencies: data edges, plus a chain through the ordered nodes.
  std::vector<std::vector<int>> successors(num_nodes);
  std::vector<int> pending(num_nodes, 0);
  auto add_edge = [&](int from, int to) {
    successors[from].push_back(to);
    ++pending[to];
  };
  int last_ordered = -1;
  std::vector<int> producers;  // of one node, sorted and unique: an operand used twice is one
  auto has_producer = [&](int p) {
    return std::binary_search(producers.begin(), producers.end(), p);
  };
  for (int i = 0; i < num_nodes; ++i) {
    producers.clear();
    for (Value* v : original[i]->inputs()) {
      if (v && v->producer()) producers.push_back(index[v->producer()->id()]);
    }
    std::sort(producers.begin(), producers.end());
    producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    for (int p : producers) add_edge(p, i);
    // An update written in place (plan_memory.h: InPlaceUpdateOperand) must come after every
    // other reader of the value it overwrites; readers later in the original order are left
    // alone (plan-memory then copies instead of writing in place).
    for (int out = 0; out < original[i]->num_outputs(); ++out) {
      const int k = InPlaceUpdateOperand(*original[i], out);
      if (k < 0 || original[i]->input(k) == nullptr) continue;
      for (const Use& u : original[i]->input(k)->uses()) {
        const int at = index[u.node->id()];
        if (at >= 0 && at < i && !has_producer(at)) {
          producers.insert(std::lower_bound(producers.begin(), producers.end(), at), at);
          add_edge(at, i);
        }
      }
    }
    if (IsOrderedNode(*original[i])) {
      if (last_ordered >= 0 && !has_producer(last_ordered)) add_edge(last_ordered, i);
      last_ordered = i;
    }
  }

  // Arena bytes of each value (-1: not an arena value), and how many uses of it are still to
  // run.
  std::vector<int64_t> bytes(graph.value_id_bound(), -1);
  std::vector<int> remaining_uses(graph.value_id_bound(), 0);
  auto counted = [&](const Value* v) { return v != nullptr && bytes[v->id()] >= 0; };
  auto note_value = [&](Value* v) -> Status {
    if (!v || !IsArenaValue(*v) || counted(v)) return Status::Ok();
    A8_ASSIGN_OR_RETURN(int64_t b, ValueBytes(*v, kSchedulePass));
    bytes[v->id()] = AlignUp(b, kArenaAlignment);
    remaining_uses[v->id()] = static_cast<int>(v->uses().size());
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
      if (counted(v) && (!v->uses().empty() || v->is_graph_output())) d += bytes[v->id()];
    }
    const std::vector<Value*>& in = n->inputs();
    for (size_t a = 0; a < in.size(); ++a) {
      const Value* v = in[a];
      if (!counted(v) || v->is_graph_output()) continue;
      // Each distinct operand once, with the number of times this node reads it.
      if (std::find(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(a), v) !=
          in.begin() + static_cast<std::ptrdiff_t>(a)) {
        continue;
      }
      const int count =
          static_cast<int>(std::count(in.begin() + static_cast<std::ptrdiff_t>(a), in.end(), v));
      if (remaining_uses[v->id()] == count) d -= bytes[v->id()];
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
  std::vector<int> max_uses_by_one_node(graph.value_id_bound(), 0);
  for (const Node* n : original) {
    for (int a = 0; a < n->num_inputs(); ++a) {
      Value* v = n->input(a);
      if (!counted(v)) continue;
      int count = 0;
      for (const Value* w : n->inputs()) count += w == v;
      int& m = max_uses_by_one_node[v->id()];
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
      if (!counted(v)) continue;
      // A reader's delta counts v as freed when v's remaining uses are all its own: that can
      // change only once the remaining uses are down to the most one node makes of v.
      if (--remaining_uses[v->id()] > max_uses_by_one_node[v->id()]) continue;
      for (const Use& u : v->uses()) {
        const int at = index[u.node->id()];
        if (at >= 0 && is_ready[at]) touched.push_back(at);
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
    return Internal("{}: the graph has a cycle; cannot order its nodes", kSchedulePass);
  }
  return order;
}

StatusOr<bool> Schedule::Run(Graph& graph) {
  const bool had_plan = graph.memory_plan.has_value();
  graph.memory_plan.reset();
  const std::vector<Node*> original = graph.NodeList();
  const int num_nodes = static_cast<int>(original.size());
  A8_ASSIGN_OR_RETURN(std::vector<LiveValue> before, ComputeLiveness(graph, original, kSchedulePass));
  const int64_t peak_before = PeakLiveBytes(before, num_nodes, kArenaAlignment);
  A8_ASSIGN_OR_RETURN(std::vector<Node*> candidate, GreedyMemorySchedule(graph));
  A8_ASSIGN_OR_RETURN(std::vector<LiveValue> after, ComputeLiveness(graph, candidate, kSchedulePass));
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

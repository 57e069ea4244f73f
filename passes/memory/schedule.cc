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

// Rows of ints in one array (compressed sparse rows): row r is items[start[r] .. start[r + 1]).
struct Rows {
  std::vector<int> start{0};
  std::vector<int> items;
  void EndRow() { start.push_back(static_cast<int>(items.size())); }
  const int* begin(int r) const { return items.data() + start[r]; }
  const int* end(int r) const { return items.data() + start[r + 1]; }
};

// What the schedule needs of a graph, read from its nodes and values once, in dense arrays:
// nodes by original position, arena values by a slot of their own. Chasing Node and Value
// pointers at every step was most of this pass's time on large graphs, and grew faster than
// the graph (the objects stop fitting in cache).
struct ScheduleGraph {
  int num_nodes = 0;
  Rows successors;  // dependency edges: data, in-place update and ordered-node edges
  std::vector<int> num_predecessors;
  // Per node: its distinct arena operands, with how many times it reads each, and its arena
  // results that take bytes once it has run (read later, or graph outputs).
  Rows operands, operand_reads, results;
  // Per arena value (slot): aligned bytes, producer position (-1: a graph input), uses in all,
  // the most uses by one node, whether it is a graph output, its readers' positions.
  std::vector<int64_t> bytes;
  std::vector<int> producer, uses, max_uses_by_one_node;
  std::vector<char> graph_output;
  Rows readers;
};

// Rows from (row, item) pairs, each row's items in the pairs' order.
Rows GroupByRow(int num_rows, const std::vector<std::pair<int, int>>& pairs) {
  Rows rows;
  rows.start.assign(num_rows + 1, 0);
  for (const auto& [row, item] : pairs) ++rows.start[row + 1];
  for (int r = 0; r < num_rows; ++r) rows.start[r + 1] += rows.start[r];
  rows.items.resize(pairs.size());
  std::vector<int> next(rows.start.begin(), rows.start.end() - 1);
  for (const auto& [row, item] : pairs) rows.items[next[row]++] = item;
  return rows;
}

StatusOr<ScheduleGraph> ReadScheduleGraph(const Graph& graph, const std::vector<Node*>& nodes) {
  ScheduleGraph s;
  s.num_nodes = static_cast<int>(nodes.size());
  // Dense ids (Node::id(), Value::id()) index everything, never a hash of a pointer. Each node
  // and value is read in one sweep over the order; uses and producers are found through the
  // arrays, not by following a Use or a producer to another node (a cache miss each).
  std::vector<int> index(graph.node_id_bound(), -1);
  std::vector<int> made_by(graph.value_id_bound(), -1);  // the producer's position
  std::vector<int> slot(graph.value_id_bound(), -1);
  std::vector<const Value*> values;
  auto add_value = [&](Value* v, int producer) -> Status {
    if (!v || !IsArenaValue(*v) || slot[v->id()] >= 0) return Status::Ok();
    A8_ASSIGN_OR_RETURN(int64_t b, ValueBytes(*v, kSchedulePass));
    slot[v->id()] = static_cast<int>(values.size());
    values.push_back(v);
    s.bytes.push_back(::a8::AlignUp(b, kArenaAlignment));
    s.producer.push_back(producer);
    s.uses.push_back(static_cast<int>(v->uses().size()));
    s.max_uses_by_one_node.push_back(0);
    s.graph_output.push_back(v->is_graph_output() ? 1 : 0);
    return Status::Ok();
  };
  for (Value* v : graph.inputs()) A8_RETURN_IF_ERROR(add_value(v, -1));
  for (int i = 0; i < s.num_nodes; ++i) {
    index[nodes[i]->id()] = i;
    for (Value* v : nodes[i]->outputs()) {
      if (v) made_by[v->id()] = i;
      A8_RETURN_IF_ERROR(add_value(v, i));
    }
  }

  // Dependencies: data edges, plus a chain through the ordered nodes.
  std::vector<std::pair<int, int>> edges;    // (from, to)
  std::vector<std::pair<int, int>> readers;  // (value slot, reader's position)
  std::vector<int> reads_counted(values.size(), 0);
  s.num_predecessors.assign(s.num_nodes, 0);
  int last_ordered = -1;
  const std::vector<const Value*> update_targets = UpdateTargetsById(graph);
  std::vector<int> producers;  // of one node, sorted and unique: an operand used twice is one
  std::vector<int> reads;      // slots of one node's arena operands, one per read
  auto has_producer = [&](int p) {
    return std::binary_search(producers.begin(), producers.end(), p);
  };
  auto add_edge = [&](int from, int to) {
    edges.emplace_back(from, to);
    ++s.num_predecessors[to];
  };
  for (int i = 0; i < s.num_nodes; ++i) {
    const Node& n = *nodes[i];
    producers.clear();
    reads.clear();
    for (Value* v : n.inputs()) {
      if (!v) continue;
      if (v->producer()) {
        if (made_by[v->id()] < 0) {
          return Internal("{}: '%{}' is made by a node not in the node order", kSchedulePass,
                          v->name());
        }
        producers.push_back(made_by[v->id()]);
      }
      if (slot[v->id()] >= 0) reads.push_back(slot[v->id()]);
    }
    std::sort(producers.begin(), producers.end());
    producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    for (int p : producers) add_edge(p, i);
    // An update written in place (plan_memory.h: InPlaceUpdateTarget) must come after every
    // other reader of the value it overwrites; readers later in the original order are left
    // alone (plan-memory then copies instead of writing in place).
    for (int out = 0; out < n.num_outputs(); ++out) {
      const Value* target = InPlaceUpdateTarget(n, out, update_targets);
      if (target == nullptr) continue;
      for (const Use& u : target->uses()) {
        const int at = u.node->id() < graph.node_id_bound() ? index[u.node->id()] : -1;
        if (at >= 0 && at < i && !has_producer(at)) {
          producers.insert(std::lower_bound(producers.begin(), producers.end(), at), at);
          add_edge(at, i);
        }
      }
    }
    if (IsOrderedNode(n)) {
      if (last_ordered >= 0 && !has_producer(last_ordered)) add_edge(last_ordered, i);
      last_ordered = i;
    }

    std::sort(reads.begin(), reads.end());
    for (size_t a = 0; a < reads.size();) {
      size_t b = a;
      while (b < reads.size() && reads[b] == reads[a]) ++b;
      const int v = reads[a], count = static_cast<int>(b - a);
      s.operands.items.push_back(v);
      s.operand_reads.items.push_back(count);
      s.max_uses_by_one_node[v] = std::max(s.max_uses_by_one_node[v], count);
      reads_counted[v] += count;
      readers.emplace_back(v, i);
      a = b;
    }
    s.operands.EndRow();
    s.operand_reads.EndRow();
    for (Value* v : n.outputs()) {
      const int r = v ? slot[v->id()] : -1;
      if (r >= 0 && (s.uses[r] > 0 || s.graph_output[r])) s.results.items.push_back(r);
    }
    s.results.EndRow();
  }
  // Every use of a value is a read by a node of the order (liveness.h's ComputeLiveness says
  // the same): otherwise a value would never be freed, or freed early.
  for (size_t v = 0; v < values.size(); ++v) {
    if (reads_counted[v] != s.uses[v]) {
      return Internal("{}: a use of '%{}' is not in the node order", kSchedulePass,
                      values[v]->name());
    }
  }
  s.successors = GroupByRow(s.num_nodes, edges);
  s.readers = GroupByRow(static_cast<int>(values.size()), readers);
  return s;
}

// The greedy order (schedule.h), as original positions; empty when the graph has a cycle.
std::vector<int> GreedyMemorySchedule(const ScheduleGraph& s) {
  std::vector<int> remaining_uses = s.uses;
  std::vector<int> pending = s.num_predecessors;

  // The change in live bytes once node i has run.
  auto delta = [&](int i) {
    int64_t d = 0;
    for (const int* r = s.results.begin(i); r != s.results.end(i); ++r) d += s.bytes[*r];
    const int* reads = s.operand_reads.begin(i);
    for (const int* v = s.operands.begin(i); v != s.operands.end(i); ++v, ++reads) {
      if (!s.graph_output[*v] && remaining_uses[*v] == *reads) d -= s.bytes[*v];
    }
    return d;
  };

  // The ready nodes by (delta, position): the first is the node to run, the earliest original
  // node among those freeing the most. A node's delta changes only when an operand's remaining
  // uses change, so after each step only the ready readers of the step's operands are
  // re-keyed: O(n log n) over the schedule instead of re-scanning every ready node at every
  // step.
  std::set<std::pair<int64_t, int>> ready;
  std::vector<int64_t> key(s.num_nodes, 0);
  std::vector<char> is_ready(s.num_nodes, 0);
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
  for (int i = 0; i < s.num_nodes; ++i) {
    if (pending[i] == 0) make_ready(i);
  }
  std::vector<int> order;
  order.reserve(s.num_nodes);
  std::vector<int> touched;
  while (!ready.empty()) {
    const int best = ready.begin()->second;
    ready.erase(ready.begin());
    is_ready[best] = 0;
    order.push_back(best);
    touched.clear();
    const int* reads = s.operand_reads.begin(best);
    for (const int* v = s.operands.begin(best); v != s.operands.end(best); ++v, ++reads) {
      // A reader's delta counts v as freed when v's remaining uses are all its own: that can
      // change only once the remaining uses are down to the most one node makes of v.
      remaining_uses[*v] -= *reads;
      if (remaining_uses[*v] > s.max_uses_by_one_node[*v]) continue;
      for (const int* r = s.readers.begin(*v); r != s.readers.end(*v); ++r) {
        if (is_ready[*r]) touched.push_back(*r);
      }
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int i : touched) rekey(i);
    for (const int* t = s.successors.begin(best); t != s.successors.end(best); ++t) {
      if (--pending[*t] == 0) make_ready(*t);
    }
  }
  if (static_cast<int>(order.size()) != s.num_nodes) order.clear();
  return order;
}

// liveness.h's PeakLiveBytes of the order given as each original node's position in it.
int64_t PeakBytesInOrder(const ScheduleGraph& s, const std::vector<int>& position) {
  std::vector<LiveValue> live(s.bytes.size());
  for (size_t v = 0; v < live.size(); ++v) {
    LiveValue& l = live[v];
    l.bytes = s.bytes[v];
    l.first = s.producer[v] < 0 ? -1 : position[s.producer[v]];
    l.last = l.first;
    const int slot = static_cast<int>(v);
    for (const int* r = s.readers.begin(slot); r != s.readers.end(slot); ++r) {
      l.last = std::max(l.last, position[*r]);
    }
    if (s.graph_output[v]) l.last = s.num_nodes;
  }
  return ::a8::PeakLiveBytes(live, s.num_nodes, kArenaAlignment);
}

}  // namespace

StatusOr<bool> Schedule::Run(Graph& graph) {
  const bool had_plan = graph.memory_plan.has_value();
  graph.memory_plan.reset();
  const std::vector<Node*> original = graph.NodeList();
  const int num_nodes = static_cast<int>(original.size());
  A8_ASSIGN_OR_RETURN(ScheduleGraph s, ReadScheduleGraph(graph, original));
  std::vector<int> identity(num_nodes);
  for (int i = 0; i < num_nodes; ++i) identity[i] = i;
  const int64_t peak_before = PeakBytesInOrder(s, identity);
  const std::vector<int> candidate = GreedyMemorySchedule(s);
  if (static_cast<int>(candidate.size()) != num_nodes) {
    return Internal("{}: the graph has a cycle; cannot order its nodes", kSchedulePass);
  }
  std::vector<int> position(num_nodes);
  for (int p = 0; p < num_nodes; ++p) position[candidate[p]] = p;
  const int64_t peak_after = PeakBytesInOrder(s, position);

  stats_["peak-bytes-before"] = peak_before;
  if (peak_after >= peak_before) {
    stats_["peak-bytes-after"] = peak_before;
    stats_["nodes-moved"] = 0;
    return had_plan;
  }
  int64_t moved = 0;
  std::vector<Node*> order(num_nodes);
  for (int p = 0; p < num_nodes; ++p) {
    order[p] = original[candidate[p]];
    moved += candidate[p] != p;
  }
  graph.Reorder(order);
  stats_["peak-bytes-after"] = peak_after;
  stats_["nodes-moved"] = moved;
  return true;
}

}  // namespace a8

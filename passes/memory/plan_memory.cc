#include "passes/memory/plan_memory.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "compiler/ir/op_table.h"
#include "passes/memory/liveness.h"
#include "passes/memory/placement.h"

namespace a8 {
namespace {

constexpr const char* kPlanMemoryPass = "plan-memory";

// One arena buffer: a value, or an in-place chain of values sharing bytes (size aligned).
using Buffer = PlacedBuffer;

// Places `order`, sorted by first use, as an allocator would at run time: a buffer whose last
// use has passed frees its bytes, and each new one takes the smallest free gap between the live
// buffers that holds it (best fit; the lowest of equals), else goes on top of them. These are the
// offsets PlaceInOrder gives with Fit::kBest for the same order (the buffers live at one time
// never share bytes, so the gaps between them are the holes PlaceInOrder finds), found with
// ordered sets instead of a walk over every placed buffer: O(n log n). Stops once the arena
// passes `limit`, as PlaceInOrder.
int64_t PlaceInTimeOrder(std::vector<Buffer>& buffers, const std::vector<int>& order,
                         int64_t limit) {
  std::map<int64_t, int64_t> blocks;           // live buffers: begin -> end
  std::map<int64_t, int64_t> gaps;             // free bytes between them: begin -> size
  std::set<std::pair<int64_t, int64_t>> fits;  // the same gaps as (size, begin)
  using Live = std::pair<int, int64_t>;        // (last use, begin)
  std::priority_queue<Live, std::vector<Live>, std::greater<>> live;
  auto add_gap = [&](int64_t begin, int64_t end) {
    if (end <= begin) return;
    gaps[begin] = end - begin;
    fits.insert({end - begin, begin});
  };
  auto remove_gap = [&](int64_t begin) {
    auto it = gaps.find(begin);
    if (it == gaps.end()) return;
    fits.erase({it->second, begin});
    gaps.erase(it);
  };
  int64_t arena = 0;
  for (int b : order) {
    Buffer& buf = buffers[b];
    while (!live.empty() && live.top().first < buf.first) {  // dead before `buf` is born
      const int64_t begin = live.top().second;
      live.pop();
      auto it = blocks.find(begin);
      const int64_t prev_end = it == blocks.begin() ? 0 : std::prev(it)->second;
      const int64_t end = it->second;
      auto next = blocks.erase(it);
      remove_gap(prev_end);
      remove_gap(end);
      if (next != blocks.end()) add_gap(prev_end, next->first);  // else the top comes down
    }
    int64_t offset = -1;
    auto fit = fits.lower_bound({buf.size, std::numeric_limits<int64_t>::min()});
    if (fit != fits.end()) offset = fit->second;
    if (offset >= 0) {
      const int64_t gap_end = offset + gaps.at(offset);
      remove_gap(offset);
      add_gap(offset + buf.size, gap_end);
    } else {
      offset = blocks.empty() ? 0 : blocks.rbegin()->second;
    }
    buf.offset = offset;
    blocks[offset] = offset + buf.size;
    live.push({buf.last, offset});
    arena = std::max(arena, offset + buf.size);
    if (arena > limit) break;
  }
  return arena;
}

}  // namespace

std::vector<int> InPlaceOperands(const Node& node) {
  // The averaged gradient takes the bytes the all-reduce summed into.
  if (node.IsInternal("AllReduceWait")) return {1};
  if (!node.domain().empty() || node.num_outputs() != 1) return {};
  // The op table says which kernels may write over their inputs (OpDef::in_place).
  const OpDef* def = FindOp(node.domain(), node.op());
  if (def == nullptr || def->in_place == InPlace::kNo) return {};
  if (def->in_place == InPlace::kInput0 || def->in_place == InPlace::kView) return {0};
  std::vector<int> all(node.num_inputs());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

bool IsView(const Node& node) {
  if (!node.domain().empty()) return false;
  const OpDef* def = FindOp(node.domain(), node.op());
  return def != nullptr && def->in_place == InPlace::kView;
}

int InPlaceUpdateOperand(const Node& node, int output) {
  if (node.domain() != "a8") return -1;
  const std::string& op = node.op();
  if (op == "AdamUpdate") return output == 0 ? 0 : output == 1 ? 3 : output == 2 ? 4 : -1;
  if (op == "SgdUpdate") return output == 0 ? 0 : output == 1 ? 3 : -1;
  if (op == "GradAccumulate") return output == 0 ? 0 : -1;
  return -1;
}

std::vector<const Value*> UpdateTargetsById(const Graph& graph) {
  std::vector<const Value*> targets(graph.value_id_bound(), nullptr);
  for (const Graph::StateUpdate& u : graph.updates()) targets[u.value->id()] = u.target;
  return targets;
}

const Value* InPlaceUpdateTarget(const Node& node, int output,
                                 const std::vector<const Value*>& update_targets) {
  const int k = InPlaceUpdateOperand(node, output);
  if (k >= 0) return node.input(k);
  const Value* value = node.output(output);
  if (value == nullptr || value->id() >= static_cast<int>(update_targets.size())) return nullptr;
  const Value* target = update_targets[value->id()];
  if (target == nullptr || !value->uses().empty() || IsView(node)) return nullptr;
  for (const Value* in : node.inputs()) {
    if (in == target) return nullptr;
  }
  return target;
}

namespace {

// Update values written over their state: value -> the state's name.
std::unordered_map<const Value*, std::string> UpdatesInPlace(const Graph& graph,
                                                             const std::vector<Node*>& order) {
  std::vector<int> position(graph.node_id_bound(), 0);  // by Node::id()
  for (int i = 0; i < static_cast<int>(order.size()); ++i) position[order[i]->id()] = i;
  std::unordered_map<const Value*, std::string> result;
  std::vector<const Value*> outputs(graph.outputs().begin(), graph.outputs().end());
  const std::vector<const Value*> targets = UpdateTargetsById(graph);
  for (const Graph::StateUpdate& u : graph.updates()) {
    const Node* n = u.value->producer();
    if (n == nullptr || std::find(outputs.begin(), outputs.end(), u.value) != outputs.end()) {
      continue;
    }
    if (InPlaceUpdateTarget(*n, u.value->producer_output(), targets) != u.target) continue;
    const int k = InPlaceUpdateOperand(*n, u.value->producer_output());
    bool last_reader = true;
    for (const Use& use : u.target->uses()) {
      if (use.node == n) {
        last_reader &= use.operand == k;
      } else {
        last_reader &= position[use.node->id()] < position[n->id()];
      }
    }
    if (last_reader) result[u.value] = u.target->name();
  }
  return result;
}

}  // namespace

StatusOr<MemoryPlan> ComputeMemoryPlan(const Graph& graph) {
  const std::vector<Node*> order = graph.NodeList();
  const int num_nodes = static_cast<int>(order.size());
  A8_ASSIGN_OR_RETURN(std::vector<LiveValue> live, ComputeLiveness(graph, order, kPlanMemoryPass));
  // live's index of each value, by Value::id() (-1: not an arena value).
  std::vector<int> index(graph.value_id_bound(), -1);
  for (int i = 0; i < static_cast<int>(live.size()); ++i) index[live[i].value->id()] = i;
  auto live_index = [&](const Value* v) { return v == nullptr ? -1 : index[v->id()]; };

  // In-place chains: group[i] is the value whose bytes value i shares (itself when none).
  std::vector<int> group(live.size());
  std::iota(group.begin(), group.end(), 0);
  std::vector<int> alias_of(live.size(), -1);
  std::vector<bool> overwritten(live.size(), false);
  const std::unordered_map<const Value*, std::string> in_place_updates =
      UpdatesInPlace(graph, order);
  for (int pos = 0; pos < num_nodes; ++pos) {
    const Node& n = *order[pos];
    std::vector<int> operands = InPlaceOperands(n);
    // An update written over its state is in its state's bytes, not in an operand's.
    if (operands.empty() || live_index(n.output(0)) < 0 ||
        in_place_updates.count(n.output(0)) > 0) {
      continue;
    }
    const int y = live_index(n.output(0));
    if (live[y].bytes == 0) continue;
    const bool view = IsView(n);  // the same bytes under other dims: no dims to match
    for (int k : operands) {
      Value* in = n.input(k);
      const int x = live_index(in);
      if (x < 0) continue;
      if (in->role() != ValueRole::kIntermediate || in->is_graph_output() || overwritten[x] ||
          live[x].last != pos || live[x].bytes != live[y].bytes ||
          (!view && in->dims() != n.output(0)->dims())) {
        continue;
      }
      alias_of[y] = x;
      overwritten[x] = true;
      group[y] = group[x];
      break;
    }
  }

  // One buffer per chain, spanning its members' live ranges.
  std::vector<Buffer> buffers;
  std::vector<int> buffer_of(live.size(), -1);
  for (int i = 0; i < static_cast<int>(live.size()); ++i) {
    if (group[i] == i) {
      buffer_of[i] = static_cast<int>(buffers.size());
      // An update written over its state takes no arena bytes.
      const int64_t size =
          in_place_updates.count(live[i].value) > 0 ? 0 : AlignUp(live[i].bytes, kArenaAlignment);
      buffers.push_back({size, live[i].first, live[i].last});
    } else {
      Buffer& b = buffers[buffer_of[group[i]]];
      buffer_of[i] = buffer_of[group[i]];
      b.first = std::min(b.first, live[i].first);
      b.last = std::max(b.last, live[i].last);
    }
  }

  MemoryPlan plan;
  plan.alignment = kArenaAlignment;
  std::vector<LiveValue> spans;
  for (const Buffer& b : buffers) spans.push_back({nullptr, b.size, b.first, b.last});
  plan.lower_bound = PeakLiveBytes(spans, num_nodes, kArenaAlignment);

  // Candidate orders of the non-empty buffers; every candidate is a deterministic sort.
  std::vector<int> nonempty;
  for (int b = 0; b < static_cast<int>(buffers.size()); ++b) {
    if (buffers[b].size > 0) nonempty.push_back(b);
  }
  auto by_size = [&](int a, int b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return std::pair(buffers[a].first, a) < std::pair(buffers[b].first, b);
  };
  auto by_first = [&](int a, int b) {
    return std::tuple(buffers[a].first, -buffers[a].size, a) <
           std::tuple(buffers[b].first, -buffers[b].size, b);
  };
  // (A third order, longest live range first, never won on the example models nor on
  // BERT-base and cost two more quadratic placements: dropped. So was the lowest offset in
  // order of first use, which never gave a smaller arena than the best of the other three on
  // the example and zoo models, and took a sixth of the pass's time on BERT-base.)
  std::vector<int> by_size_order = nonempty, by_first_order = nonempty;
  std::sort(by_size_order.begin(), by_size_order.end(), by_size);
  std::sort(by_first_order.begin(), by_first_order.end(), by_first);
  auto offsets = [&] {
    std::vector<int64_t> o;
    for (const Buffer& b : buffers) o.push_back(b.size > 0 ? b.offset : 0);
    return o;
  };
  // The smallest arena wins, ties going to decreasing size with the lowest offset, then with
  // best fit, then best fit in order of first use. That last one, the cheapest, runs first: its
  // arena bounds the others, which stop as soon as theirs passes the best so far (a
  // placement's arena only grows). The result is that of running all three to the end;
  // decreasing size with the lowest offset wins on most example models, best fit in order of
  // first use on BERT-style training graphs, where the others stop early.
  const int64_t first_use_arena =
      PlaceInTimeOrder(buffers, by_first_order, std::numeric_limits<int64_t>::max());
  const std::vector<int64_t> first_use_offsets = offsets();
  int64_t best_arena = -1;
  std::vector<int64_t> best_offsets;
  for (Fit fit : {Fit::kLowest, Fit::kBest}) {
    if (best_arena == plan.lower_bound) break;
    const int64_t limit = best_arena < 0 ? first_use_arena : best_arena;
    const int64_t arena = PlaceInOrder(buffers, by_size_order, fit, limit);
    if (arena <= limit && (best_arena < 0 || arena < best_arena)) {
      best_arena = arena;
      best_offsets = offsets();
    }
  }
  if (best_arena < 0) {
    best_arena = first_use_arena;
    best_offsets = first_use_offsets;
  }
  plan.arena_bytes = std::max<int64_t>(best_arena, 0);

  plan.values.reserve(live.size());
  for (int i = 0; i < static_cast<int>(live.size()); ++i) {
    BufferAssignment& a = plan.values[live[i].value->name()];
    a.offset = best_offsets.empty() ? 0 : best_offsets[buffer_of[i]];
    a.bytes = live[i].bytes;
    a.first = live[i].first;
    a.last = live[i].last;
    if (alias_of[i] >= 0) a.alias_of = live[alias_of[i]].value->name();
    const auto update = in_place_updates.find(live[i].value);
    if (update != in_place_updates.end()) {
      a.offset = 0;
      a.alias_of = update->second;
    }
  }
  return plan;
}

StatusOr<bool> PlanMemory::Run(Graph& graph) {
  A8_ASSIGN_OR_RETURN(MemoryPlan plan, ComputeMemoryPlan(graph));
  int64_t in_place = 0;
  int64_t updates_in_place = 0;
  for (const auto& [name, a] : plan.values) {
    const Value* target = a.alias_of.empty() ? nullptr : graph.FindValue(a.alias_of);
    const bool update =
        target != nullptr && target->producer() == nullptr && target->role() != ValueRole::kInput;
    in_place += !a.alias_of.empty() && !update;
    updates_in_place += update;
  }
  stats_["updates-in-place"] = updates_in_place;
  stats_["arena-bytes"] = plan.arena_bytes;
  stats_["lower-bound-bytes"] = plan.lower_bound;
  stats_["values"] = static_cast<int64_t>(plan.values.size());
  stats_["in-place"] = in_place;
  graph.memory_plan = std::move(plan);
  return true;
}

}  // namespace a8

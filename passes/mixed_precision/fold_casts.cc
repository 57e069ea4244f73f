// fold-casts: widening round trips, identity casts and duplicate casts.
#include "passes/mixed_precision/fold_casts.h"

#include <map>
#include <utility>
#include <vector>

namespace a8 {
namespace {

bool IsCast(const Node& n) { return n.op() == "Cast" && n.domain().empty(); }

}  // namespace

bool FloatWidens(DType from, DType to) {
  if (from == to) return true;
  switch (from) {
    case DType::kF16:
    case DType::kBF16:
      return to == DType::kF32 || to == DType::kF64;
    case DType::kF32:
      return to == DType::kF64;
    default:
      return false;
  }
}

StatusOr<bool> FoldCasts::Run(Graph& graph) {
  // fp32 and tf32 compile the model as written, its own Casts included.
  if (!config().mixed()) return false;
  bool changed = false;
  std::map<std::pair<Value*, DType>, Value*> first_cast;
  // One walk of the node list serves both loops: the first only rewires uses (no node is added
  // or erased), and the walk is most of this pass's time on a large graph (a cache miss a node).
  const std::vector<Node*> nodes = graph.NodeList();
  for (Node* n : nodes) {
    if (!IsCast(*n) || !n->has_input(0)) continue;
    Value* in = n->input(0);
    Value* out = n->output(0);
    if (!IsFloat(in->dtype()) || !IsFloat(out->dtype())) continue;
    Value* replacement = nullptr;
    const char* counter = nullptr;
    if (in->dtype() == out->dtype()) {
      replacement = in;
      counter = "identity-casts-removed";
    } else if (Node* p = in->producer(); p != nullptr && IsCast(*p) && p->has_input(0) &&
                                         p->input(0)->dtype() == out->dtype() &&
                                         FloatWidens(out->dtype(), in->dtype())) {
      replacement = p->input(0);
      counter = "round-trips-folded";
    } else if (auto it = first_cast.find({in, out->dtype()}); it != first_cast.end()) {
      replacement = it->second;
      counter = "casts-merged";
    }
    if (replacement == nullptr || out->is_graph_output()) {
      first_cast.emplace(std::make_pair(in, out->dtype()), out);
      continue;
    }
    graph.ReplaceAllUsesWith(out, replacement);
    ++stats_[counter];
    changed = true;
  }
  // Casts without uses, last first so that a chain goes in one walk.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = *it;
    if (!IsCast(*n) || !n->output(0)->uses().empty() || n->output(0)->is_graph_output()) continue;
    graph.EraseNode(n);
    ++stats_["casts-removed"];
    changed = true;
  }
  if (changed) graph.memory_plan.reset();
  return changed;
}

}  // namespace a8

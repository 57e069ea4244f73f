#include "passes/cleanup/dce.h"

#include <vector>

namespace a8 {
namespace {

bool IsDead(const Value* v) { return v->uses().empty() && !v->is_graph_output(); }

}  // namespace

DeadCodeCounts RemoveDeadCode(Graph& graph) {
  DeadCodeCounts counts;
  std::vector<Node*> nodes = graph.NodeList();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = *it;
    if (n->num_outputs() == 0) continue;
    bool dead = true;
    for (Value* out : n->outputs()) dead = dead && IsDead(out);
    if (!dead) continue;
    graph.EraseNode(n);
    ++counts.nodes;
  }
  for (Value* v : graph.graph_values()) {
    if (v->role() == ValueRole::kConstant && IsDead(v)) {
      graph.EraseGraphValue(v);
      ++counts.constants;
    }
  }
  return counts;
}

StatusOr<bool> DeadCodeElimination::Run(Graph& graph) {
  DeadCodeCounts counts = RemoveDeadCode(graph);
  stats_["nodes-removed"] += counts.nodes;
  stats_["constants-removed"] += counts.constants;
  return counts.nodes + counts.constants > 0;
}

}  // namespace a8

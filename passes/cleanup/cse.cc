#include "passes/cleanup/cse.h"

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"

namespace a8 {
namespace {

// A key that narrows candidates; full equality (attributes, output types) is checked after.
std::string Key(const Node& n) {
  std::string key = n.domain() + "|" + n.op() + "|" + std::to_string(n.version()) + "|" +
                    std::to_string(n.num_outputs());
  for (const Value* v : n.inputs()) {
    key += "|";
    key += v ? v->name() : std::string("_");
  }
  return key;
}

bool SameComputation(const Node& a, const Node& b) {
  if (a.attrs() != b.attrs() || a.inputs() != b.inputs()) return false;
  for (int i = 0; i < a.num_outputs(); ++i) {
    if (a.output(i)->type() != b.output(i)->type()) return false;
  }
  return true;
}

}  // namespace

bool IsRandomOp(const Node& node) {
  const OpDef* def = FindOp(node.domain(), node.op());
  return def != nullptr && def->random;
}

int64_t EliminateCommonSubexpressions(Graph& graph) {
  int64_t changes = 0;
  std::map<std::string, std::vector<Node*>> seen;
  for (Node* n : graph.NodeList()) {
    if (!n->domain().empty() || IsRandomOp(*n) || n->num_outputs() == 0) continue;
    std::vector<Node*>& candidates = seen[Key(*n)];
    Node* same = nullptr;
    for (Node* c : candidates) {
      if (SameComputation(*c, *n)) {
        same = c;
        break;
      }
    }
    if (!same) {
      candidates.push_back(n);
      continue;
    }
    bool keeps_output = false;
    bool moved = false;
    for (int i = 0; i < n->num_outputs(); ++i) {
      Value* from = n->output(i);
      Value* to = same->output(i);
      keeps_output = keeps_output || from->is_graph_output();
      std::vector<Use> uses = from->uses();
      for (const Use& u : uses) u.node->SetInput(u.operand, to);
      moved = moved || !uses.empty();
    }
    if (!keeps_output) {
      graph.EraseNode(n);
      ++changes;
    } else if (moved) {
      ++changes;
    }
  }
  return changes;
}

StatusOr<bool> CommonSubexpressionElimination::Run(Graph& graph) {
  int64_t merged = EliminateCommonSubexpressions(graph);
  stats_["nodes-merged"] += merged;
  return merged > 0;
}

}  // namespace a8

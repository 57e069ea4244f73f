// expand-gradient (see expand_gradient.h).
#include "passes/autodiff/expand_gradient.h"

#include <deque>
#include <map>
#include <set>
#include <vector>

#include "passes/autodiff/autodiff.h"

namespace a8 {
namespace {

constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

// Kahn's algorithm, taking ready nodes in their current order: a stable topological sort.
void StableTopologicalSort(Graph& g) {
  const std::vector<Node*> nodes = g.NodeList();
  std::map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<const Node*> producers;
    for (const Value* v : nodes[i]->inputs()) {
      if (v != nullptr && v->producer() != nullptr) producers.insert(v->producer());
    }
    for (const Node* p : producers) {
      users[position.at(p)].push_back(i);
      ++pending[i];
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (pending[i] == 0) ready.insert(i);
  }
  std::vector<Node*> order;
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(nodes[i]);
    for (size_t u : users[i]) {
      if (--pending[u] == 0) ready.insert(u);
    }
  }
  // A cycle cannot appear (gradients only read forward values); keep the order if it did.
  if (order.size() == nodes.size()) g.Reorder(order);
}

}  // namespace

StatusOr<bool> ExpandGradient::Run(Graph& graph) {
  int64_t expanded = 0;
  for (Node* n : graph.NodeList()) {
    if (n->domain() != kTrainingDomain || n->op() != "Gradient") continue;
    const std::string y_name = n->GetString("y", "");
    Value* y = graph.FindValue(y_name);
    if (y == nullptr) {
      return InvalidInput("{}: attribute 'y' names '{}', which is not a value of the graph",
                          n->Where(), y_name);
    }
    const Attribute* xs_attr = n->attr("xs");
    const std::vector<std::string> xs = xs_attr != nullptr && xs_attr->kind() == AttrKind::kStrings
                                            ? xs_attr->strings()
                                            : std::vector<std::string>{};
    std::vector<Value*> wrt;
    for (size_t i = 0; i < xs.size(); ++i) {
      Value* x = n->input(static_cast<int>(i));
      if (x == nullptr || x->name() != xs[i]) {
        return InvalidInput("{}: input {} must be '{}' (attribute xs)", n->Where(), i, xs[i]);
      }
      wrt.push_back(x);
    }
    A8_ASSIGN_OR_RETURN(std::vector<Value*> grads, BuildGradients(graph, y, wrt));
    // In a TrainingInfoProto step the differentiated value is the loss the runner reports.
    if (graph.train_step && graph.train_step->from_model && graph.train_step->loss_output.empty()) {
      if (!y->is_graph_output()) graph.AddOutput(y);
      graph.train_step->loss_output = y->name();
    }
    // Outputs keep their names: a graph output (or a gradient that is an input or constant, or
    // shared by two outputs) goes through an Identity renamed after the Gradient's output.
    std::vector<std::pair<Value*, std::string>> renames;
    std::set<const Value*> used;
    for (size_t i = 0; i < grads.size(); ++i) {
      Value* out = n->output(static_cast<int>(i));
      Value* g = grads[i];
      if (out->is_graph_output() || g->producer() == nullptr || !used.insert(g).second) {
        Node* id = graph.AddNode("Identity", "", {g}, {{out->name() + ".value", g->type()}}, {},
                                 n->name() + "." + out->name());
        id->set_version(1);
        g = id->output(0);
        renames.emplace_back(g, out->name());
      }
      graph.ReplaceAllUsesWith(out, g);
    }
    graph.EraseNode(n);
    for (const auto& [v, name] : renames) graph.RenameValue(v, name);
    ++expanded;
  }
  if (expanded == 0) return false;
  StableTopologicalSort(graph);
  stats()["gradients-expanded"] = expanded;
  return true;
}

}  // namespace a8

// fuse-gelu: 0.5 * x * (1 + erf(x / sqrt(2))) -> Gelu(x) (see fuse_gelu.h).
#include "passes/fusion/fuse_gelu.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"

namespace a8 {
namespace {

bool IsOp(const Node* n, const char* op) {
  return n != nullptr && n->domain().empty() && n->op() == op;
}

// The value of a one-element float constant, else nullopt.
std::optional<double> ScalarConstant(const Value* v) {
  if (v == nullptr || v->role() != ValueRole::kConstant || !v->data()) return std::nullopt;
  if (!IsFloat(v->dtype()) || v->data()->num_elements() != 1) return std::nullopt;
  return v->data()->GetDouble(0);
}

bool Near(std::optional<double> a, double b) { return a && std::abs(*a - b) <= 1e-6 * std::abs(b); }

// `v`'s producer when `v` has exactly one use (so the node dies with the fusion).
Node* OnlyUseProducer(const Value* v) {
  if (v == nullptr || v->producer() == nullptr || v->uses().size() != 1 || v->is_graph_output()) {
    return nullptr;
  }
  return v->producer();
}

// The leaves of a tree of Muls rooted at `root`: inner Muls must have one use.
void MulLeaves(const Node* mul, std::vector<Value*>* leaves, int depth) {
  for (Value* in : mul->inputs()) {
    Node* p = OnlyUseProducer(in);
    if (depth < 2 && IsOp(p, "Mul")) {
      MulLeaves(p, leaves, depth + 1);
    } else {
      leaves->push_back(in);
    }
  }
}

// The x of erf's argument: x / sqrt(2) or x * (1/sqrt(2)), in either operand order for Mul.
Value* ErfArgument(const Node* erf) {
  Node* p = OnlyUseProducer(erf->input(0));
  if (IsOp(p, "Div") && Near(ScalarConstant(p->input(1)), std::sqrt(2.0))) return p->input(0);
  if (IsOp(p, "Mul")) {
    for (int i = 0; i < 2; ++i) {
      if (Near(ScalarConstant(p->input(1 - i)), 1.0 / std::sqrt(2.0))) return p->input(i);
    }
  }
  return nullptr;
}

// x when `leaves` are {x, 1 + erf(x/sqrt2), 0.5} in some order, else nullptr.
Value* GeluInput(const std::vector<Value*>& leaves) {
  if (leaves.size() != 3) return nullptr;
  for (int h = 0; h < 3; ++h) {
    if (!Near(ScalarConstant(leaves[h]), 0.5)) continue;
    for (int a = 0; a < 3; ++a) {
      if (a == h) continue;
      Value* x = leaves[3 - h - a];
      Node* add = OnlyUseProducer(leaves[a]);
      if (!IsOp(add, "Add")) continue;
      for (int e = 0; e < 2; ++e) {
        Node* erf = OnlyUseProducer(add->input(e));
        if (IsOp(erf, "Erf") && Near(ScalarConstant(add->input(1 - e)), 1.0) &&
            ErfArgument(erf) == x) {
          return x;
        }
      }
    }
  }
  return nullptr;
}

// Erases `root` and, recursively, the producers and constants only it kept alive.
void EraseDeadTree(Graph& graph, Node* root) {
  std::vector<Node*> work = {root};
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    bool dead = true;
    for (Value* v : n->outputs()) dead = dead && v->uses().empty() && !v->is_graph_output();
    if (!dead) continue;
    std::vector<Value*> inputs = n->inputs();
    graph.EraseNode(n);
    for (Value* in : inputs) {
      if (in == nullptr || !in->uses().empty() || in->is_graph_output()) continue;
      if (in->producer() != nullptr) {
        work.push_back(in->producer());
      } else if (in->role() == ValueRole::kConstant) {
        graph.EraseGraphValue(in);
      }
    }
  }
}

}  // namespace

StatusOr<bool> FuseGelu::Run(Graph& graph) {
  const OpDef* gelu = FindOp("", "Gelu");
  if (gelu == nullptr) return Internal("fuse-gelu: the op table has no Gelu");
  bool changed = false;
  for (Node* root : graph.NodeList()) {
    if (!IsOp(root, "Mul") || root->num_outputs() != 1) continue;
    std::vector<Value*> leaves;
    MulLeaves(root, &leaves, 0);
    Value* x = GeluInput(leaves);
    if (x == nullptr || x->type() != root->output(0)->type()) continue;
    Value* y = root->output(0);
    const std::string name = y->name();
    graph.RenameValue(y, graph.UniqueName(name + ".unfused"));
    std::map<std::string, Attribute> attrs;
    attrs["approximate"] = Attribute("none");
    Node* g =
        graph.AddNode("Gelu", "", {x}, {{name, y->type()}}, std::move(attrs), root->name(), root);
    g->set_version(gelu->canonical);
    graph.ReplaceAllUsesWith(y, g->output(0));
    EraseDeadTree(graph, root);
    ++stats_["gelu-fused"];
    changed = true;
  }
  if (changed) graph.memory_plan.reset();
  return changed;
}

}  // namespace a8

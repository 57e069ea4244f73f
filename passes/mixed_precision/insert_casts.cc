// insert-casts: retypes results and reads operands through one shared Cast per (value, type).
#include "passes/mixed_precision/insert_casts.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_table.h"
#include "passes/mixed_precision/assign_precision.h"
#include "passes/mixed_precision/pin_fp32.h"
#include "passes/mixed_precision/policy.h"

namespace a8 {
namespace {

bool IsMixedFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

class CastInserter {
 public:
  CastInserter(Graph& g, std::map<std::string, int64_t>& stats) : graph_(g), stats_(stats) {}

  // The value `v` in type `t`: `v` itself, or the one Cast of it to `t`, made before `consumer`
  // (the first consumer that asks, in program order) or at the start of the step for
  // graph-level values.
  Value* As(Value* v, DType t, Node* consumer) {
    if (v->dtype() == t) return v;
    auto key = std::make_pair(v, t);
    if (auto it = casts_.find(key); it != casts_.end()) return it->second;
    Node* before = consumer;
    if (v->producer() == nullptr) before = *graph_.nodes().begin();
    Value* c =
        MakeCast(v, t, graph_.UniqueName(v->name() + "." + std::string(DTypeName(t))), before);
    casts_[key] = c;
    return c;
  }

  // Keeps graph output / update value `v` (retyped from `old_type`) in its old type and name.
  void KeepInterface(Value* v, DType old_type) {
    const std::string name = v->name();
    const std::vector<Use> uses = v->uses();
    Node* before = nullptr;
    for (Node* n : graph_.nodes()) {
      for (const Use& u : uses) before = before == nullptr && u.node == n ? n : before;
      if (before != nullptr) break;
    }
    graph_.RenameValue(v, graph_.UniqueName(name + "." + std::string(DTypeName(v->dtype()))));
    Value* c = MakeCast(v, old_type, graph_.UniqueName(name + ".tmp"), before);
    graph_.ReplaceAllUsesWith(v, c);
    for (const Use& u : uses) u.node->SetInput(u.operand, v);
    c->producer()->SetInput(0, v);
    graph_.RenameValue(c, name);
    c->producer()->set_name(name);
    casts_[std::make_pair(v, old_type)] = c;
  }

 private:
  Value* MakeCast(Value* v, DType t, const std::string& name, Node* before) {
    std::map<std::string, Attribute> attrs;
    attrs["to"] = Attribute(static_cast<int64_t>(DTypeToOnnx(t)));
    Node* n = graph_.AddNode("Cast", "", {v}, {{name, TensorType{t, v->dims()}}}, std::move(attrs),
                             name, before);
    n->set_version(FindOp("", "Cast")->canonical);
    ++stats_["casts-inserted"];
    return n->output(0);
  }

  Graph& graph_;
  std::map<std::string, int64_t>& stats_;
  std::map<std::pair<Value*, DType>, Value*> casts_;
};

}  // namespace

StatusOr<bool> InsertCasts::Run(Graph& graph) {
  const std::vector<Node*> nodes = graph.NodeList();
  std::vector<std::pair<Node*, DType>> assigned;
  for (Node* n : nodes) {
    if (std::optional<DType> t = AssignedPrecision(*n)) assigned.emplace_back(n, *t);
  }
  if (assigned.empty()) return false;
  CastInserter casts(graph, stats_);
  bool changed = false;

  // Results first, so that operands see their producers' final types.
  std::map<const Value*, DType> declared;  // the types before this pass, of what it retypes
  std::vector<std::pair<Value*, DType>> interface;
  // The type of result `i` / operand `i` of `n`: its edge type (pin-fp32) or its precision.
  auto result_type = [](const Node& n, DType t, int i) {
    std::optional<DType> e = EdgePrecision(n);
    return e && PrecisionPolicy::IsEdgeResult(n, i) ? *e : t;
  };
  auto operand_type = [](const Node& n, DType t, int i) {
    std::optional<DType> e = EdgePrecision(n);
    return e && PrecisionPolicy::IsEdgeOperand(n, i) ? *e : t;
  };
  for (auto& [n, node_type] : assigned) {
    for (int i = 0; i < n->num_outputs(); ++i) {
      Value* v = n->output(i);
      const DType t = result_type(*n, node_type, i);
      if (!IsMixedFloat(v->dtype()) || v->dtype() == t) continue;
      if (v->is_graph_output()) interface.emplace_back(v, v->dtype());
      declared.emplace(v, v->dtype());
      v->set_type(TensorType{t, v->dims()});
      ++stats_["values-retyped"];
      changed = true;
    }
  }
  for (auto& [v, old_type] : interface) casts.KeepInterface(v, old_type);

  for (auto& [n, node_type] : assigned) {
    for (int i = 0; i < n->num_inputs(); ++i) {
      Value* v = n->input(i);
      const DType t = operand_type(*n, node_type, i);
      if (v == nullptr || !IsMixedFloat(v->dtype()) || v->dtype() == t) continue;
      if (PrecisionPolicy::ReadsAnyFloat(*n, i)) continue;
      n->SetInput(i, casts.As(v, t, n));
      changed = true;
    }
  }
  // A node with no precision of its own (Cast, CastLike, Shape, ...) reads what it read before:
  // CastLike's result type is its second operand's, so a retyped operand would change what the
  // node computes. fold-casts removes the widening round trips this makes.
  for (Node* n : nodes) {
    if (AssignedPrecision(*n)) continue;
    for (int i = 0; i < n->num_inputs(); ++i) {
      Value* v = n->input(i);
      auto it = v == nullptr ? declared.end() : declared.find(v);
      if (it == declared.end() || v->dtype() == it->second) continue;
      n->SetInput(i, casts.As(v, it->second, n));
    }
  }
  if (changed) graph.memory_plan.reset();
  return changed;
}

}  // namespace a8

// insert-casts: retypes results and reads operands through one shared Cast per (value, type).
#include "passes/mixed_precision/insert_casts.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_table.h"
#include "kernels/common/float16.h"
#include "passes/mixed_precision/assign_precision.h"
#include "passes/mixed_precision/pin_fp32.h"
#include "passes/mixed_precision/policy.h"

namespace a8 {
namespace {

// `data` (f32) rounded to `t` (f16 or bf16) as the Cast kernel rounds.
TensorDataPtr RoundTo(const TensorData& data, DType t) {
  auto out = TensorData::Make(TensorType{t, data.type.dims});
  const float* src = data.data<float>();
  uint16_t* dst = out->mutable_data<uint16_t>();
  for (int64_t i = 0; i < data.num_elements(); ++i) {
    dst[i] = t == DType::kF16 ? FloatToHalfBits(src[i]) : FloatToBFloat16Bits(src[i]);
  }
  return out;
}

// Program order without walking the node list: every node the pass started with has its
// position, and every cast it makes sits in the run of casts right before one of them (its
// anchor), or at the end of the list. So an original node comes before a cast exactly when it
// comes before the cast's anchor.
class CastOrder {
 public:
  static constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

  // Both tables are indexed by Node::id() (hash maps keyed by node grew faster than the graph).
  CastOrder(const Graph& g, const std::vector<Node*>& nodes) : position_(g.node_id_bound(), -1) {
    for (size_t i = 0; i < nodes.size(); ++i) position_[nodes[i]->id()] = static_cast<int64_t>(i);
  }

  // The position of an original node; -1 for a node the pass made.
  int64_t Position(const Node* n) const {
    return static_cast<size_t>(n->id()) < position_.size() ? position_[n->id()] : -1;
  }
  // Records that `cast` now sits right before original node `before` (nullptr: at the end).
  void Place(const Node* cast, const Node* before) {
    if (static_cast<size_t>(cast->id()) >= anchor_.size()) anchor_.resize(cast->id() + 1, kNone);
    anchor_[cast->id()] = before == nullptr ? kEnd : Position(before);
  }
  // Whether original node `a` comes before `cast` in the node order.
  bool Precedes(const Node* a, const Node* cast) const {
    const int64_t anchor =
        static_cast<size_t>(cast->id()) < anchor_.size() ? anchor_[cast->id()] : kNone;
    return anchor != kNone && Position(a) >= 0 && Position(a) < anchor;
  }

 private:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::min();  // not placed
  std::vector<int64_t> position_;
  std::vector<int64_t> anchor_;
};

class CastInserter {
 public:
  CastInserter(Graph& g, const std::vector<Node*>& nodes, std::map<std::string, int64_t>& stats)
      : graph_(g),
        first_(nodes.empty() ? nullptr : nodes.front()),
        order_(g, nodes),
        stats_(stats) {}

  // The value `v` in type `t`: `v` itself, or the one Cast of it to `t`, made before `consumer`
  // (the first consumer that asks, in program order) or at the start of the step for
  // graph-level values.
  Value* As(Value* v, DType t, Node* consumer) {
    if (v->dtype() == t) return v;
    auto key = std::make_pair(v, t);
    if (auto it = casts_.find(key); it != casts_.end()) {
      // A cast made for a later consumer (the operands of nodes without a precision are cast
      // after those of the others): it moves up to this one, still after v's producer.
      Node* cast = it->second->producer();
      if (cast != nullptr && cast->op() == "Cast" && order_.Precedes(consumer, cast)) {
        graph_.MoveNode(cast, consumer);
        order_.Place(cast, consumer);
      }
      return it->second;
    }
    const std::string name = graph_.UniqueName(v->name() + "." + std::string(DTypeName(t)));
    // A constant is rounded here, once, instead of by a Cast every step.
    if (v->role() == ValueRole::kConstant && v->data() && v->dtype() == DType::kF32 &&
        (t == DType::kF16 || t == DType::kBF16)) {
      Value* c = graph_.AddConstant(name, RoundTo(*v->data(), t));
      ++stats_["constants-rounded"];
      casts_[key] = c;
      return c;
    }
    // At the start of the step: before the first node, which is the first original node or a
    // cast in the run before it.
    Node* before = consumer;
    Node* anchor = consumer;
    if (v->producer() == nullptr) {
      before = *graph_.nodes().begin();
      anchor = first_;
    }
    Value* c = MakeCast(v, t, name, before, anchor);
    casts_[key] = c;
    return c;
  }

  // Keeps graph output / update value `v` (retyped from `old_type`) in its old type and name.
  void KeepInterface(Value* v, DType old_type) {
    const std::string name = v->name();
    const std::vector<Use> uses = v->uses();
    // Before its first reader in program order (all readers are original nodes: this runs
    // before any operand is cast), or at the end.
    Node* before = nullptr;
    int64_t first = CastOrder::kEnd;
    for (const Use& u : uses) {
      const int64_t p = order_.Position(u.node);
      if (p >= 0 && p < first) {
        first = p;
        before = u.node;
      }
    }
    graph_.RenameValue(v, graph_.UniqueName(name + "." + std::string(DTypeName(v->dtype()))));
    Value* c = MakeCast(v, old_type, graph_.UniqueName(name + ".tmp"), before, before);
    graph_.ReplaceAllUsesWith(v, c);
    for (const Use& u : uses) u.node->SetInput(u.operand, v);
    c->producer()->SetInput(0, v);
    graph_.RenameValue(c, name);
    c->producer()->set_name(name);
    casts_[std::make_pair(v, old_type)] = c;
  }

 private:
  // A Cast of `v` to `t` placed before `before` (nullptr: at the end), in the run of casts
  // right before original node `anchor`.
  Value* MakeCast(Value* v, DType t, const std::string& name, Node* before, const Node* anchor) {
    std::map<std::string, Attribute> attrs;
    attrs["to"] = Attribute(static_cast<int64_t>(DTypeToOnnx(t)));
    Node* n = graph_.AddNode("Cast", "", {v}, {{name, TensorType{t, v->dims()}}}, std::move(attrs),
                             name, before);
    n->set_version(FindOp("", "Cast")->canonical);
    order_.Place(n, anchor);
    ++stats_["casts-inserted"];
    return n->output(0);
  }

  Graph& graph_;
  Node* first_;
  CastOrder order_;
  std::map<std::string, int64_t>& stats_;
  std::map<std::pair<Value*, DType>, Value*> casts_;
};

// fp16 mode (PRECISION.md): a parameter read only through its one Cast to the low type becomes
// - with a state update (training): an FP16 working copy `%w.f16`, state initialised to the
//   rounded initial value, that the step rewrites right after the optimizer from the new master
//   (`%w.f16.next = Cast(%w.next)`, `update %w.f16 = %w.f16.next`): the weight cast moves from
//   the start of the next step to the end of this one, and a skipped step (found_inf: the
//   optimizer passes the master through) rewrites the same bits;
// - without one (inference): a low-type parameter `%w.f16` in place of the FP32 one.
void KeepLowWorkingCopies(Graph& graph, std::map<std::string, int64_t>& stats) {
  std::map<const Value*, Value*> next;
  for (const Graph::StateUpdate& u : graph.updates()) next[u.target] = u.value;
  for (Value* w : graph.parameters()) {
    if (w->dtype() != DType::kF32 || !w->data() || w->uses().empty()) continue;
    Node* cast = nullptr;
    for (const Use& u : w->uses()) {
      // Besides the one Cast, only the optimizer may read the master.
      if (u.node->op() == "Cast" && u.node->domain().empty() && cast == nullptr) {
        cast = u.node;
      } else if (u.node->domain() != "a8" || next.count(w) == 0) {
        cast = nullptr;
        break;
      }
    }
    if (cast == nullptr) continue;
    Value* low = cast->output(0);
    const DType t = low->dtype();
    if (t != DType::kF16 && t != DType::kBF16) continue;
    const std::string name = low->name();
    graph.RenameValue(low, graph.UniqueName(name + ".cast"));
    TensorDataPtr data = RoundTo(*w->data(), t);
    auto it = next.find(w);
    Value* copy =
        it == next.end() ? graph.AddParameter(name, data) : graph.AddState(name, std::move(data));
    graph.ReplaceAllUsesWith(low, copy);
    graph.EraseNode(cast);
    if (it == next.end()) {
      graph.EraseGraphValue(w);
      ++stats["params-lowered"];
      continue;
    }
    std::map<std::string, Attribute> attrs;
    attrs["to"] = Attribute(static_cast<int64_t>(DTypeToOnnx(t)));
    Node* after = graph.AddNode("Cast", "", {it->second},
                                {{graph.UniqueName(name + ".next"), TensorType{t, w->dims()}}},
                                std::move(attrs), graph.UniqueName(name + ".next"));
    after->set_version(FindOp("", "Cast")->canonical);
    graph.AddUpdate(copy, after->output(0));
    ++stats["working-copies"];
  }
}

}  // namespace

StatusOr<bool> InsertCasts::Run(Graph& graph) {
  const std::vector<Node*> nodes = graph.NodeList();
  std::vector<std::pair<Node*, DType>> assigned;
  for (Node* n : nodes) {
    if (std::optional<DType> t = AssignedPrecision(*n)) assigned.emplace_back(n, *t);
  }
  if (assigned.empty()) return false;
  CastInserter casts(graph, nodes, stats_);
  bool changed = false;

  // Results first, so that operands see their producers' final types.
  std::map<const Value*, DType> declared;  // the types before this pass, of what it retypes
  std::vector<std::pair<Value*, DType>> interface;
  // The type of result `i` / operand `i` of `n`: its edge type (pin-fp32) or its precision.
  auto result_type = [](const Node& n, DType t, int i) {
    if (PrecisionPolicy::KeepsF32Result(n, i)) return DType::kF32;
    std::optional<DType> e = EdgePrecision(n);
    return e && PrecisionPolicy::IsEdgeResult(n, i) ? *e : t;
  };
  auto operand_type = [](const Node& n, DType t, int i) {
    if (PrecisionPolicy::KeepsF32Operand(n, i)) return DType::kF32;
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
  if (config().mode() == PrecisionMode::kFp16) {
    KeepLowWorkingCopies(graph, stats_);
  }
  // Constants now read only through their rounded copies.
  for (Value* v : graph.graph_values()) {
    if (v->role() == ValueRole::kConstant && v->uses().empty() && !v->is_graph_output()) {
      graph.EraseGraphValue(v);
    }
  }
  if (changed) graph.memory_plan.reset();
  return changed;
}

}  // namespace a8

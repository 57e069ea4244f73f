// assign-precision: policy decisions, gradient nodes after their forward node, follow painting.
#include "passes/mixed_precision/assign_precision.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "passes/mixed_precision/policy.h"

namespace a8 {
namespace {

// Whether the node reads or writes f32/f16/bf16 and nothing in f64 (f64 graphs are the gradient
// checks' oracle: their types must not move).
bool Eligible(const Node& n) {
  bool any = false;
  auto look = [&](const Value* v) {
    if (v == nullptr) return true;
    if (v->dtype() == DType::kF64) return false;
    any = any || IsMixedFloat(v->dtype());
    return true;
  };
  for (const Value* v : n.inputs()) {
    if (!look(v)) return false;
  }
  for (const Value* v : n.outputs()) {
    if (!look(v)) return false;
  }
  return any;
}

// The widest of two float types; f16 and bf16 do not contain each other, so they meet in f32.
DType Wider(DType a, DType b) { return a == b ? a : DType::kF32; }

struct Choice {
  PrecisionDecision::Kind kind = PrecisionDecision::kF32;
  std::string why;
  bool from_defaults = false;
  const Node* forward = nullptr;  // a gradient node takes this node's final choice
  DType type = DType::kF32;
  // A normalization kept FP32 by the defaults reads X and writes Y in `edge`, the type X arrives
  // in (pin-fp32 applies the same rule).
  bool edged = false;
  DType edge = DType::kF32;
};

}  // namespace

std::optional<DType> DTypeAttribute(const Node& node, const std::string& name) {
  const Attribute* a = node.attr(name);
  if (a == nullptr || a->kind() != AttrKind::kString) return std::nullopt;
  auto t = ParseDTypeName(a->s());
  if (!t.ok()) return std::nullopt;
  return *t;
}

std::optional<DType> AssignedPrecision(const Node& node) {
  return DTypeAttribute(node, "a8.precision");
}

StatusOr<bool> AssignPrecision::Run(Graph& graph) {
  if (!config().mixed()) return false;
  A8_ASSIGN_OR_RETURN(PrecisionPolicy policy, PrecisionPolicy::Create(*config().precision));
  const DType low = policy.low_type();
  const std::vector<Node*> nodes = graph.NodeList();
  std::unordered_map<std::string, const Node*> by_name;
  for (const Node* n : nodes) by_name.emplace(n->name(), n);
  // Indexed by Node::id() (a hash map keyed by node grew faster than the graph); `has` says
  // which nodes have a choice.
  std::vector<Choice> chosen(graph.node_id_bound());
  std::vector<char> has(graph.node_id_bound(), 0);
  auto find = [&](const Node* n) -> Choice* { return has[n->id()] ? &chosen[n->id()] : nullptr; };

  // The policy's decisions, once; a gradient node defers to its forward node.
  for (const Node* n : nodes) {
    if (!Eligible(*n)) continue;
    A8_ASSIGN_OR_RETURN(PrecisionDecision d, policy.Decide(*n));
    if (d.kind == PrecisionDecision::kNone) continue;
    Choice c{d.kind, d.why, d.from_defaults};
    const std::string fwd = GradientForwardName(n->name());
    if (!fwd.empty() && d.from_defaults) {
      auto it = by_name.find(fwd);
      // A reduction inside a gradient stays FP32 unless the user moved its forward node.
      if (it != by_name.end() && find(it->second) != nullptr &&
          (d.kind != PrecisionDecision::kF32 || !find(it->second)->from_defaults)) {
        c.forward = it->second;
      }
    }
    c.type = d.kind == PrecisionDecision::kLow ? low : DType::kF32;
    c.edged = d.kind == PrecisionDecision::kF32 && d.from_defaults && n->domain().empty() &&
              PrecisionPolicy::HasLowEdges(*n);
    chosen[n->id()] = c;
    has[n->id()] = 1;
  }
  std::vector<const Node*> with_choice;  // in program order
  for (const Node* n : nodes)
    if (has[n->id()]) with_choice.push_back(n);

  // The type a value votes with: its producer's; graph-level values do not vote.
  auto vote = [&](const Value* v) -> std::optional<DType> {
    if (v == nullptr || !IsMixedFloat(v->dtype()) || v->producer() == nullptr) return std::nullopt;
    const Choice* c = find(v->producer());
    if (c == nullptr) return std::nullopt;
    if (c->edged && v == v->producer()->output(0)) return c->edge;
    return c->type;
  };
  // The type in which `u.node` reads its operand.
  auto reads_in = [](const Choice& c, const Use& u) {
    return c.edged && PrecisionPolicy::IsEdgeOperand(*u.node, u.operand) ? c.edge : c.type;
  };
  auto is_follow = [](const Choice& c) {
    return c.forward == nullptr && c.kind == PrecisionDecision::kFollow;
  };

  // Painting. Gradient nodes read their forward node's type and follow nodes in the backward
  // graph (the sums of fan-out) read the gradients' types, so the sweeps repeat until nothing
  // moves (twice on a training graph; the bound only guards against a cycle of widenings).
  for (int round = 0; round < 8; ++round) {
    std::vector<DType> before, before_edge;
    for (const Node* n : with_choice) {
      before.push_back(chosen[n->id()].type);
      before_edge.push_back(chosen[n->id()].edge);
    }
    // Forward: a follow node takes the widest type of what feeds it; no vote means FP32.
    for (const Node* n : with_choice) {
      Choice& c = chosen[n->id()];
      if (c.forward != nullptr) {
        c.type = chosen[c.forward->id()].type;
      } else if (c.edged) {
        c.edge = vote(n->input(0)).value_or(DType::kF32);
      } else if (is_follow(c)) {
        std::optional<DType> widest;
        for (const Value* v : n->inputs()) {
          if (std::optional<DType> t = vote(v)) widest = widest ? Wider(*widest, *t) : *t;
        }
        c.type = widest.value_or(DType::kF32);
      }
    }
    // Backward: a low follow node that feeds only FP32 goes FP32 (the cast moves up to the low
    // op that produced its input: no more casts, more FP32 work). Gradient nodes do not vote:
    // they take their forward node's type whatever their operands are.
    for (auto it = with_choice.rbegin(); it != with_choice.rend(); ++it) {
      Choice& self = chosen[(*it)->id()];
      if (!is_follow(self) || self.type == DType::kF32) continue;
      bool any = false, all_f32 = true;
      for (const Value* v : (*it)->outputs()) {
        if (!IsMixedFloat(v->dtype())) continue;
        if (v->is_graph_output()) any = true;
        for (const Use& u : v->uses()) {
          const Choice* c = find(u.node);
          if (c == nullptr || c->forward != nullptr) continue;
          if (PrecisionPolicy::ReadsAnyFloat(*u.node, u.operand)) continue;
          any = true;
          all_f32 = all_f32 && reads_in(*c, u) == DType::kF32;
        }
      }
      if (any && all_f32) self.type = DType::kF32;
    }
    for (const Node* n : with_choice) {
      Choice& c = chosen[n->id()];
      if (c.forward != nullptr) c.type = chosen[c.forward->id()].type;
    }
    bool moved = false;
    for (size_t k = 0; k < with_choice.size(); ++k) {
      const Choice& c = chosen[with_choice[k]->id()];
      moved = moved || before[k] != c.type || (c.edged && c.edge != before_edge[k]);
    }
    if (!moved) break;
  }
  for (const Node* n : with_choice) {
    Choice& c = chosen[n->id()];
    if (c.forward != nullptr) c.why = chosen[c.forward->id()].why;
  }

  bool changed = false;
  for (Node* n : nodes) {
    if (!has[n->id()]) continue;
    const Choice& c = chosen[n->id()];
    const std::string type(DTypeName(c.type));
    if (n->GetString("a8.precision", "") == type && n->GetString("a8.why", "") == c.why) {
      continue;
    }
    n->SetAttr("a8.precision", type);
    n->SetAttr("a8.why", c.why);
    ++stats_[c.type == DType::kF32 ? "nodes-f32" : "nodes-low"];
    changed = true;
  }
  return changed;
}

}  // namespace a8

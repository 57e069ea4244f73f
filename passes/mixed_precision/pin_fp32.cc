// pin-fp32: pinned ops stay FP32; normalizations read and write the low type at their edges.
#include "passes/mixed_precision/pin_fp32.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "passes/mixed_precision/assign_precision.h"
#include "passes/mixed_precision/policy.h"

namespace a8 {
namespace {

// The type `v` arrives in once insert-casts has applied the decisions: its producer's edge type
// when it is that producer's edge result, else its producer's precision; graph-level values and
// results of nodes without a precision keep nothing low (assign-precision's votes alike).
std::optional<DType> ArrivesIn(const Value* v) {
  const Node* p = v == nullptr ? nullptr : v->producer();
  if (p == nullptr) return std::nullopt;
  if (std::optional<DType> e = EdgePrecision(*p); e && v == p->output(0)) return e;
  return AssignedPrecision(*p);
}

bool FromDefaults(const Node& n) {
  const std::string why = n.GetString("a8.why", "");
  return why == "deny" || why == "pinned";
}

}  // namespace

std::optional<DType> EdgePrecision(const Node& node) { return DTypeAttribute(node, "a8.edge"); }

StatusOr<bool> PinFp32::Run(Graph& graph) {
  if (!config().mixed()) return false;
  const std::vector<Node*> nodes = graph.NodeList();
  for (const Node* n : nodes) {
    std::optional<DType> t = AssignedPrecision(*n);
    if (t && *t != DType::kF32 && DefaultOpClass(n->qualified_op()) == OpPrecisionClass::kPinned) {
      return Internal("{}: op {} is pinned to FP32 but assign-precision chose {}", n->Where(),
                      n->qualified_op(), DTypeName(*t));
    }
  }
  std::unordered_map<std::string, std::string> forward_edges;
  bool changed = false;
  auto set_edge = [&](Node* n, const std::string& edge) {
    if (n->GetString("a8.edge", "") == edge) return;
    if (edge.empty()) {
      n->RemoveAttr("a8.edge");
    } else {
      n->SetAttr("a8.edge", edge);
      ++stats_["edges-low"];
    }
    changed = true;
  };
  // Forward normalizations, in program order so that a normalization feeding another sees its
  // producer's edge.
  for (Node* n : nodes) {
    if (!n->domain().empty() || !PrecisionPolicy::HasLowEdges(*n)) continue;
    if (AssignedPrecision(*n) != DType::kF32 || !FromDefaults(*n)) continue;
    std::optional<DType> in = ArrivesIn(n->input(0));
    const std::string edge = in && *in != DType::kF32 ? std::string(DTypeName(*in)) : "";
    set_edge(n, edge);
    if (!edge.empty()) forward_edges[n->name()] = edge;
  }
  for (Node* n : nodes) {
    if (n->domain() != "a8" || !PrecisionPolicy::HasLowEdges(*n)) continue;
    if (AssignedPrecision(*n) != DType::kF32) continue;
    auto it = forward_edges.find(GradientForwardName(n->name()));
    set_edge(n, it == forward_edges.end() ? "" : it->second);
  }
  return changed;
}

}  // namespace a8

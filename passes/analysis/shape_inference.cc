#include "passes/analysis/shape_inference.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "passes/cleanup/constant_folding.h"
#include "passes/cleanup/cse.h"

namespace a8 {
namespace {

Status AtNode(const Node& node, const Status& s) {
  if (s.ok() || s.message().rfind(node.Where(), 0) == 0) return s;
  return s.WithContext(node.Where());
}

// Values that compute shape-like data: whose every use is a shape-like operand or an input of
// a foldable node whose outputs are integer/bool or themselves such values, or that reach a
// shape-like operand through foldable nodes at all (a window's length, Cast to float, read both
// by Range's limit and by the window's arithmetic: the shape needs it folded). Computed backward.
std::set<const Value*> ShapeFeedingValues(const Graph& graph) {
  std::set<const Value*> feeding;
  auto is_feeding = [&](const Value* v) {
    if (v->uses().empty()) return false;
    bool every = !v->is_graph_output(), some = false;
    for (const Use& u : v->uses()) {
      if (IsShapeOperand(*u.node, u.operand)) {
        some = true;
        continue;
      }
      if (!IsFoldableOp(*u.node)) {
        every = false;
        continue;
      }
      for (const Value* out : u.node->outputs()) {
        if (feeding.count(out)) some = true;
        if (IsFloat(out->dtype()) && !feeding.count(out)) every = false;
      }
    }
    return every || some;
  };
  std::vector<Node*> nodes = graph.NodeList();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    for (const Value* out : (*it)->outputs()) {
      if (is_feeding(out)) feeding.insert(out);
    }
  }
  return feeding;
}

bool ShouldFold(const Node& node, const std::set<const Value*>& feeding) {
  if (!IsFoldableOp(node) || IsRandomOp(node) || node.num_outputs() == 0) return false;
  const bool type_only = node.op() == "Shape" || node.op() == "Size";
  if (!type_only) {
    for (const Value* v : node.inputs()) {
      if (v && !v->is_constant()) return false;
    }
  }
  for (const Value* out : node.outputs()) {
    if (IsFloat(out->dtype()) && !feeding.count(out)) return false;
  }
  return true;
}

// Graph outputs against the types the model declared (a -1 dim is dynamic there).
Status CheckDeclaredOutputs(const Graph& graph) {
  for (const Value* out : graph.outputs()) {
    auto it = graph.declared_output_types.find(out->name());
    if (it == graph.declared_output_types.end()) continue;
    const TensorType& declared = it->second;
    const TensorType& inferred = out->type();
    bool ok = declared.dtype == inferred.dtype && declared.rank() == inferred.rank();
    for (int64_t d = 0; ok && d < declared.rank(); ++d) {
      ok = declared.dims[d] < 0 || declared.dims[d] == inferred.dims[d];
    }
    if (!ok) {
      return InvalidInput("graph output '{}': the model declares {}, but the graph computes {}",
                          out->name(), declared.ToString(), inferred.ToString());
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<bool> ShapeInference::Run(Graph& graph) {
  bool changed = false;
  const std::set<const Value*> feeding = ShapeFeedingValues(graph);
  for (Node* node : graph.NodeList()) {
    const OpDef* def = FindOp(node->domain(), node->op());
    if (!def) return InvalidInput("{}: unknown op", node->Where());
    A8_RETURN_IF_ERROR(CheckNodeAgainstOpDef(*node, *def));
    if (!def->infer)
      return Internal("{}: the op table has no shape rule for this op", node->Where());
    std::vector<TensorType> types;
    A8_RETURN_IF_ERROR(AtNode(*node, def->infer(*node, &types)));
    if (static_cast<int>(types.size()) < node->num_outputs()) {
      return Internal("{}: the shape rule gave {} types for {} outputs", node->Where(),
                      types.size(), node->num_outputs());
    }
    for (int i = 0; i < node->num_outputs(); ++i) {
      Value* out = node->output(i);
      A8_RETURN_IF_ERROR(AtNode(*node, types[i].NumElements().status()));
      if (out->type() != types[i]) {
        out->set_type(types[i]);
        changed = true;
        stats_["types-changed"]++;
      }
    }
    if (!ShouldFold(*node, feeding)) continue;
    StatusOr<std::vector<TensorDataPtr>> data = EvaluateNode(*node, ConstantInputs(*node));
    if (!data.ok()) {
      if (data.status().code() == StatusCode::kUnsupported) continue;
      return AtNode(*node, data.status());
    }
    A8_RETURN_IF_ERROR(ReplaceWithConstants(graph, node, *data).status());
    stats_["nodes-folded"]++;
    changed = true;
  }
  A8_RETURN_IF_ERROR(CheckDeclaredOutputs(graph));
  return changed;
}

}  // namespace a8

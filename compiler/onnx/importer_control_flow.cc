// ONNX -> IR: If, Loop and Scan nodes replaced in the importer's node list by the nodes that
// unroll them (import_control_flow.h).
#include "compiler/ir/op_table.h"
#include "compiler/onnx/importer_internal.h"

namespace a8::onnx_import {

namespace {

// The graph inputs that `v` is computed from (through any nodes), in the order first met.
std::vector<const Value*> GraphInputsFeeding(const Value* v) {
  std::vector<const Value*> found, stack = {v};
  std::set<const Value*> seen;
  while (!stack.empty()) {
    const Value* x = stack.back();
    stack.pop_back();
    if (x == nullptr || !seen.insert(x).second) continue;
    if (x->role() == ValueRole::kInput) found.push_back(x);
    if (x->producer() == nullptr) continue;
    const std::vector<Value*>& ins = x->producer()->inputs();
    for (auto it = ins.rbegin(); it != ins.rend(); ++it) stack.push_back(*it);
  }
  return found;
}

}  // namespace

Status Importer::ExpandControlFlowNode(int index) {
  const onnx::NodeProto& n = *nodes_[index];
  const std::string where = NodeWhere(node_names_[index], NormalizeDomain(n.domain()), n.op_type());
  if (!g_->opsets.count("")) {
    return InvalidInput("{}: domain '' is not in the model's opset_import", where);
  }
  ControlFlowContext ctx;
  ctx.where = where;
  ctx.name = node_names_[index];
  ctx.opset = g_->opsets.at("");
  ctx.constant = [&](const std::string& name, const std::string& field) -> StatusOr<TensorDataPtr> {
    Value* v = g_->FindValue(name);
    if (v == nullptr) {
      return InvalidInput("{}: {} '{}' is not produced by any node, graph input or initializer",
                          where, field, name);
    }
    if (v->data() != nullptr) return v->data();
    if (opts_.fold_value) {
      StatusOr<TensorDataPtr> folded = opts_.fold_value(*g_, v);
      if (folded.ok() || folded.status().code() != StatusCode::kUnsupported) return folded;
    }
    // A graph input can be frozen from the command line; say how.
    std::vector<const Value*> inputs = GraphInputsFeeding(v);
    const std::string hint = inputs.empty()
                                 ? std::string()
                                 : fmt::format("; freeze graph input '{}' with --bind={}=FILE.npy",
                                               inputs[0]->name(), inputs[0]->name());
    return Unsupported(
        "{}: {} '{}' is {}; a800c unrolls control flow only on compile-time values{}", where, field,
        name, v->role() == ValueRole::kInput ? "a graph input" : "computed at run time", hint);
  };
  ctx.dims = [&](const std::string& name) -> std::optional<std::vector<int64_t>> {
    Value* v = g_->FindValue(name);
    if (v == nullptr) return std::nullopt;
    if (std::optional<std::vector<int64_t>> dims = KnownDims(v, index)) return dims;
    const OpDef* shape_op = FindOp("", "Shape");
    if (!opts_.fold_value || shape_op == nullptr) return std::nullopt;
    // a800c's own shape rules (onnx's inference may not know the model's opset): Shape(v),
    // folded, on a node made for the question and erased after it.
    Node* shape = g_->AddNode("Shape", "", {v}, {{FreshName(name + ".dims"), TensorType{}}}, {},
                              ctx.fresh_node_name(name + ".dims"));
    shape->set_version(shape_op->canonical);
    StatusOr<TensorDataPtr> dims = opts_.fold_value(*g_, shape->output(0));
    g_->EraseNode(shape);
    if (!dims.ok()) return std::nullopt;
    return (*dims)->ToInt64Vector();
  };
  ctx.fresh_name = [this](const std::string& base) {
    std::string name = FreshName(base);
    onnx_names_.insert(name);
    return name;
  };
  ctx.fresh_node_name = [this](const std::string& base) {
    std::string name = base;
    for (int i = 1; used_node_names_.count(name); ++i) name = fmt::format("{}.{}", base, i);
    used_node_names_.insert(name);
    return name;
  };
  A8_ASSIGN_OR_RETURN(std::vector<onnx::NodeProto> made, ExpandControlFlow(n, ctx));
  if (static_cast<int64_t>(made_nodes_.size() + made.size()) > 4 * kMaxUnrolledNodes) {
    return Unsupported("{}: the model's control flow unrolls into more than {} nodes", where,
                       4 * kMaxUnrolledNodes);
  }
  std::vector<const onnx::NodeProto*> replacement;
  std::vector<std::string> names;
  for (onnx::NodeProto& m : made) {
    made_nodes_.push_back(std::move(m));
    const onnx::NodeProto& stored = made_nodes_.back();
    replacement.push_back(&stored);
    names.push_back(stored.name());
    for (const std::string& out : stored.output()) {
      if (!out.empty()) producer_.emplace(out, index);
    }
  }
  nodes_.erase(nodes_.begin() + index);
  nodes_.insert(nodes_.begin() + index, replacement.begin(), replacement.end());
  node_names_.erase(node_names_.begin() + index);
  node_names_.insert(node_names_.begin() + index, names.begin(), names.end());
  // onnx's inference ran on the node list before it changed.
  onnx_ranks_upto_ = std::min(onnx_ranks_upto_, index);
  return Status::Ok();
}

void SubgraphReads(const onnx::NodeProto& n, std::set<std::string>* names) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    std::vector<const onnx::GraphProto*> graphs;
    if (a.has_g()) graphs.push_back(&a.g());
    for (const onnx::GraphProto& g : a.graphs()) graphs.push_back(&g);
    for (const onnx::GraphProto* g : graphs) {
      for (const onnx::NodeProto& inner : g->node()) {
        names->insert(inner.input().begin(), inner.input().end());
        SubgraphReads(inner, names);
      }
      for (const onnx::ValueInfoProto& out : g->output()) names->insert(out.name());
    }
  }
}

}  // namespace a8::onnx_import

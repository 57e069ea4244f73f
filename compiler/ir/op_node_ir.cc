// The IR's side of the op registry: an OpNode filled from a Node, and EmitTypedNode. In
// a8compiler, not in the registry (a8ops), which knows no graph.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/emit_typed_node.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/op_node.h"

namespace a8 {
namespace {

// The first graph input that `source` (a Value) is computed from, through any nodes; "" if none.
std::string GraphInputFeeding(const void* source) {
  std::vector<const Value*> stack = {static_cast<const Value*>(source)};
  std::set<const Value*> seen;
  while (!stack.empty()) {
    const Value* x = stack.back();
    stack.pop_back();
    if (x == nullptr || !seen.insert(x).second) continue;
    if (x->role() == ValueRole::kInput) return x->name();
    if (x->producer() == nullptr) continue;
    const std::vector<Value*>& ins = x->producer()->inputs();
    for (auto it = ins.rbegin(); it != ins.rend(); ++it) stack.push_back(*it);
  }
  return std::string();
}

}  // namespace

OpNode::OpNode(const Node& node)
    : domain_(node.domain()),
      op_(node.op()),
      name_(node.name()),
      version_(node.version()),
      attrs_(&node.attrs()) {
  owned_.reserve(node.num_inputs() + node.num_outputs());  // never grows: the pointers stay
  auto view = [&](const Value* v) -> const OpValue* {
    if (v == nullptr) return nullptr;
    owned_.emplace_back(&v->name(), &v->type(), &v->data(), v->role() == ValueRole::kInput, v,
                        &GraphInputFeeding);
    return &owned_.back();
  };
  inputs_.reserve(node.num_inputs());
  for (const Value* v : node.inputs()) inputs_.push_back(view(v));
  outputs_.reserve(node.num_outputs());
  for (const Value* v : node.outputs()) outputs_.push_back(view(v));
}

StatusOr<Node*> EmitTypedNode(Graph& g, const std::string& pass, const std::string& domain,
                              const std::string& op, std::vector<Value*> inputs,
                              const std::vector<std::string>& out_names,
                              std::map<std::string, Attribute> attrs, const std::string& node_name,
                              Node* before) {
  const OpDef* def = FindOp(domain, op);
  if (def == nullptr) return Internal("{}: op {}.{} is not in the op table", pass, domain, op);
  std::vector<std::pair<std::string, TensorType>> outs;
  for (const std::string& n : out_names) outs.emplace_back(n, TensorType{});
  Node* node = g.AddNode(op, domain, std::move(inputs), outs, std::move(attrs), node_name, before);
  node->set_version(def->canonical);
  A8_RETURN_IF_ERROR(CheckNodeAgainstOpDef(*node, *def));
  std::vector<TensorType> types;
  A8_RETURN_IF_ERROR(def->infer(*node, &types));
  for (size_t i = 0; i < types.size(); ++i) node->output(static_cast<int>(i))->set_type(types[i]);
  return node;
}

}  // namespace a8

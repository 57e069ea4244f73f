// fuse: GEMM epilogues and elementwise chains as single kernels (see fuse.h).
#include "passes/fusion/fuse.h"

#include <algorithm>
#include <set>

#include "compiler/ir/emit_typed_node.h"
#include "passes/fusion/fuse_internal.h"

namespace a8 {
namespace fusion {

std::vector<std::string> Provenance(const Node* n) {
  if (const Attribute* a = n->attr("a8.onnx_nodes");
      a != nullptr && a->kind() == AttrKind::kStrings) {
    return a->strings();
  }
  return {n->name()};
}

void AddFusedAnnotations(const std::vector<const Node*>& members, const Node* main,
                         std::map<std::string, Attribute>* attrs) {
  std::vector<std::string> names;
  for (const Node* m : members) {
    for (std::string& s : Provenance(m)) names.push_back(std::move(s));
  }
  (*attrs)["a8.onnx_nodes"] = Attribute(std::move(names));
  for (const char* key : {"a8.precision", "a8.why"}) {
    if (const Attribute* a = main->attr(key)) (*attrs)[key] = *a;
  }
}

std::vector<std::string> FreeNames(Graph& graph, const std::vector<Value*>& values) {
  std::vector<std::string> names;
  for (Value* v : values) {
    names.push_back(v->name());
    graph.RenameValue(v, graph.UniqueName(v->name() + ".unfused"));
  }
  return names;
}

void EraseMembers(Graph& graph, const std::vector<Node*>& members) {
  // Graph-level constants only (read before the erasures: members' own outputs go with them).
  std::set<Value*> constants;
  for (const Node* m : members) {
    for (Value* in : m->inputs()) {
      if (in != nullptr && in->producer() == nullptr && in->role() == ValueRole::kConstant) {
        constants.insert(in);
      }
    }
  }
  for (auto it = members.rbegin(); it != members.rend(); ++it) graph.EraseNode(*it);
  for (Value* c : constants) {
    if (c->uses().empty() && !c->is_graph_output()) graph.EraseGraphValue(c);
  }
}

Status EmitFused(Graph& graph, const char* op, std::vector<Value*> inputs,
                 std::map<std::string, Attribute> attrs, const Node* main, Node* insert_before,
                 const std::vector<Node*>& members, const std::vector<Value*>& outputs) {
  AddFusedAnnotations(std::vector<const Node*>(members.begin(), members.end()), main, &attrs);
  const std::vector<std::string> names = FreeNames(graph, outputs);
  A8_ASSIGN_OR_RETURN(Node * fused, EmitTypedNode(graph, "fuse", "a8", op, std::move(inputs), names,
                                                  std::move(attrs), main->name(), insert_before));
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* out = fused->output(static_cast<int>(i));
    if (out->type() != outputs[i]->type()) {
      return Internal("fuse: {}: a8.{}'s output {} is {}, expected {}", main->Where(), op, i,
                      out->type().ToString(), outputs[i]->type().ToString());
    }
    graph.ReplaceAllUsesWith(outputs[i], out);
  }
  EraseMembers(graph, members);
  return Status::Ok();
}

}  // namespace fusion

StatusOr<bool> Fuse::Run(Graph& graph) {
  A8_ASSIGN_OR_RETURN(const int gemms, fusion::FuseMatMulEpilogues(graph, &stats_));
  A8_ASSIGN_OR_RETURN(const int convs, fusion::FuseConvEpilogues(graph, &stats_));
  A8_ASSIGN_OR_RETURN(const int chains, fusion::FuseElementwiseChains(graph, &stats_));
  const bool changed = gemms + convs + chains > 0;
  if (changed) graph.memory_plan.reset();
  return changed;
}

}  // namespace a8

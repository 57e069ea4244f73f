#include "passes/cleanup/fold_value.h"

#include <map>
#include <set>
#include <vector>

#include "compiler/ir/op_table.h"
#include "passes/analysis/shape_inference.h"
#include "passes/cleanup/constant_folding.h"
#include "passes/cleanup/cse.h"

namespace a8 {
namespace {

// Deeper producer chains than this are not folded (and never overflow the stack).
constexpr int kMaxDepth = 2000;

// The type shape-inference gives `v` on a copy of the graph (its nodes so far): for values whose
// shape rules need data that earlier nodes compute (a Reshape to a computed shape).
StatusOr<TensorType> TypeByShapeInference(const Graph& g, const Value* v) {
  Graph copy;
  copy.opsets = g.opsets;
  std::map<const Value*, Value*> map;
  for (Value* x : g.graph_values()) {
    map[x] = copy.AddGraphValue(x->name(), x->role(), x->type(), x->data());
  }
  for (Node* n : g.NodeList()) {
    std::vector<Value*> ins;
    for (Value* in : n->inputs()) ins.push_back(in == nullptr ? nullptr : map.at(in));
    std::vector<std::pair<std::string, TensorType>> outs;
    for (Value* out : n->outputs()) outs.emplace_back(out->name(), TensorType{});
    Node* m = copy.AddNode(n->op(), n->domain(), ins, outs, n->attrs(), n->name());
    m->set_version(n->version());
    for (int i = 0; i < n->num_outputs(); ++i) map[n->output(i)] = m->output(i);
  }
  StatusOr<bool> inferred = ShapeInference().Run(copy);
  if (!inferred.ok()) {
    return Unsupported("the type of '{}': {}", v->name(), inferred.status().message());
  }
  const Value* typed = copy.FindValue(v->name());
  if (typed == nullptr) return Unsupported("the type of '{}' is not known", v->name());
  return typed->type();
}

class Folder {
 public:
  explicit Folder(const Graph& g) : g_(g) {}

  // Type(), and where a shape rule needs data that is computed, shape-inference on a copy.
  Status EnsureType(Value* v, int depth) {
    if (Type(v, depth).ok()) return Status::Ok();
    A8_ASSIGN_OR_RETURN(TensorType t, TypeByShapeInference(g_, v));
    v->set_type(t);
    typed_.insert(v);
    return Status::Ok();
  }

  // Gives `v` its type (its producer's shape rule, after its inputs').
  Status Type(Value* v, int depth) {
    if (v == nullptr || v->data() != nullptr || v->producer() == nullptr || typed_.count(v)) {
      return Status::Ok();
    }
    if (depth > kMaxDepth) return Unsupported("'{}' is computed by too long a chain", v->name());
    Node* p = v->producer();
    for (Value* in : p->inputs()) A8_RETURN_IF_ERROR(EnsureType(in, depth + 1));
    const OpDef* def = FindOp(p->domain(), p->op());
    if (def == nullptr || !def->infer) return Unsupported("{}: no shape rule", p->Where());
    std::vector<TensorType> types;
    A8_RETURN_IF_ERROR(def->infer(*p, &types));
    for (int i = 0; i < p->num_outputs() && i < static_cast<int>(types.size()); ++i) {
      p->output(i)->set_type(types[i]);
      typed_.insert(p->output(i));
    }
    return Status::Ok();
  }

  StatusOr<TensorDataPtr> Fold(Value* v, int depth) {
    if (v->data() != nullptr) return v->data();
    if (auto it = folded_.find(v); it != folded_.end()) return it->second;
    Node* p = v->producer();
    if (p == nullptr) {
      return Unsupported("'{}' is a {}, not a constant", v->name(),
                         v->role() == ValueRole::kInput ? "graph input" : "parameter");
    }
    if (depth > kMaxDepth) return Unsupported("'{}' is computed by too long a chain", v->name());
    if (!IsFoldableOp(*p) || IsRandomOp(*p)) {
      return Unsupported("{}: is not evaluated at compile time", p->Where());
    }
    std::vector<TensorDataPtr> inputs;
    for (int i = 0; i < p->num_inputs(); ++i) {
      Value* in = p->input(i);
      if (in == nullptr) {
        inputs.push_back(nullptr);
      } else if (ReadsTypeOnly(*p, i)) {
        A8_RETURN_IF_ERROR(EnsureType(in, depth + 1));
        inputs.push_back(in->data());
      } else {
        A8_ASSIGN_OR_RETURN(TensorDataPtr data, Fold(in, depth + 1));
        inputs.push_back(std::move(data));
      }
    }
    A8_RETURN_IF_ERROR(Type(v, depth));
    A8_ASSIGN_OR_RETURN(std::vector<TensorDataPtr> outs, EvaluateNode(*p, inputs));
    for (int i = 0; i < p->num_outputs() && i < static_cast<int>(outs.size()); ++i) {
      folded_[p->output(i)] = outs[i];
    }
    auto it = folded_.find(v);
    if (it == folded_.end()) return Internal("{}: evaluated without '{}'", p->Where(), v->name());
    return it->second;
  }

 private:
  const Graph& g_;
  std::map<const Value*, TensorDataPtr> folded_;
  std::set<const Value*> typed_;
};

}  // namespace

StatusOr<TensorDataPtr> FoldValue(Graph& g, Value* v) {
  Folder folder(g);
  return folder.Fold(v, 0);
}

}  // namespace a8

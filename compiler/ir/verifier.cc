// The IR verifier (invariants in verifier.h). It walks graph values, then nodes in program order,
// and reports the first violation it meets, so the error is deterministic and names the node,
// the operand or attribute, and the value involved.
#include "compiler/ir/verifier.h"

#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ir/op_table.h"

namespace a8 {
namespace {

std::string Ref(const Value* v) { return fmt::format("'%{}'", v->name()); }

class Verifier {
 public:
  Verifier(const Graph& g, const VerifyOptions& opts) : g_(g), opts_(opts) {}

  Status Run() {
    for (const Node* n : g_.nodes()) {
      nodes_.insert(n);
      for (const Value* v : n->outputs()) {
        if (v) producer_of_[v] = n;
      }
    }
    for (const Value* v : g_.graph_values()) A8_RETURN_IF_ERROR(CheckGraphValue(v));
    for (const Node* n : g_.nodes()) A8_RETURN_IF_ERROR(CheckNode(*n));
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      const Value* v = g_.outputs()[i];
      if (!v) return InvalidInput("graph output {} is null", i);
      if (!defined_.count(v)) {
        return InvalidInput("graph output {} {} is not defined in the graph", i, Ref(v));
      }
      if (!v->is_graph_output()) {
        return InvalidInput("graph output {} {} does not know it is a graph output", i, Ref(v));
      }
    }
    return CheckUpdates();
  }

 private:
  // `update %target = %value`: a parameter or state takes a defined value of its own type, once.
  Status CheckUpdates() {
    std::unordered_set<const Value*> targets;
    for (const Graph::StateUpdate& u : g_.updates()) {
      if (u.target == nullptr || u.value == nullptr) return InvalidInput("an update is null");
      if (u.target->role() != ValueRole::kParameter && u.target->role() != ValueRole::kState) {
        return InvalidInput("update {} = {}: the target is not a param or state", Ref(u.target),
                            Ref(u.value));
      }
      if (!defined_.count(u.value) && u.value->producer() != nullptr) {
        return InvalidInput("update {} = {}: the value is not defined in the graph", Ref(u.target),
                            Ref(u.value));
      }
      if (opts_.check_types && u.target->type() != u.value->type()) {
        return InvalidInput("update {} = {}: the value has type {}, the target {}", Ref(u.target),
                            Ref(u.value), u.value->type().ToString(), u.target->type().ToString());
      }
      if (!targets.insert(u.target).second) {
        return InvalidInput("update {}: the target is updated twice", Ref(u.target));
      }
    }
    return Status::Ok();
  }

  Status CheckName(const Value* v, const std::string& where) {
    if (!names_.insert(v->name()).second) {
      return InvalidInput("{}: duplicate value name {}", where, Ref(v));
    }
    if (g_.FindValue(v->name()) != v) {
      return InvalidInput("{}: value {} is not the one the graph finds under its name", where,
                          Ref(v));
    }
    auto n = v->type().NumElements();
    if (!n.ok()) {
      return InvalidInput("{}: value {} has an invalid type {}: {}", where, Ref(v),
                          v->type().ToString(), n.status().message());
    }
    return Status::Ok();
  }

  Status CheckUses(const Value* v, const std::string& where) {
    std::set<std::pair<const Node*, int>> seen;
    for (const Use& u : v->uses()) {
      if (!u.node || !nodes_.count(u.node)) {
        return InvalidInput("{}: value {} has a use by a node that is not in the graph", where,
                            Ref(v));
      }
      if (u.operand < 0 || u.operand >= u.node->num_inputs() || u.node->input(u.operand) != v) {
        return InvalidInput("{}: value {} records a use as input {} of {}, which is not it", where,
                            Ref(v), u.operand, u.node->Where());
      }
      if (!seen.emplace(u.node, u.operand).second) {
        return InvalidInput("{}: value {} records input {} of {} twice", where, Ref(v), u.operand,
                            u.node->Where());
      }
    }
    return Status::Ok();
  }

  Status CheckGraphValue(const Value* v) {
    std::string where = fmt::format("{} {}", ValueRoleName(v->role()), Ref(v));
    A8_RETURN_IF_ERROR(CheckName(v, "graph"));
    if (v->role() == ValueRole::kIntermediate || v->producer()) {
      return InvalidInput("{}: graph-level value {} has a producer or no role", where, Ref(v));
    }
    if (v->data()) {
      if (v->role() == ValueRole::kInput) return InvalidInput("{}: a graph input has data", where);
      const TensorData& d = *v->data();
      if (d.type != v->type()) {
        return InvalidInput("{}: data of type {} for a value of type {}", where, d.type.ToString(),
                            v->type().ToString());
      }
      uint64_t expected =
          static_cast<uint64_t>(v->type().CheckedNumElements()) * DTypeSize(v->dtype());
      if (d.bytes.size() != expected) {
        return InvalidInput("{}: data has {} bytes, {} needs {}", where, d.bytes.size(),
                            v->type().ToString(), expected);
      }
    }
    A8_RETURN_IF_ERROR(CheckUses(v, where));
    defined_.insert(v);
    return Status::Ok();
  }

  Status CheckNode(const Node& n) {
    if (n.graph() != &g_) return InvalidInput("{}: belongs to another graph", n.Where());
    for (int i = 0; i < n.num_inputs(); ++i) {
      const Value* v = n.input(i);
      if (!v) continue;
      if (!defined_.count(v)) {
        if (producer_of_.count(v)) {
          return InvalidInput(
              "{}: input {} {} is used before its definition by {} (the nodes "
              "are not in topological order, or they form a cycle)",
              n.Where(), i, Ref(v), producer_of_.at(v)->Where());
        }
        return InvalidInput("{}: input {} {} is not defined", n.Where(), i, Ref(v));
      }
      bool recorded = false;
      for (const Use& u : v->uses()) recorded = recorded || (u.node == &n && u.operand == i);
      if (!recorded) {
        return InvalidInput("{}: input {} {} has no matching entry in its use list", n.Where(), i,
                            Ref(v));
      }
    }
    for (int i = 0; i < n.num_outputs(); ++i) {
      const Value* v = n.output(i);
      if (!v) return InvalidInput("{}: output {} is null", n.Where(), i);
      A8_RETURN_IF_ERROR(CheckName(v, n.Where()));
      if (v->producer() != &n || v->producer_output() != i) {
        return InvalidInput("{}: output {} {} does not name this node as its producer", n.Where(),
                            i, Ref(v));
      }
      if (v->role() != ValueRole::kIntermediate) {
        return InvalidInput("{}: output {} {} has the graph-level role '{}'", n.Where(), i, Ref(v),
                            ValueRoleName(v->role()));
      }
      A8_RETURN_IF_ERROR(CheckUses(v, n.Where()));
    }

    const OpDef* def = FindOp(n.domain(), n.op());
    if (!def) return InvalidInput("{}: unknown op '{}'", n.Where(), n.qualified_op());
    A8_RETURN_IF_ERROR(CheckNodeAgainstOpDef(n, *def));
    if (opts_.check_types && def->infer) {
      std::vector<TensorType> inferred;
      A8_RETURN_IF_ERROR(def->infer(n, &inferred));
      if (inferred.size() < static_cast<size_t>(n.num_outputs())) {
        return InvalidInput("{}: has {} outputs but its shape rule infers {}", n.Where(),
                            n.num_outputs(), inferred.size());
      }
      for (int i = 0; i < n.num_outputs(); ++i) {
        if (n.output(i)->type() != inferred[i]) {
          return InvalidInput("{}: output {} {} has type {} but its shape rule infers {}",
                              n.Where(), i, Ref(n.output(i)), n.output(i)->type().ToString(),
                              inferred[i].ToString());
        }
      }
    }
    for (const Value* v : n.outputs()) defined_.insert(v);
    return Status::Ok();
  }

  const Graph& g_;
  const VerifyOptions& opts_;
  // Pointer-keyed sets are only looked up, never iterated, so the output stays deterministic.
  std::unordered_set<const Node*> nodes_;
  std::unordered_map<const Value*, const Node*> producer_of_;
  std::unordered_set<const Value*> defined_;
  std::unordered_set<std::string> names_;
};

}  // namespace

Status Verify(const Graph& g, const VerifyOptions& opts) { return Verifier(g, opts).Run(); }

}  // namespace a8

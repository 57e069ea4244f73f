#include "passes/cleanup/canonicalize.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "passes/cleanup/constant_folding.h"
#include "passes/cleanup/cse.h"
#include "passes/cleanup/dce.h"

namespace a8 {
namespace {

// A generous bound: each round removes or replaces at least one node, so a graph of N nodes
// settles within N rounds; this only guards against a rewrite that undoes another.
constexpr int kMaxRounds = 1000;

// Every input the node reads the data of is a constant (ReadsTypeOnly: the others).
bool DataInputsConstant(const Node& node) {
  for (int i = 0; i < node.num_inputs(); ++i) {
    const Value* v = node.input(i);
    if (v && !v->is_constant() && !ReadsTypeOnly(node, i)) return false;
  }
  return true;
}

// Folds every foldable node; names of the constants created go to `folded`.
StatusOr<int64_t> FoldConstants(Graph& graph, std::set<std::string>* folded) {
  int64_t count = 0;
  for (Node* node : graph.NodeList()) {
    if (!IsFoldableOp(*node) || IsRandomOp(*node) || node->num_outputs() == 0) continue;
    if (!DataInputsConstant(*node)) continue;
    StatusOr<std::vector<TensorDataPtr>> data = EvaluateNode(*node, ConstantInputs(*node));
    if (!data.ok()) {
      if (data.status().code() == StatusCode::kUnsupported) continue;
      return data.status();
    }
    A8_ASSIGN_OR_RETURN(std::vector<Value*> constants, ReplaceWithConstants(graph, node, *data));
    for (const Value* c : constants) folded->insert(c->name());
    ++count;
  }
  return count;
}

// The input that `node` passes through unchanged, or null. `training`: the graph is or will
// become a training step.
Value* ForwardedInput(const Node& node, bool training) {
  if (!node.domain().empty() || node.num_outputs() < 1 || !node.has_input(0)) return nullptr;
  const std::string& op = node.op();
  Value* in = node.input(0);
  const Value* out = node.output(0);
  if (in->type() != out->type()) return nullptr;
  if (op == "Identity") return in;
  if (op == "Cast" || op == "Reshape" || op == "Expand") return in;  // same type checked above
  if (op == "Dropout") {
    // A graph that will become a training step keeps its Dropouts: build-training turns them
    // on.
    if (training) return nullptr;
    if (node.num_outputs() > 1 &&
        (!node.output(1)->uses().empty() || node.output(1)->is_graph_output())) {
      return nullptr;
    }
    if (!node.has_input(2)) return in;
    const Value* mode = node.input(2);
    if (mode->is_constant() && mode->data()->num_elements() == 1 &&
        mode->data()->GetInt64(0) == 0) {
      return in;
    }
  }
  return nullptr;
}

int64_t RemoveIdentities(Graph& graph, bool training) {
  int64_t count = 0;
  for (Node* node : graph.NodeList()) {
    Value* in = ForwardedInput(*node, training);
    if (!in) continue;
    Value* out = node->output(0);
    std::vector<Use> uses = out->uses();
    for (const Use& u : uses) u.node->SetInput(u.operand, in);
    if (out->is_graph_output()) {
      if (!uses.empty()) ++count;  // the node stays so that the output keeps its name
      continue;
    }
    graph.EraseNode(node);
    ++count;
  }
  return count;
}

bool AllFinite(const TensorData& t) {
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (!std::isfinite(t.GetDouble(i))) return false;
  }
  return true;
}

int64_t PromoteFoldedWeights(Graph& graph, const std::set<std::string>& folded) {
  int64_t count = 0;
  for (const std::string& name : folded) {
    Value* v = graph.FindValue(name);
    if (!v || !v->is_constant() || !IsFloat(v->dtype()) || v->data()->num_elements() <= 1) {
      continue;
    }
    bool read_as_data = false;
    for (const Use& u : v->uses())
      read_as_data = read_as_data || !IsShapeOperand(*u.node, u.operand);
    if (!read_as_data || !AllFinite(*v->data())) continue;
    v->set_role(ValueRole::kParameter);
    ++count;
  }
  return count;
}

}  // namespace

StatusOr<bool> Canonicalize::Run(Graph& graph) {
  bool changed = false;
  std::set<std::string> folded;
  const bool had_parameters = !graph.parameters().empty();
  for (int round = 0; round < kMaxRounds; ++round) {
    A8_ASSIGN_OR_RETURN(int64_t n_folded, FoldConstants(graph, &folded));
    const int64_t n_identities =
        RemoveIdentities(graph, config().training.has_value() || graph.train_step.has_value());
    const int64_t n_merged = EliminateCommonSubexpressions(graph);
    const DeadCodeCounts dead = RemoveDeadCode(graph);
    stats_["nodes-folded"] += n_folded;
    stats_["identities-removed"] += n_identities;
    stats_["nodes-merged"] += n_merged;
    stats_["nodes-removed"] += dead.nodes;
    stats_["constants-removed"] += dead.constants;
    if (n_folded + n_identities + n_merged + dead.nodes + dead.constants == 0) break;
    changed = true;
  }
  // A model that holds weights as initializers holds all of them there: what folds in it is
  // computed from shapes and constants (the dynamo exporter's attention masks of an all-ones
  // mask, T5's zero position bias of layers without one), never a weight to train.
  const int64_t promoted =
      options_.promote_folded_weights && !had_parameters ? PromoteFoldedWeights(graph, folded) : 0;
  stats_["weights-promoted"] += promoted;
  return changed || promoted > 0;
}

}  // namespace a8

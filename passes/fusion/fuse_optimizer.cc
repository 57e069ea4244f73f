// fuse-optimizer (see fuse_optimizer.h).
#include "passes/fusion/fuse_optimizer.h"

#include <map>
#include <string>
#include <vector>

#include "passes/fusion/fuse_internal.h"

namespace a8 {
namespace {

constexpr int kAdamScaleInput = 5;

// The working-copy Cast of an a8.AdamUpdate's f32 param_next to f16 / bf16, if it has one.
Node* WorkingCopyCast(const Node& update) {
  const Value* next = update.output(0);
  if (next->dtype() != DType::kF32 || update.num_outputs() != 3) return nullptr;
  for (const Use& u : next->uses()) {
    if (!fusion::IsOnnxOp(u.node, "Cast")) continue;
    const DType to = u.node->output(0)->dtype();
    if (to == DType::kF16 || to == DType::kBF16) return u.node;
  }
  return nullptr;
}

// Whether every unscaled output of `unscale` is read only as the gradient of a8.AdamUpdates
// that do not already have a scale.
bool UnscaleFolds(const Node& unscale) {
  for (int i = 0; i + 1 < unscale.num_outputs(); ++i) {
    const Value* g = unscale.output(i);
    if (g->is_graph_output()) return false;
    for (const Use& u : g->uses()) {
      if (!u.node->IsInternal("AdamUpdate") || u.operand != 1 ||
          u.node->has_input(kAdamScaleInput)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

StatusOr<bool> FuseOptimizer::Run(Graph& graph) {
  if (!graph.train_step) return false;
  // Unscaled gradient -> (scaled gradient, scale), for the unscales that fold.
  std::map<const Value*, std::pair<Value*, Value*>> scaled_of;
  std::vector<Node*> unscales;
  for (Node* n : graph.NodeList()) {
    if (!n->IsInternal("UnscaleCheckFinite") || !UnscaleFolds(*n)) continue;
    unscales.push_back(n);
    for (int i = 0; i + 1 < n->num_outputs(); ++i) {
      scaled_of[n->output(i)] = {n->input(i + 1), n->input(0)};
    }
  }
  std::vector<Node*> updates;  // collected first: each fold erases a Cast further on
  for (Node* n : graph.nodes()) {
    if (n->IsInternal("AdamUpdate")) updates.push_back(n);
  }
  int64_t copies = 0, unscaled = 0;
  for (Node* update : updates) {
    Node* cast = WorkingCopyCast(*update);
    const auto scaled = scaled_of.find(update->input(1));
    if (cast == nullptr && scaled == scaled_of.end()) continue;
    std::vector<Value*> inputs(update->inputs().begin(), update->inputs().end());
    if (scaled != scaled_of.end()) {
      inputs[1] = scaled->second.first;
      inputs.resize(kAdamScaleInput);
      inputs.push_back(scaled->second.second);
      ++unscaled;
    }
    std::map<std::string, Attribute> attrs = update->attrs();
    std::vector<Node*> members = {update};
    std::vector<Value*> outputs(update->outputs().begin(), update->outputs().end());
    if (cast != nullptr) {
      attrs["copy_to"] = Attribute(static_cast<int64_t>(DTypeToOnnx(cast->output(0)->dtype())));
      members.push_back(cast);
      outputs.push_back(cast->output(0));
      ++copies;
    }
    A8_RETURN_IF_ERROR(fusion::EmitFused(graph, "AdamUpdate", std::move(inputs), std::move(attrs),
                                         update, update, members, outputs));
  }
  for (Node* unscale : unscales) {
    std::vector<Value*> grads(unscale->inputs().begin() + 1, unscale->inputs().end());
    Value* found_inf = unscale->output(unscale->num_outputs() - 1);
    A8_RETURN_IF_ERROR(fusion::EmitFused(graph, "CheckFinite", std::move(grads), {}, unscale,
                                         unscale, {unscale}, {found_inf}));
  }
  stats()["working-copies-folded"] = copies;
  stats()["unscales-folded"] = unscaled;
  const bool changed = copies + unscaled > 0;
  if (changed) graph.memory_plan.reset();
  return changed;
}

}  // namespace a8

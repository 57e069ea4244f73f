// loss-scaling (see loss_scaling.h).
#include "passes/mixed_precision/loss_scaling.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/emit_typed_node.h"
#include "compiler/ir/op_table.h"
#include "passes/autodiff/build_training.h"

namespace a8 {
namespace {

// Emits a node of a known op before `before` and types its outputs from the op's shape rule.
StatusOr<Node*> Emit(Graph& g, const std::string& domain, const std::string& op,
                     std::vector<Value*> inputs, const std::vector<std::string>& out_names,
                     std::map<std::string, Attribute> attrs, const std::string& node_name,
                     Node* before) {
  return EmitTypedNode(g, "loss-scaling", domain, op, std::move(inputs), out_names,
                       std::move(attrs), node_name, before);
}

TensorDataPtr Scalar(DType dtype, double v) {
  std::shared_ptr<TensorData> d = TensorData::Make(TensorType{dtype, {}});
  if (dtype == DType::kF32) d->mutable_data<float>()[0] = static_cast<float>(v);
  if (dtype == DType::kI32) d->mutable_data<int32_t>()[0] = static_cast<int32_t>(v);
  return d;
}

class Scaler {
 public:
  Scaler(Graph& g, const TrainingConfig& cfg, const LossScaleMode& mode)
      : g_(g), cfg_(cfg), step_(*g.train_step), mode_(mode) {}

  StatusOr<int64_t> Run() {
    Value* seed = g_.FindValue(step_.grad_seed);
    if (seed == nullptr || !seed->is_constant()) {
      return Internal("loss-scaling: the loss-gradient seed '{}' is not a constant of the graph",
                      step_.grad_seed);
    }
    // The step's optimizer: its control node, and the nodes that read gradients.
    Node* control = nullptr;
    std::vector<Node*> readers;  // updates and GlobalNormSq, in node order
    // Program positions, by Node::id().
    std::vector<size_t> by_id(g_.node_id_bound(), 0);
    auto position = [&](const Node* n) { return by_id[n->id()]; };
    size_t index = 0;
    for (Node* n : g_.nodes()) {
      by_id[n->id()] = index++;
      if (n->IsInternal("TrainControl")) control = n;
      if (n->IsInternal("SgdUpdate") || n->IsInternal("AdamUpdate") ||
          n->IsInternal("GlobalNormSq")) {
        readers.push_back(n);
      }
    }
    if (control == nullptr || readers.empty()) {
      return Unsupported(
          "--loss-scale={}: the training step has no a8 optimizer (a model's own "
          "TrainingInfoProto algorithm cannot be loss-scaled)",
          cfg_.loss_scale.empty() ? mode_.mode : cfg_.loss_scale);
    }
    if (control->has_input(3)) {
      return Internal("loss-scaling: {} already reads a found_inf flag", control->Where());
    }
    // The gradients, in the order their readers use them, grouped by dtype (one op per type).
    std::vector<Value*> grads;
    std::map<const Value*, Value*> unscaled;
    for (Node* r : readers) {
      const bool norm = r->IsInternal("GlobalNormSq");
      for (int i = norm ? 0 : 1; i < (norm ? r->num_inputs() : 2); ++i) {
        Value* gv = r->input(i);
        if (unscaled.emplace(gv, nullptr).second) grads.push_back(gv);
      }
    }
    // Everything goes right before the first reader (or the control node, whichever is first):
    // every gradient is computed by then.
    Node* first = control;
    for (Node* r : readers) {
      if (position(r) < position(first)) first = r;
    }
    for (Value* gv : grads) {
      if (gv->producer() != nullptr && position(gv->producer()) >= position(first)) {
        return Internal("loss-scaling: gradient '{}' is computed after {}", gv->name(),
                        first->Where());
      }
    }

    Value* scale = nullptr;
    Value* tracker = nullptr;
    if (mode_.mode == "dynamic") {
      scale = g_.AddState(g_.UniqueName("a8.scale"), Scalar(DType::kF32, cfg_.init_scale));
      tracker = g_.AddState(g_.UniqueName("a8.growth_tracker"), Scalar(DType::kI32, 0));
    } else {
      scale = g_.AddConstant(g_.UniqueName("a8.scale"), Scalar(DType::kF32, mode_.static_scale));
    }
    g_.ReplaceAllUsesWith(seed, scale);
    if (seed->uses().empty() && !seed->is_graph_output()) g_.EraseGraphValue(seed);

    std::vector<std::pair<DType, std::vector<Value*>>> groups;
    for (Value* gv : grads) {
      auto it = groups.begin();
      while (it != groups.end() && it->first != gv->dtype()) ++it;
      if (it == groups.end()) it = groups.insert(groups.end(), {gv->dtype(), {}});
      it->second.push_back(gv);
    }
    std::vector<Value*> flags;
    for (const auto& [dtype, members] : groups) {
      std::vector<Value*> inputs = {scale};
      std::vector<std::string> names;
      for (Value* gv : members) {
        inputs.push_back(gv);
        names.push_back(gv->name() + ".unscaled");
      }
      names.push_back("a8.found_inf");
      A8_ASSIGN_OR_RETURN(Node * node, Emit(g_, "a8", "UnscaleCheckFinite", inputs, names, {},
                                            "a8.unscale", first));
      for (size_t i = 0; i < members.size(); ++i) {
        unscaled[members[i]] = node->output(static_cast<int>(i));
      }
      flags.push_back(node->output(static_cast<int>(members.size())));
    }
    Value* found_inf = flags.front();
    if (flags.size() > 1) {
      A8_ASSIGN_OR_RETURN(Node * any,
                          Emit(g_, "", "Max", flags, {"a8.found_inf"}, {}, "a8.found_inf", first));
      found_inf = any->output(0);
    }
    for (Node* r : readers) {
      for (int i = 0; i < r->num_inputs(); ++i) {
        auto it = unscaled.find(r->input(i));
        const bool grad_operand = r->IsInternal("GlobalNormSq") || i == 1;
        if (grad_operand && it != unscaled.end()) r->SetInput(i, it->second);
      }
    }
    control->SetInput(3, found_inf);

    if (tracker != nullptr) {
      std::map<std::string, Attribute> attrs = {
          {"growth_factor", Attribute(cfg_.growth_factor)},
          {"backoff_factor", Attribute(cfg_.backoff_factor)},
          {"growth_interval", Attribute(cfg_.growth_interval)},
          {"min_scale", Attribute(cfg_.min_scale)},
          {"max_scale", Attribute(cfg_.max_scale)},
          {"accumulate", Attribute(cfg_.accumulate)}};
      A8_ASSIGN_OR_RETURN(
          Node * update,
          Emit(g_, "a8", "UpdateScale", {scale, tracker, found_inf, control->input(0)},
               {"a8.scale.next", "a8.growth_tracker.next"}, attrs, "a8.update_scale", first));
      g_.AddUpdate(scale, update->output(0));
      g_.AddUpdate(tracker, update->output(1));
      step_.tracker_state = tracker->name();
    }
    step_.scale_value = scale->name();
    step_.scale_mode = mode_.mode;
    return static_cast<int64_t>(grads.size());
  }

 private:
  Graph& g_;
  const TrainingConfig& cfg_;
  TrainingStep& step_;
  const LossScaleMode& mode_;
};

}  // namespace

StatusOr<bool> LossScaling::Run(Graph& graph) {
  A8_RETURN_IF_ERROR(CheckTrainingRecord(graph, "loss-scaling"));
  if (!graph.train_step || !graph.train_step->scale_value.empty()) return false;
  // A model's own TrainingInfoProto step has no flags: the defaults, and no seed to scale.
  const TrainingConfig& cfg = config().training_or_defaults();
  A8_ASSIGN_OR_RETURN(LossScaleMode mode, EffectiveLossScale(cfg, config().mode(),
                                                             !graph.train_step->grad_seed.empty()));
  if (mode.mode == "none") return false;
  A8_ASSIGN_OR_RETURN(int64_t unscaled, Scaler(graph, cfg, mode).Run());
  stats()["gradients-unscaled"] = unscaled;
  return true;
}

}  // namespace a8

// loss-scaling (see loss_scaling.h).
#include "passes/mixed_precision/loss_scaling.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_table.h"

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
  Scaler(Graph& g, const LossScaleMode& mode) : g_(g), cfg_(*g.training), mode_(mode) {}

  StatusOr<int64_t> Run() {
    Value* seed = g_.FindValue(cfg_.grad_seed);
    if (seed == nullptr || !seed->is_constant()) {
      return Internal("loss-scaling: the loss-gradient seed '{}' is not a constant of the graph",
                      cfg_.grad_seed);
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
      if (n->IsInternal("SgdUpdate") || n->IsInternal("AdamUpdate") || n->IsInternal("GlobalNormSq")) {
        readers.push_back(n);
      }
    }
    if (control == nullptr || readers.empty()) {
      return Unsupported(
          "--loss-scale={}: the training step has no a8 optimizer (a model's own "
          "TrainingInfoProto algorithm cannot be loss-scaled)",
          cfg_.loss_scale);
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
      cfg_.tracker_state = tracker->name();
    }
    cfg_.scale_value = scale->name();
    return static_cast<int64_t>(grads.size());
  }

 private:
  Graph& g_;
  TrainingConfig& cfg_;
  const LossScaleMode& mode_;
};

}  // namespace

StatusOr<LossScaleMode> ParseLossScale(const TrainingConfig& c) {
  LossScaleMode m;
  const std::string& s = c.loss_scale;
  if (s.empty()) {
    m.mode = "none";  // the precision's default, resolved by the pass (DefaultLossScale)
  } else if (s == "none" || s == "dynamic") {
    m.mode = s;
  } else if (s.rfind("static:", 0) == 0) {
    const std::string value = s.substr(7);
    char* end = nullptr;
    const double v = value.empty() ? 0.0 : std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v) || !(v > 0) ||
        !std::isfinite(static_cast<float>(v))) {
      return InvalidInput("--loss-scale={}: the static scale must be a finite number > 0", s);
    }
    m.mode = "static";
    m.static_scale = static_cast<float>(v);
  } else {
    return InvalidInput("--loss-scale: unknown mode '{}' (expected dynamic, static:VALUE or none)",
                        s);
  }
  auto positive = [](float v) { return std::isfinite(v) && v > 0.0f; };
  if (!positive(c.init_scale)) {
    return InvalidInput("--init-scale: must be a finite number > 0, got {}", c.init_scale);
  }
  if (!std::isfinite(c.growth_factor) || !(c.growth_factor > 1.0f)) {
    return InvalidInput("--growth-factor: must be > 1, got {}", c.growth_factor);
  }
  if (!(c.backoff_factor > 0.0f && c.backoff_factor < 1.0f)) {
    return InvalidInput("--backoff-factor: must be in (0, 1), got {}", c.backoff_factor);
  }
  if (c.growth_interval < 1 || c.growth_interval > INT32_MAX) {
    return InvalidInput("--growth-interval: must be in [1, {}], got {}", INT32_MAX,
                        c.growth_interval);
  }
  if (!positive(c.min_scale)) {
    return InvalidInput("--min-scale: must be a finite number > 0, got {}", c.min_scale);
  }
  if (!positive(c.max_scale) || c.max_scale < c.min_scale) {
    return InvalidInput("--max-scale: must be a finite number >= --min-scale ({}), got {}",
                        c.min_scale, c.max_scale);
  }
  if (c.init_scale < c.min_scale || c.init_scale > c.max_scale) {
    return InvalidInput("--init-scale: {} is outside [--min-scale, --max-scale] = [{}, {}]",
                        c.init_scale, c.min_scale, c.max_scale);
  }
  return m;
}

StatusOr<bool> LossScaling::Run(Graph& graph) {
  if (!graph.training || !graph.training->built || !graph.training->scale_value.empty()) {
    return false;
  }
  TrainingConfig& cfg = *graph.training;
  if (cfg.loss_scale.empty()) {
    // PRECISION.md: amp and fp16 scale dynamically by default; fp32, tf32 and bf16 do not. A
    // TrainingInfoProto step has no seed of a8's to scale.
    const bool low = graph.precision && (graph.precision->mode == PrecisionMode::kAmp ||
                                         graph.precision->mode == PrecisionMode::kFp16);
    cfg.loss_scale = low && !cfg.grad_seed.empty() ? "dynamic" : "none";
  }
  A8_ASSIGN_OR_RETURN(LossScaleMode mode, ParseLossScale(cfg));
  if (mode.mode == "none") return false;
  A8_ASSIGN_OR_RETURN(int64_t unscaled, Scaler(graph, mode).Run());
  stats()["gradients-unscaled"] = unscaled;
  return true;
}

}  // namespace a8

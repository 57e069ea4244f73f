// build-training (see build_training.h).
#include "passes/autodiff/build_training.h"

#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/emit_typed_node.h"
#include "compiler/ir/op_table.h"
#include "passes/autodiff/autodiff.h"
#include "passes/autodiff/param_choice.h"
#include "passes/mixed_precision/loss_scaling.h"

namespace a8 {
namespace {

constexpr const char* kFlagWhere = "build-training";

// Emits a node of a known op and types its outputs from the op's shape rule.
StatusOr<std::vector<Value*>> Emit(Graph& g, const std::string& domain, const std::string& op,
                                   std::vector<Value*> inputs,
                                   const std::vector<std::string>& out_names,
                                   std::map<std::string, Attribute> attrs,
                                   const std::string& node_name, Node* before = nullptr) {
  A8_ASSIGN_OR_RETURN(Node * node, EmitTypedNode(g, kFlagWhere, domain, op, std::move(inputs),
                                                 out_names, std::move(attrs), node_name, before));
  return node->outputs();
}

// Replaces `n` by a copy with one more output per suffix (the existing ones keep their uses) and
// the given training-mode change; returns the new node.
StatusOr<Node*> Rebuild(Graph& g, Node* n, const std::vector<std::string>& new_output_suffixes,
                        const std::map<std::string, Attribute>& set_attrs,
                        const std::vector<std::pair<int, Value*>>& set_inputs) {
  std::vector<Value*> inputs = n->inputs();
  for (const auto& [i, v] : set_inputs) {
    if (static_cast<int>(inputs.size()) <= i) inputs.resize(i + 1, nullptr);
    inputs[i] = v;
  }
  std::map<std::string, Attribute> attrs = n->attrs();
  for (const auto& [k, a] : set_attrs) attrs[k] = a;
  // Outputs: the existing ones, then up to the new count (output i > 0 named base + suffix).
  std::vector<std::string> names;
  const std::string base = n->output(0)->name();
  const int num_outputs = 1 + static_cast<int>(new_output_suffixes.size());
  for (int i = 0; i < num_outputs; ++i) {
    names.push_back(i < n->num_outputs() ? n->output(i)->name()
                                         : base + new_output_suffixes[i - 1]);
  }
  A8_ASSIGN_OR_RETURN(std::vector<Value*> outs,
                      Emit(g, n->domain(), n->op(), inputs, names, attrs, n->name(), n));
  outs[0]->producer()->set_version(n->version());
  const int old_outputs = n->num_outputs();
  std::vector<std::string> old_names;
  for (int i = 0; i < old_outputs; ++i) {
    old_names.push_back(n->output(i)->name());
    g.ReplaceAllUsesWith(n->output(i), outs[i]);
  }
  g.EraseNode(n);
  for (int i = 0; i < old_outputs; ++i) g.RenameValue(outs[i], old_names[i]);
  return outs[0]->producer();
}

class Builder {
 public:
  // `cfg` was checked once by the driver (CheckTrainingConfig); the step is recorded in
  // `g.train_step`.
  Builder(Graph& g, const TrainingConfig& cfg)
      : g_(g), cfg_(cfg), step_(g.train_step.emplace()), class_axis_(cfg.class_axis) {}

  Status Run() {
    if (g_.outputs().empty()) return InvalidInput("{}: the model has no outputs", g_.source);
    A8_RETURN_IF_ERROR(ToTrainingMode());
    A8_ASSIGN_OR_RETURN(Value * loss, AttachLoss());
    A8_ASSIGN_OR_RETURN(std::vector<Value*> params, TrainableParameters(loss));
    // The seed d(loss)/d(loss) is a constant of its own, so loss-scaling can replace it by the
    // scale.
    TensorDataPtr one = [&] {
      auto d = TensorData::Make(loss->type());
      d->mutable_data<float>()[0] = 1.0f;
      return d;
    }();
    if (loss->type() != TensorType{DType::kF32, {}}) {
      return InvalidInput("{}: the loss '{}' is {}; a800c trains on an f32 scalar loss", g_.source,
                          loss->name(), loss->type().ToString());
    }
    GradientOptions grad_options;
    grad_options.seed = g_.AddConstant(g_.UniqueName(loss->name() + ".grad.seed"), one);
    step_.grad_seed = grad_options.seed->name();
    A8_ASSIGN_OR_RETURN(std::vector<Value*> grads, BuildGradients(g_, loss, params, grad_options));
    A8_RETURN_IF_ERROR(AddOptimizer(params, grads));
    return Status::Ok();
  }

 private:
  // BatchNormalization computes batch statistics and updates its running ones; Dropout drops.
  Status ToTrainingMode() {
    for (Node* n : g_.NodeList()) {
      if (!n->domain().empty()) continue;
      if (n->op() == "BatchNormalization") {
        if (n->version() < 14) {
          return Unsupported(
              "{}: BatchNormalization-{} cannot be trained; export with opset 14 "
              "or newer",
              n->Where(), n->version());
        }
        Node* bn = n;
        if (n->GetInt("training_mode", 0) == 0 || n->num_outputs() < 3) {
          A8_ASSIGN_OR_RETURN(bn, Rebuild(g_, n, {".running_mean", ".running_var"},
                                          {{"training_mode", Attribute(1)}}, {}));
        }
        for (int i : {3, 4}) {
          Value* stat = bn->input(i);
          if (stat->producer() != nullptr || stat->data() == nullptr) {
            return Unsupported("{}: running statistic '{}' must be an initializer to be trained",
                               bn->Where(), stat->name());
          }
          // A running statistic that another node also reads (exporters merge initializers of
          // equal values: a fresh model's running mean of zeros becomes the Identity of some
          // bias of zeros) gets its own state, starting from the same values: updating the
          // shared tensor would change what the other reader sees, or update it twice.
          if (stat->uses().size() > 1 || stat->is_graph_output()) {
            Value* own =
                g_.AddState(g_.UniqueName(bn->name() + (i == 3 ? ".running_mean" : ".running_var")),
                            stat->data());
            bn->SetInput(i, own);
            stat = own;
          }
          stat->set_role(ValueRole::kState);
          g_.AddUpdate(stat, bn->output(i - 2));
        }
      } else if (n->op() == "Dropout") {
        Value* on = g_.AddConstant(g_.UniqueName(n->name() + ".training_mode"), [] {
          auto d = TensorData::Make(TensorType{DType::kBool, {}});
          d->bytes[0] = 1;
          return d;
        }());
        A8_RETURN_IF_ERROR(Rebuild(g_, n, {".mask"}, {}, {{2, on}}).status());
      }
    }
    return Status::Ok();
  }

  StatusOr<Value*> AttachLoss() {
    Value* logits = nullptr;
    if (cfg_.logits.empty()) {
      logits = g_.outputs().front();
    } else {
      for (Value* v : g_.outputs()) {
        if (v->name() == cfg_.logits) logits = v;
      }
      if (logits == nullptr) {
        return InvalidInput("--logits: the model has no output '{}' (outputs: {})", cfg_.logits,
                            OutputNames());
      }
    }
    const std::string& kind = cfg_.loss;
    std::vector<Value*> model_outputs = g_.outputs();
    Value* loss = nullptr;
    if (kind.rfind("output:", 0) == 0) {
      const std::string name = kind.substr(7);
      for (Value* v : g_.outputs()) {
        if (v->name() == name) loss = v;
      }
      if (loss == nullptr) {
        return InvalidInput("--loss=output:{}: the model has no output '{}' (outputs: {})", name,
                            name, OutputNames());
      }
      if (!IsFloat(loss->dtype())) {
        return InvalidInput("--loss=output:{}: the output has type {}; a loss must be float", name,
                            loss->type().ToString());
      }
      step_.loss_output = loss->name();
      step_.logits_output = logits == loss ? "" : logits->name();
      return loss;
    }
    if (!IsFloat(logits->dtype())) {
      return InvalidInput("--loss={}: the logits '{}' have type {}; they must be float", kind,
                          logits->name(), logits->type().ToString());
    }
    if (g_.FindValue(cfg_.labels) != nullptr) {
      return InvalidInput(
          "--labels: the model already has a value named '{}'; choose another "
          "label input name",
          cfg_.labels);
    }
    const std::string loss_name = g_.UniqueName("loss");
    if (kind == "cross_entropy") {
      A8_ASSIGN_OR_RETURN(loss, CrossEntropy(logits, loss_name));
    } else if (kind == "mse" || kind == "l1" || kind == "bce_logits") {
      const char* op = kind == "mse" ? "MseLoss" : kind == "l1" ? "L1Loss" : "BceWithLogitsLoss";
      Value* labels = g_.AddInput(cfg_.labels, logits->type());
      A8_ASSIGN_OR_RETURN(std::vector<Value*> outs,
                          Emit(g_, "a8", op, {logits, labels}, {loss_name}, {}, "loss"));
      loss = outs[0];
    } else {
      return InvalidInput(
          "--loss: unknown loss '{}' (expected cross_entropy, mse, bce_logits, l1 "
          "or output:NAME)",
          kind);
    }
    std::vector<Value*> outputs = {loss};
    outputs.insert(outputs.end(), model_outputs.begin(), model_outputs.end());
    g_.SetOutputs(outputs);
    step_.loss_output = loss->name();
    // Accuracy reads one row of classes per label: only when the classes are the last axis and
    // each label belongs to its own row (not shifted).
    const bool rows_of_classes =
        kind != "cross_entropy" || (!cfg_.shift_labels && class_axis_ == logits->type().rank() - 1);
    step_.logits_output = rows_of_classes ? logits->name() : "";
    step_.labels_input = cfg_.labels;
    return loss;
  }

  // SoftmaxCrossEntropyLoss wants [N, C, d1, ...]: the class axis moves to 1 (a Transpose), and
  // --shift-labels drops the last position of the logits and the first of the labels (logits at
  // t predict the label at t + 1), along the first axis after the batch. The mean is over the
  // labels that are not --ignore-index, as PyTorch's CrossEntropyLoss.
  StatusOr<Value*> CrossEntropy(Value* logits, const std::string& loss_name) {
    const TensorType& type = logits->type();
    const int64_t rank = type.rank();
    if (rank < 2) {
      return InvalidInput(
          "--loss=cross_entropy: the logits '{}' are {}; expected [N, C] or "
          "[N, C, d1, ...] (--class-axis=1) or [N, d1, ..., C] (--class-axis=-1)",
          logits->name(), type.ToString());
    }
    int64_t axis = 1;
    if (cfg_.has_class_axis) {
      axis = class_axis_ < 0 ? class_axis_ + rank : class_axis_;
      if (axis < 1 || axis >= rank) {
        return InvalidInput(
            "--class-axis={}: the logits '{}' are {}; the class axis must be one of 1..{} (or "
            "-1..-{}); axis 0 is the batch",
            cfg_.class_axis, logits->name(), type.ToString(), rank - 1, rank - 1);
      }
    } else if (rank > 2) {
      return InvalidInput(
          "--loss=cross_entropy: the logits '{}' are {} (rank {}); say which axis holds the "
          "classes: --class-axis=-1 for sequence models as PyTorch writes them ([B, T, V] logits, "
          "[B, T] labels) or --class-axis=1 for the ONNX convention ([N, C, d1, ...], e.g. "
          "segmentation)",
          logits->name(), type.ToString(), rank);
    }
    class_axis_ = axis;
    std::vector<int64_t> label_dims = type.dims;
    label_dims.erase(label_dims.begin() + axis);
    if (cfg_.shift_labels && (label_dims.size() < 2 || label_dims[1] < 2)) {
      return InvalidInput(
          "--shift-labels: the logits '{}' are {}; shifting needs a sequence axis of length >= 2 "
          "after the batch and besides the class axis",
          logits->name(), type.ToString());
    }
    Value* labels = g_.AddInput(cfg_.labels, TensorType{DType::kI64, label_dims});
    Value* scores = logits;
    if (axis != 1) {
      std::vector<int64_t> perm = {0, axis};
      for (int64_t i = 1; i < rank; ++i) {
        if (i != axis) perm.push_back(i);
      }
      A8_ASSIGN_OR_RETURN(std::vector<Value*> t,
                          Emit(g_, "", "Transpose", {scores}, {g_.UniqueName("loss.scores")},
                               {{"perm", Attribute(perm)}}, "loss.class_axis"));
      scores = t[0];
    }
    Value* targets = labels;
    if (cfg_.shift_labels) {
      const int64_t len = label_dims[1];
      auto ints = [&](const std::string& name, std::vector<int64_t> v) {
        return g_.AddConstant(g_.UniqueName(name), TensorData::FromInt64s(v, {1}));
      };
      A8_ASSIGN_OR_RETURN(std::vector<Value*> s,
                          Emit(g_, "", "Slice",
                               {scores, ints("loss.shift.zero", {0}),
                                ints("loss.shift.last", {len - 1}), ints("loss.shift.axis2", {2})},
                               {g_.UniqueName("loss.scores.shifted")}, {}, "loss.shift_logits"));
      A8_ASSIGN_OR_RETURN(std::vector<Value*> l,
                          Emit(g_, "", "Slice",
                               {labels, ints("loss.shift.one", {1}), ints("loss.shift.len", {len}),
                                ints("loss.shift.axis1", {1})},
                               {g_.UniqueName("labels.shifted")}, {}, "loss.shift_labels"));
      scores = s[0];
      targets = l[0];
    }
    A8_ASSIGN_OR_RETURN(
        std::vector<Value*> outs,
        Emit(g_, "", "SoftmaxCrossEntropyLoss", {scores, targets}, {loss_name},
             {{"reduction", Attribute("mean")}, {"ignore_index", Attribute(cfg_.ignore_index)}},
             "loss"));
    return outs[0];
  }

  std::string OutputNames() const {
    std::string s;
    for (const Value* v : g_.outputs()) s += (s.empty() ? "" : ", ") + v->name();
    return s;
  }

  StatusOr<std::vector<Value*>> TrainableParameters(Value* loss) {
    A8_ASSIGN_OR_RETURN(std::vector<ParamDecision> decisions,
                        ChooseParameters(g_, {loss}, cfg_.freeze, cfg_.trainable_regex));
    std::vector<Value*> params;
    for (const ParamDecision& d : decisions) {
      if (d.trained) {
        params.push_back(d.value);
        step_.trainable.push_back(d.value->name());
      } else {
        step_.frozen.push_back(d.value->name());
        step_.frozen_reasons.push_back(d.reason);
      }
    }
    step_.parameter_summary = ParameterSummary(decisions);
    if (params.empty()) {
      std::string why = "the loss depends on no float parameter";
      if (!cfg_.trainable_regex.empty()) {
        why = fmt::format("no parameter the loss depends on matches --trainable='{}'",
                          cfg_.trainable_regex);
      } else if (!cfg_.freeze.empty()) {
        why = fmt::format(
            "every parameter the loss depends on is frozen (--freeze='{}' matches "
            "all {})",
            cfg_.freeze, step_.frozen.size());
      }
      return InvalidInput(
          "{}: nothing to train: {} (a800c --list-params {} says why each is kept "
          "constant)",
          g_.source, why, g_.source);
    }
    return params;
  }

  Value* State(const std::string& name, const TensorType& t) {
    // One zero tensor per type, shared by every state of that type (TensorData is immutable
    // once made): the optimizer's moments cost the memory of the model's distinct shapes, not
    // twice its weights.
    TensorDataPtr& zeros = zeros_[{t.dtype, t.dims}];
    if (!zeros) zeros = TensorData::Make(t);
    return g_.AddState(g_.UniqueName(name), zeros);
  }

  Status AddOptimizer(const std::vector<Value*>& params, const std::vector<Value*>& grads) {
    const TensorType scalar_f32{DType::kF32, {}};
    Value* step = State("a8.step", TensorType{DType::kI64, {}});
    Value* updates = State("a8.updates", scalar_f32);
    Value* control = State("a8.control", TensorType{DType::kF32, {5}});
    const int64_t k = cfg_.accumulate;

    std::vector<Value*> effective = grads;
    if (k > 1) {
      for (size_t i = 0; i < params.size(); ++i) {
        Value* acc = State(params[i]->name() + ".grad_acc", params[i]->type());
        A8_ASSIGN_OR_RETURN(
            std::vector<Value*> outs,
            Emit(g_, "a8", "GradAccumulate", {acc, grads[i], step}, {acc->name() + ".next"},
                 {{"accumulate", Attribute(k)}}, params[i]->name() + ".accumulate"));
        g_.AddUpdate(acc, outs[0]);
        effective[i] = outs[0];
      }
    }
    std::vector<Value*> control_inputs = {step, updates};
    if (cfg_.clip_grad_norm > 0.0f) {
      A8_ASSIGN_OR_RETURN(std::vector<Value*> norm, Emit(g_, "a8", "GlobalNormSq", effective,
                                                         {"a8.grad_norm_sq"}, {}, "a8.grad_norm"));
      control_inputs.push_back(norm[0]);
    }
    std::map<std::string, Attribute> control_attrs = {
        {"lr", Attribute(cfg_.lr)},
        {"schedule", Attribute(cfg_.lr_schedule)},
        {"warmup_steps", Attribute(cfg_.warmup_steps)},
        {"total_steps", Attribute(cfg_.total_steps)},
        {"min_lr", Attribute(cfg_.min_lr)},
        {"accumulate", Attribute(k)},
        {"max_grad_norm", Attribute(cfg_.clip_grad_norm)}};
    A8_ASSIGN_OR_RETURN(std::vector<Value*> ctl,
                        Emit(g_, "a8", "TrainControl", control_inputs,
                             {"a8.control.next", "a8.step.next", "a8.updates.next"}, control_attrs,
                             "a8.train_control"));
    g_.AddUpdate(control, ctl[0]);
    g_.AddUpdate(step, ctl[1]);
    g_.AddUpdate(updates, ctl[2]);

    const float wd = cfg_.EffectiveWeightDecay();
    for (size_t i = 0; i < params.size(); ++i) {
      Value* p = params[i];
      const std::string node_name = p->name() + ".update";
      if (cfg_.optimizer == "adam" || cfg_.optimizer == "adamw") {
        Value* m = State(p->name() + ".exp_avg", p->type());
        Value* v = State(p->name() + ".exp_avg_sq", p->type());
        A8_ASSIGN_OR_RETURN(std::vector<Value*> outs,
                            Emit(g_, "a8", "AdamUpdate", {p, effective[i], ctl[0], m, v},
                                 {p->name() + ".next", m->name() + ".next", v->name() + ".next"},
                                 {{"beta1", Attribute(cfg_.beta1)},
                                  {"beta2", Attribute(cfg_.beta2)},
                                  {"eps", Attribute(cfg_.eps)},
                                  {"weight_decay", Attribute(wd)},
                                  {"decoupled", Attribute(cfg_.optimizer == "adamw" ? 1 : 0)}},
                                 node_name));
        g_.AddUpdate(p, outs[0]);
        g_.AddUpdate(m, outs[1]);
        g_.AddUpdate(v, outs[2]);
      } else {
        const bool with_momentum = cfg_.optimizer != "sgd";
        std::vector<Value*> inputs = {p, effective[i], ctl[0]};
        std::vector<std::string> names = {p->name() + ".next"};
        Value* buf = nullptr;
        if (with_momentum) {
          buf = State(p->name() + ".momentum_buffer", p->type());
          inputs.push_back(buf);
          names.push_back(buf->name() + ".next");
        }
        A8_ASSIGN_OR_RETURN(std::vector<Value*> outs,
                            Emit(g_, "a8", "SgdUpdate", inputs, names,
                                 {{"momentum", Attribute(with_momentum ? cfg_.momentum : 0.0f)},
                                  {"dampening", Attribute(cfg_.dampening)},
                                  {"nesterov", Attribute(cfg_.optimizer == "nesterov" ? 1 : 0)},
                                  {"weight_decay", Attribute(wd)}},
                                 node_name));
        g_.AddUpdate(p, outs[0]);
        if (buf != nullptr) g_.AddUpdate(buf, outs[1]);
      }
    }
    step_.step_state = step->name();
    step_.control_state = control->name();
    return Status::Ok();
  }

  Graph& g_;
  std::map<std::pair<DType, std::vector<int64_t>>, TensorDataPtr> zeros_;
  const TrainingConfig& cfg_;
  TrainingStep& step_;
  int64_t class_axis_;  // cfg_.class_axis, normalized by AttachLoss
};

}  // namespace

StatusOr<bool> BuildTraining::Run(Graph& graph) {
  const std::optional<TrainingConfig>& flags = config().training;
  if (!flags || graph.train_step || flags->loss == "onnx") return false;
  const size_t before = graph.num_nodes();
  Status built = Builder(graph, *flags).Run();
  if (!built.ok()) {
    graph.train_step.reset();
    return built;
  }
  stats()["nodes-added"] = static_cast<int64_t>(graph.num_nodes() - before);
  stats()["parameters-trained"] = static_cast<int64_t>(graph.train_step->trainable.size());
  return true;
}

Status CheckTrainingRecord(const Graph& graph, const std::string& who) {
  if (graph.train_step) return Status::Ok();
  for (const Node* n : graph.NodeList()) {
    if (!n->IsInternal("TrainControl")) continue;
    return InvalidInput(
        "{}: {}: the graph holds a training step built by build-training but not its record "
        "(the loss, labels and loss scaler), which IR text dumped after build-training does "
        "not carry; a plan from it would not train. Compile the ONNX model with the training "
        "flags, or dump the IR before build-training (--stop-after=fuse-gelu) and compile that "
        "with them",
        who, n->Where());
  }
  return Status::Ok();
}

}  // namespace a8

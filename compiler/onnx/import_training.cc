// TrainingInfoProto import (see import_training.h).
#include "compiler/onnx/import_training.h"

#include <set>

namespace a8 {

StatusOr<OnnxTraining> MergeTrainingInfo(const onnx::ModelProto& model) {
  if (model.training_info_size() > 1) {
    return Unsupported("training_info: {} TrainingInfoProto entries; a800c supports one",
                       model.training_info_size());
  }
  const onnx::TrainingInfoProto& info = model.training_info(0);
  if (info.initialization().node_size() > 0 || info.initialization_binding_size() > 0) {
    return Unsupported(
        "training_info.initialization: initialization graphs are not supported; a800c takes the "
        "initial values from the initializers");
  }
  OnnxTraining out;
  out.merged = model;
  out.merged.clear_training_info();
  onnx::GraphProto* g = out.merged.mutable_graph();
  std::set<std::string> known;
  for (const onnx::ValueInfoProto& vi : g->input()) known.insert(vi.name());
  for (const onnx::TensorProto& t : g->initializer()) known.insert(t.name());
  const onnx::GraphProto& algo = info.algorithm();
  for (const onnx::ValueInfoProto& vi : algo.input()) {
    if (known.insert(vi.name()).second) *g->add_input() = vi;
  }
  for (const onnx::TensorProto& t : algo.initializer()) {
    if (!known.insert(t.name()).second) {
      return InvalidInput(
          "training_info.algorithm: initializer '{}' is already a value of the "
          "model's graph",
          t.name());
    }
    *g->add_initializer() = t;
  }
  for (const onnx::NodeProto& n : algo.node()) *g->add_node() = n;
  for (const onnx::ValueInfoProto& vi : algo.value_info()) *g->add_value_info() = vi;
  std::set<std::string> outputs;
  for (const onnx::ValueInfoProto& vi : g->output()) outputs.insert(vi.name());
  for (const onnx::ValueInfoProto& vi : algo.output()) {
    if (outputs.insert(vi.name()).second) *g->add_output() = vi;
  }
  std::set<std::string> initializers;
  for (const onnx::TensorProto& t : g->initializer()) initializers.insert(t.name());
  for (const onnx::StringStringEntryProto& b : info.update_binding()) {
    if (initializers.count(b.key()) == 0) {
      return InvalidInput("training_info.update_binding: '{}' is not an initializer", b.key());
    }
    out.updates.emplace_back(b.key(), b.value());
  }
  return out;
}

Status ApplyTrainingBindings(const OnnxTraining& training, Graph& graph) {
  for (const auto& [target_name, value_name] : training.updates) {
    Value* target = graph.FindValue(target_name);
    Value* value = graph.FindValue(value_name);
    if (target == nullptr || target->producer() != nullptr) {
      return InvalidInput("training_info.update_binding: '{}' is not an initializer", target_name);
    }
    if (value == nullptr) {
      return InvalidInput(
          "training_info.update_binding: '{}' (bound to '{}') is not a value of "
          "the algorithm",
          value_name, target_name);
    }
    if (target->role() == ValueRole::kConstant) target->set_role(ValueRole::kState);
    graph.AddUpdate(target, value);
  }
  graph.train_step.emplace().from_model = true;
  return Status::Ok();
}

}  // namespace a8

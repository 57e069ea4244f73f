// ONNX's own training format: a model whose TrainingInfoProto gives the training step.
//
// A TrainingInfoProto holds an `algorithm` graph that may read every value of the model's graph
// (typically: a loss, a `Gradient` node, an optimizer such as ai.onnx.preview.training.Adam) and
// `update_binding`s saying which initializer takes which algorithm output after each step.
// a800c merges the algorithm into the model's graph before import (its inputs, initializers,
// nodes and outputs are appended; its outputs become plan outputs), then records the bindings
// as state updates (Graph::AddUpdate) and marks the graph as an ONNX training step
// (Graph::train_step, from_model): `expand-gradient` expands the Gradient nodes, no loss or
// optimizer is added. Supported: one TrainingInfoProto whose `initialization` graph is empty
// (initial values come from the initializers); anything else is a clear Unsupported error.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

struct OnnxTraining {
  onnx::ModelProto merged;  // the model with the algorithm merged in, training_info cleared
  std::vector<std::pair<std::string, std::string>> updates;  // initializer <- algorithm output
};

// Merges `model.training_info(0)` into a copy of the model.
StatusOr<OnnxTraining> MergeTrainingInfo(const onnx::ModelProto& model);

// After import: turns the bindings into state updates (a target initializer that was imported
// as a constant becomes state) and sets graph.train_step (from_model).
Status ApplyTrainingBindings(const OnnxTraining& training, Graph& graph);

}  // namespace a8

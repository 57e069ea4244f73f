// Upgrades a freshly imported node from an older ONNX version to its op's canonical form
// (OpDef::canonical), so that passes and kernels see one form per op.
//
// The upgrades are the attribute -> input moves ONNX made over time; each new input is a graph
// constant named `<node>.<field>` (made unique):
//   Unsqueeze/Squeeze axes (<13), ReduceSum axes (<13), other Reduce* axes (<18),
//   Split split (<13; and num_outputs when the canonical form is Split-18), Slice
//   starts/ends/axes (<10), Clip min/max (<11), Pad pads/value (<11), Dropout ratio (<12).
// Softmax/LogSoftmax/Hardmax before 13 coerce their input to 2D at `axis`; that equals the
// version-13 meaning only when `axis` is the last axis, so it is accepted only then (the rank
// must be known from the model's declared types or onnx's shape inference), else Unsupported
// naming the node. BatchNormalization-1/6/7/9 becomes 14's form: `consumed_inputs` and `spatial`
// (=1; spatial=0 is Unsupported) and `is_test` (checked against the outputs) go, and more outputs
// than Y mean training_mode=1 (the importer drops the unread saved_mean/saved_var outputs).
// Dropout-7 with its mask output (typed like the data, bool from 10 on) is Unsupported.
// Ops without an entry here did not change form between the versions a800c implements.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

struct UpgradeContext {
  Graph* graph = nullptr;
  // A value name unused by the graph and by the ONNX model being imported.
  std::function<std::string(const std::string& base)> fresh_name;
  // The rank / element type the model declares (or onnx infers) for a value, when known.
  std::function<std::optional<int64_t>(const Value* v)> known_rank;
  std::function<std::optional<DType>(const Value* v)> known_dtype;
};

// `from` is the node's resolved since_version, `to` the OpDef's canonical version.
Status UpgradeNode(Node* node, int from, int to, const UpgradeContext& ctx);

}  // namespace a8

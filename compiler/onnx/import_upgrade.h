// Upgrades a freshly imported node from an older ONNX version to its op's canonical form
// (OpDef::canonical), so that passes and kernels see one form per op. Every version of every
// supported op back to opset 1 is upgraded with its exact meaning (tests/onnx/
// schema_history_test.py runs each against onnxruntime).
//
// The attribute -> input moves ONNX made over time; each new input is a graph constant named
// `<node>.<field>` (made unique):
//   Unsqueeze/Squeeze axes (<13), ReduceSum axes (<13), other Reduce* axes (<18),
//   Split split (<13; and num_outputs when the canonical form is Split-18), Slice
//   starts/ends/axes (<10), Clip min/max (<11), Pad pads (`paddings` in Pad-1)/value (<11),
//   Dropout ratio (<12), Reshape-1 shape, Tile-1 (tiles, axis) -> Tile-6 repeats, TopK-1 k (<10).
// The opset 1-6 attributes:
//   `consumed_inputs` (version 1, a memory hint) is dropped; Gemm-1/6's `broadcast` is dropped
//   (broadcast=1 is Gemm-7's broadcast, broadcast=0 required C to be [M, N]); Concat-1 without
//   axis gets axis=1; Cast-1's `to` name ("FLOAT") becomes its number; Selu-1 gets its own
//   defaults (alpha 1.6732, gamma 1.0507); Dropout-1/6's `is_test` is dropped (a800c's Dropout is
//   active exactly when the graph is trained).
// Rewrites that add nodes (import_upgrade_legacy.h): legacy broadcasting of Add/Sub/Mul/Div/Pow/
// Equal/Greater/Less/And/Or/Xor before 7, Softmax/LogSoftmax/Hardmax's 2-D coercion before 13,
// Dropout-1/6/7's mask of the data's type.
// BatchNormalization-1/6/7/9 becomes 14's form: `consumed_inputs` and `spatial` (=1; spatial=0 is
// Unsupported) and `is_test` (checked against the outputs) go, and more outputs than Y mean
// training_mode=1 (the importer drops the unread saved_mean/saved_var outputs).
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

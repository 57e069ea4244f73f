// ONNX -> IR.
//
// Reads `.onnx` (binary protobuf, external data resolved next to the model) or `.onnxtxt`
// (ONNX text syntax, parsed with onnx's own OnnxParser). onnx's checker is not used: Debian's
// libonnx knows opsets up to 17 only; a800c checks each node against its own op table instead
// (ResolveOpVersion, CheckNodeAgainstOpDef), so a model at a newer opset imports whenever its ops
// did not change since a version a800c implements.
//
// What import guarantees:
// - every node's op is known and implemented at the model's opset, else an error naming the node;
// - older op forms are upgraded to the canonical form of the op table (attribute -> input for
//   Unsqueeze/Squeeze/Reduce*/Split/Slice/Clip/Pad/Dropout), node.version() = OpDef::canonical;
// - initializers become parameters (float) or constants (integer/bool, and float initializers
//   that feed only shape-like operands); Constant nodes become constants;
// - symbolic dims of graph inputs are bound from `shapes`, `dims` (by name) and `batch`; a dim
//   left unbound is an error listing every such dim, its input and the flag that sets it, and a
//   negative dim in the model is an error (a dim is never silently 1);
// - graph inputs named in `bound` become constants with that data (before shape inference, so
//   shapes that arrive as inputs are static);
// - unnamed nodes get names `<Op>_<index>`; every value keeps its ONNX name;
// - external data: relative paths only, no `..`, no symlink out of the model's folder, offset and
//   length inside the file.
// The result has the declared input/output types; run shape-inference for the rest.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace onnx {
class ModelProto;
}

namespace a8 {

struct ImportOptions {
  // `--shape=NAME:D0xD1x...`: full shapes for named inputs.
  std::map<std::string, std::vector<int64_t>> shapes;
  // `--batch=N`: binds the first dim of every input whose first dim is dynamic (and, when that
  // dim is named, the name wherever else it appears).
  std::optional<int64_t> batch;
  // `--dim=NAME=V`: binds the symbolic dim NAME (an ONNX dim_param) in every input.
  std::map<std::string, int64_t> dims;
  // `--bind=NAME=FILE.npy`: graph inputs frozen to constants with this data (dtype and declared
  // dims must match).
  std::map<std::string, TensorDataPtr> bound;
  // Warnings (e.g. a dynamic dim bound to 1) are appended here; the driver prints them.
  std::vector<std::string>* warnings = nullptr;
  // Float initializers that Identity nodes read, with the names those Identity nodes give them:
  // the mark of an exporter that merged initializers of equal values (the driver warns about it
  // when it trains the model: the names train as one parameter).
  std::map<std::string, std::vector<std::string>>* identity_aliases = nullptr;
  // Folds a value computed from constants at import (the driver gives the compiler's constant
  // evaluator): what decides control flow (an If's cond, a Loop's trip count) may be computed.
  // Unset: such values must be constants or --bind'ed inputs. Unsupported when `v` does not fold.
  std::function<StatusOr<TensorDataPtr>(Graph& g, Value* v)> fold_value;
  // When set, ImportOnnxFile stores here the content hash of the model file's bytes
  // (ContentHash, compiler/support/hash.h), computed on the bytes it read: the file is read once.
  std::string* model_hash = nullptr;
};

// Imports a model file; the format follows the extension (`.onnxtxt` is text, anything else
// binary). Errors start with the file name.
StatusOr<std::unique_ptr<Graph>> ImportOnnxFile(const std::string& path,
                                                const ImportOptions& opts = {});
// Imports an in-memory binary model. `model_dir` resolves external data ("" = none allowed).
StatusOr<std::unique_ptr<Graph>> ImportOnnxBytes(const std::string& bytes,
                                                 const std::string& source_name,
                                                 const std::string& model_dir,
                                                 const ImportOptions& opts = {});
// Imports a parsed ModelProto.
StatusOr<std::unique_ptr<Graph>> ImportOnnxModel(const onnx::ModelProto& model,
                                                 const std::string& source_name,
                                                 const std::string& model_dir,
                                                 const ImportOptions& opts = {});
// The same for a ModelProto the caller gives up: each float initializer's bytes leave the message
// as they enter the IR, so the weights are held once, not twice (ImportOnnxFile uses it).
StatusOr<std::unique_ptr<Graph>> ImportOnnxModelConsuming(onnx::ModelProto&& model,
                                                          const std::string& source_name,
                                                          const std::string& model_dir,
                                                          const ImportOptions& opts = {});
// The same for a model whose float initializers' raw_data were left out of the message
// (StripInitializerData, model_scan.h): `raw_data` per initializer, views of a private file
// mapping that `mapping` keeps alive. The IR's weights are views of it too (TensorBytes): the
// graph holds `mapping` for as long as any of them lives, and nothing is copied.
StatusOr<std::unique_ptr<Graph>> ImportOnnxModelWithRawData(
    onnx::ModelProto&& model, const std::vector<std::optional<std::string_view>>& raw_data,
    std::shared_ptr<const void> mapping, const std::string& source_name,
    const std::string& model_dir, const ImportOptions& opts = {});

}  // namespace a8

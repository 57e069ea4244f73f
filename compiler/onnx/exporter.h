// IR -> ONNX (`--emit=onnx`).
//
// The result passes onnx.checker and runs in onnxruntime: graph inputs/outputs with their types,
// parameters, state and constants as initializers, nodes in IR order with their attributes.
// The default-domain opset is the model's opset, raised to the canonical version of any op the
// importer upgraded; every node must resolve, at that opset, to a version a800c implements in
// its canonical form, else an error. Internal `a8.*` ops cannot be exported until they have an
// ONNX lowering: an error naming the node.
#pragma once

#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace onnx {
class ModelProto;
}

namespace a8 {

StatusOr<std::string> ExportOnnxBytes(const Graph& g);
Status ExportOnnxModel(const Graph& g, onnx::ModelProto* model);

}  // namespace a8

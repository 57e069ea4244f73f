// What PyTorch's dynamo exporter says each initializer is.
//
// torch.onnx.export(dynamo=True) writes the ExportedProgram's graph signature into the graph's
// metadata (GraphProto.metadata_props, key "pkg.torch.export.ExportedProgram.graph_signature"):
// one line per input, e.g.
//   p_model_lm_head_weight: PARAMETER target='model.lm_head.weight'
//   b_model_model_rotary_emb_inv_freq: BUFFER target='model.model.rotary_emb.inv_freq' ...
// Without the exporter's optimizer (optimize=False) each initializer keeps the target's name.
// A float buffer (Llama's rotary inv_freq) is module state, not a parameter: the importer keeps
// it constant unless a BatchNormalization reads it (running statistics are trained as state).
#pragma once

#include <set>
#include <string>

namespace onnx {
class GraphProto;
}

namespace a8 {

inline constexpr char kTorchGraphSignatureKey[] =
    "pkg.torch.export.ExportedProgram.graph_signature";

// The targets of the signature's BUFFER lines; empty where the graph carries no signature.
// Reads GraphProto.metadata_props (field 16) whether the linked onnx knows the field (IR 10) or
// keeps it as an unknown field.
std::set<std::string> TorchExportBuffers(const onnx::GraphProto& graph);

// The BUFFER targets named in one signature text.
std::set<std::string> ParseTorchSignatureBuffers(const std::string& signature);

}  // namespace a8

// The importer's handling of SplitToSequence and SequenceAt (import_sequence.h): the split is
// recorded, each SequenceAt becomes the slice it selects.
#include "compiler/onnx/importer_internal.h"

namespace a8::onnx_import {

Status Importer::ImportSplitToSequence(int index, const std::string& where,
                                       const std::vector<Value*>& inputs,
                                       const std::map<std::string, Attribute>& attrs) {
  const onnx::NodeProto& n = *nodes_[index];
  if (n.output_size() != 1 || n.output(0).empty()) {
    return InvalidInput("{}: SplitToSequence has exactly one output", where);
  }
  // Readers other than SequenceAt are refused where they are imported (ImportNode).
  for (const onnx::ValueInfoProto& out : graph_.output()) {
    if (out.name() == n.output(0)) {
      return Unsupported("{}: output '{}' is a graph output; a800c has no sequence type", where,
                         out.name());
    }
  }
  A8_ASSIGN_OR_RETURN(SequenceSplit split, ParseSplitToSequence(where, inputs, attrs));
  sequences_.emplace(n.output(0), std::move(split));
  return Status::Ok();
}

Status Importer::ImportSequenceAt(int index, const std::string& where) {
  const onnx::NodeProto& n = *nodes_[index];
  if (n.input_size() != 2 || n.output_size() != 1 || n.output(0).empty()) {
    return InvalidInput("{}: SequenceAt takes input_sequence and position, and has one output",
                        where);
  }
  if (n.attribute_size() > 0) {
    return InvalidInput("{}: unknown attribute '{}'", where, n.attribute(0).name());
  }
  auto seq = sequences_.find(n.input(0));
  if (seq == sequences_.end()) {
    return Unsupported(
        "{}: input '{}' is not a sequence made by SplitToSequence; a800c takes no other "
        "sequences",
        where, n.input(0));
  }
  Value* position = g_->FindValue(n.input(1));
  if (position == nullptr) {
    return InvalidInput("{}: input 1 '{}' is not produced by any node, graph input or initializer",
                        where, n.input(1));
  }
  SequenceAtRequest req;
  req.name = node_names_[index];
  req.where = where;
  req.position = position;
  auto vi = value_info_.find(n.output(0));
  std::optional<TensorType> t = vi == value_info_.end() ? std::nullopt : StaticType(*vi->second);
  req.output = {n.output(0), t.value_or(TensorType{})};
  req.fresh_name = [this](const std::string& base) { return FreshName(base); };
  A8_ASSIGN_OR_RETURN(std::vector<DecomposedNode> nodes, EmitSequenceAt(*g_, seq->second, req));
  A8_RETURN_IF_ERROR(FinishMadeNodes(index, where, nodes));
  if (vi != value_info_.end()) RecordDeclaredType(nodes.back().node->output(0), *vi->second);
  return Status::Ok();
}

}  // namespace a8::onnx_import

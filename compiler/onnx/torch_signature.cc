// The dynamo exporter's graph signature (see torch_signature.h).
#include "compiler/onnx/torch_signature.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

#include <regex>
#include <sstream>

namespace a8 {
namespace {

constexpr int kGraphMetadataProps = 16;  // GraphProto.metadata_props (onnx 1.16, IR 10)

}  // namespace

std::set<std::string> ParseTorchSignatureBuffers(const std::string& signature) {
  static const std::regex kBuffer(R"(^\s*[^:\s]+:\s*BUFFER\s+target='([^']+)')");
  std::set<std::string> out;
  std::istringstream lines(signature);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, kBuffer)) out.insert(m[1].str());
  }
  return out;
}

std::set<std::string> TorchExportBuffers(const onnx::GraphProto& graph) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* refl = graph.GetReflection();
  const FieldDescriptor* field = graph.GetDescriptor()->FindFieldByNumber(kGraphMetadataProps);
  if (field != nullptr && field->is_repeated() &&
      field->type() == FieldDescriptor::TYPE_MESSAGE) {  // an onnx that knows the field
    for (int i = 0; i < refl->FieldSize(graph, field); ++i) {
      const google::protobuf::Message& e = refl->GetRepeatedMessage(graph, field, i);
      const FieldDescriptor* key = e.GetDescriptor()->FindFieldByName("key");
      const FieldDescriptor* value = e.GetDescriptor()->FindFieldByName("value");
      if (key == nullptr || value == nullptr) continue;
      if (e.GetReflection()->GetString(e, key) == kTorchGraphSignatureKey) {
        return ParseTorchSignatureBuffers(e.GetReflection()->GetString(e, value));
      }
    }
    return {};
  }
  const google::protobuf::UnknownFieldSet& unknown = refl->GetUnknownFields(graph);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& f = unknown.field(i);
    if (f.number() != kGraphMetadataProps ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    onnx::StringStringEntryProto e;
    if (e.ParseFromString(f.length_delimited()) && e.key() == kTorchGraphSignatureKey) {
      return ParseTorchSignatureBuffers(e.value());
    }
  }
  return {};
}

}  // namespace a8

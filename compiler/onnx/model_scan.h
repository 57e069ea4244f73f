// Finding a model's weights in its serialized bytes without parsing them into the message.
//
// A binary ONNX model is mapped, not read (import_file.cc). Parsing the mapping with protobuf would
// copy every initializer's raw_data into a std::string of the message; instead the protobuf wire
// format is walked once (ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto.raw_data
// = 9), the float initializers' raw_data are left out of a copy of the message (a few hundred
// KiB even for BERT-base), and each is found again as a view of the mapping. The IR keeps a
// weight as a view of it where its bytes are aligned for their element type, else copies it
// once (TensorFromOnnx).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace a8 {

struct ModelWithoutWeights {
  // The ModelProto without the raw_data of the graph's float initializers.
  std::string message;
  // Per GraphProto.initializer, in order: the raw_data left out of `message` (a view of the
  // scanned bytes), or nullopt where the initializer kept its data in the message (integer
  // tensors, which shape inference may read, typed fields, external data, small tensors).
  std::vector<std::optional<std::string_view>> raw_data;
};

// nullopt when `model` is not a protobuf of that shape that this walk understands (groups, a
// truncated field): the caller then parses the bytes whole, and protobuf names the problem.
std::optional<ModelWithoutWeights> StripInitializerData(std::string_view model);

// Gives back the whole pages inside `bytes`, a view of a private read-only file mapping, once they
// have been read for now: the process's resident memory then holds a copied weight once (in the
// IR), not also in the mapping. Advice only; the bytes stay readable (from the file, faulted in
// again when read, as the plan writer reads the weights the IR views).
void DropMappedPages(std::string_view bytes);

}  // namespace a8

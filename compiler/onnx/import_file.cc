// Reading a model: a file (binary or ONNX text) or in-memory bytes, into a ModelProto that
// ImportOnnxModel (importer.cc) turns into IR. Every error starts with the file name.
#include <google/protobuf/io/coded_stream.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "compiler/onnx/importer.h"
#include "compiler/support/hash.h"

namespace a8 {
namespace {

StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return InvalidInput("is a directory, not a model");
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput("cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return InvalidInput("cannot read the file");
  return ss.str();
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status WithSource(const std::string& source, const Status& s) {
  return source.empty() ? s : s.WithContext(source);
}

}  // namespace

namespace {

// Parses a binary model; errors name `source_name`.
Status ParseModelBytes(const std::string& bytes, const std::string& source_name,
                       onnx::ModelProto* model) {
  if (bytes.empty()) {
    return WithSource(source_name, InvalidInput("the file is empty, not an ONNX model"));
  }
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return WithSource(source_name,
                      Unsupported("the model is {} bytes; protobuf reads at most 2 GiB (store "
                                  "the weights as external data)",
                                  bytes.size()));
  }
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT_MAX);
  if (!model->ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    return WithSource(source_name,
                      InvalidInput("not a valid ONNX model: the protobuf does not parse "
                                   "(truncated or corrupt file?)"));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Graph>> ImportOnnxBytes(const std::string& bytes,
                                                 const std::string& source_name,
                                                 const std::string& model_dir,
                                                 const ImportOptions& opts) {
  onnx::ModelProto model;
  A8_RETURN_IF_ERROR(ParseModelBytes(bytes, source_name, &model));
  return ImportOnnxModel(model, source_name, model_dir, opts);
}

StatusOr<std::unique_ptr<Graph>> ImportOnnxFile(const std::string& path,
                                                const ImportOptions& opts) {
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status().WithContext(path);
  if (opts.model_hash != nullptr) *opts.model_hash = ContentHash(*bytes);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (!EndsWith(path, ".onnxtxt")) {
    onnx::ModelProto model;
    A8_RETURN_IF_ERROR(ParseModelBytes(*bytes, path, &model));
    // The file's bytes are hashed and parsed: drop them before the weights are copied into the
    // IR, so that the model is held twice at most, not three times.
    std::string().swap(*bytes);
    return ImportOnnxModel(model, path, dir, opts);
  }

  onnx::ModelProto model;
  try {
    onnx::OnnxParser parser(bytes->c_str());
    auto status = parser.Parse(model);
    if (!status.IsOK()) {
      return InvalidInput("{}: ONNX text does not parse: {}", path, status.ErrorMessage());
    }
    if (!parser.EndOfInput()) {
      return InvalidInput("{}: ONNX text does not parse: unexpected text after the model", path);
    }
  } catch (const std::exception& e) {
    return InvalidInput("{}: ONNX text does not parse: {}", path, e.what());
  }
  return ImportOnnxModel(model, path, dir, opts);
}

}  // namespace a8

// Reading a model: a file (binary or ONNX text) or in-memory bytes, into a ModelProto that
// ImportOnnxModel (importer.cc) turns into IR. Every error starts with the file name.
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

#include "compiler/onnx/importer.h"
#include "compiler/onnx/model_scan.h"
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

// A model file for protobuf, read in 1 MiB pieces, each byte hashed once as it goes by: the
// file is never held whole (the parsed message is all that stays), nor read twice for the hash.
class HashingFileStream : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit HashingFileStream(int fd) : in_(fd, 1 << 20) {}

  bool Next(const void** data, int* size) override {
    if (!in_.Next(data, size)) return false;
    const int64_t end = in_.ByteCount();
    if (end > hashed_) {  // bytes handed back by BackUp come again: hash only the new ones
      const int64_t fresh = end - hashed_;
      hasher_.Update(std::string_view(static_cast<const char*>(*data) + (*size - fresh),
                                      static_cast<size_t>(fresh)));
      hashed_ = end;
    }
    return true;
  }
  void BackUp(int count) override { in_.BackUp(count); }
  bool Skip(int count) override {  // through Next, so that skipped bytes are hashed too
    while (count > 0) {
      const void* data;
      int size;
      if (!Next(&data, &size)) return false;
      if (size > count) BackUp(size - count);
      count -= std::min(size, count);
    }
    return true;
  }
  int64_t ByteCount() const override { return in_.ByteCount(); }

  // Hashes whatever the parser left unread; false on a read error.
  bool Drain() {
    const void* data;
    int size;
    while (Next(&data, &size)) {
    }
    return in_.GetErrno() == 0;
  }
  std::string Hash() const { return hasher_.Finish(); }

 private:
  google::protobuf::io::FileInputStream in_;
  ContentHasher hasher_;
  int64_t hashed_ = 0;
};

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

// A model file mapped into memory: hashed in one pass (on a second thread, beside the rest),
// walked for its weights (model_scan.h) and parsed without them. The IR's weights are views of the
// mapping where their bytes are aligned for their element type (`mapping` keeps it alive for as
// long as any of them lives), else copied once; the mapping's pages are dropped behind the hash
// and behind each copy, so that a weight is resident about once.
StatusOr<std::unique_ptr<Graph>> ImportMapped(std::string_view bytes,
                                              std::shared_ptr<const void> mapping,
                                              const std::string& path, const std::string& dir,
                                              const ImportOptions& opts) {
  std::string hash;
  std::thread hasher;
  if (opts.model_hash != nullptr) {
    hasher = std::thread([bytes, &hash] {
      constexpr size_t kChunk = size_t{8} << 20;
      ContentHasher h;
      for (size_t at = 0; at < bytes.size(); at += kChunk) {
        const std::string_view chunk = bytes.substr(at, kChunk);
        h.Update(chunk);
        DropMappedPages(chunk);
      }
      hash = h.Finish();
    });
  }
  auto import = [&]() -> StatusOr<std::unique_ptr<Graph>> {
    ImportOptions without_hash = opts;  // set below, once the hasher is done
    without_hash.model_hash = nullptr;
    onnx::ModelProto model;
    std::optional<ModelWithoutWeights> stripped = StripInitializerData(bytes);
    if (stripped.has_value() && model.ParseFromString(stripped->message) &&
        model.training_info_size() == 0) {
      stripped->message = std::string();
      return ImportOnnxModelWithRawData(std::move(model), stripped->raw_data, mapping, path, dir,
                                        without_hash);
    }
    // Bytes the walk does not take, a message protobuf rejects, or training_info (imported from
    // the whole message): parse it all, and let protobuf name what is wrong.
    model.Clear();
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    in.SetTotalBytesLimit(INT_MAX);
    if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
      return InvalidInput(
                 "not a valid ONNX model: the protobuf does not parse (truncated or corrupt "
                 "file?)")
          .WithContext(path);
    }
    return ImportOnnxModelConsuming(std::move(model), path, dir, without_hash);
  };
  StatusOr<std::unique_ptr<Graph>> g = import();
  if (hasher.joinable()) hasher.join();
  if (opts.model_hash != nullptr) *opts.model_hash = std::move(hash);
  return g;
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
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (!EndsWith(path, ".onnxtxt")) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      return InvalidInput("is a directory, not a model").WithContext(path);
    }
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return InvalidInput("cannot open the file").WithContext(path);
    struct stat st;
    const bool sized = fstat(fd, &st) == 0;
    const uint64_t size = sized ? static_cast<uint64_t>(st.st_size) : 0;
    Status shape = !sized      ? InvalidInput("cannot read the file")
                   : size == 0 ? InvalidInput("the file is empty, not an ONNX model")
                   : size > static_cast<uint64_t>(INT_MAX)
                       ? Unsupported(
                             "the model is {} bytes; protobuf reads at most 2 GiB (store "
                             "the weights as external data)",
                             size)
                       : Status::Ok();
    if (!shape.ok()) {
      close(fd);
      return shape.WithContext(path);
    }
    if (S_ISREG(st.st_mode)) {
      void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map != MAP_FAILED) {
        close(fd);  // the mapping keeps the file
        std::shared_ptr<const void> mapping(
            map, [size](const void* m) { munmap(const_cast<void*>(m), size); });
        return ImportMapped(std::string_view(static_cast<const char*>(map), size),
                            std::move(mapping), path, dir, opts);
      }
    }
    // Not a regular file (a pipe), or it cannot be mapped: read it as a stream.
    onnx::ModelProto model;
    HashingFileStream stream(fd);
    bool parsed;
    {
      google::protobuf::io::CodedInputStream in(&stream);
      in.SetTotalBytesLimit(INT_MAX);
      parsed = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
    }
    const bool read_ok = stream.Drain();
    close(fd);
    if (!read_ok) return InvalidInput("cannot read the file").WithContext(path);
    if (!parsed) {
      return InvalidInput(
                 "not a valid ONNX model: the protobuf does not parse (truncated or corrupt "
                 "file?)")
          .WithContext(path);
    }
    if (opts.model_hash != nullptr) *opts.model_hash = stream.Hash();
    return ImportOnnxModelConsuming(std::move(model), path, dir, opts);
  }
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status().WithContext(path);
  if (opts.model_hash != nullptr) *opts.model_hash = ContentHash(*bytes);

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

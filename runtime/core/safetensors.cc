#include "runtime/core/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "compiler/plan/plan_file.h"

namespace a8 {
namespace {

using Json = nlohmann::json;

// Larger headers are refused before parsing, as the safetensors reference reader does.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

constexpr struct {
  DType dtype;
  const char* name;
} kDTypeNames[] = {
    {DType::kF32, "F32"},   {DType::kF16, "F16"}, {DType::kBF16, "BF16"}, {DType::kF64, "F64"},
    {DType::kI64, "I64"},   {DType::kI32, "I32"}, {DType::kI8, "I8"},     {DType::kU8, "U8"},
    {DType::kBool, "BOOL"}, {DType::kI16, "I16"}, {DType::kU16, "U16"},   {DType::kU32, "U32"},
    {DType::kU64, "U64"},
};

std::string ShapeText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// One header entry: dtype, shape and offsets, checked against the data size.
struct Entry {
  SafetensorsTensor tensor;
  uint64_t begin = 0, end = 0;
};

StatusOr<Entry> ParseEntry(const std::string& name, const Json& v, uint64_t data_bytes,
                           const std::string& where) {
  if (!v.is_object()) return InvalidInput("{}: not an object", where);
  Entry e;
  e.tensor.name = name;
  auto dtype = v.find("dtype");
  if (dtype == v.end() || !dtype->is_string())
    return InvalidInput("{}: 'dtype' is missing or not a string", where);
  auto parsed = ParseSafetensorsDType(dtype->get<std::string>());
  if (!parsed.ok()) return parsed.status().WithContext(where);
  e.tensor.dtype = *parsed;
  auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array())
    return InvalidInput("{}: 'shape' is missing or not an array", where);
  uint64_t count = 1;
  for (const Json& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 62))
      return InvalidInput("{}: 'shape' holds {}, not a dimension", where, d.dump());
    uint64_t n = d.get<uint64_t>();
    if (n != 0 && count > (uint64_t{1} << 62) / n)
      return InvalidInput("{}: 'shape' has too many elements", where);
    count *= n;
    e.tensor.shape.push_back(static_cast<int64_t>(n));
  }
  auto offsets = v.find("data_offsets");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
    return InvalidInput("{}: 'data_offsets' is missing or not two offsets", where);
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_bytes)
    return InvalidInput("{}: data_offsets [{}, {}] are outside the data ({} bytes)", where, e.begin,
                        e.end, data_bytes);
  uint64_t want = count * DTypeSize(e.tensor.dtype);
  if (e.end - e.begin != want)
    return InvalidInput("{}: data_offsets [{}, {}] hold {} bytes, but {} {} needs {}", where,
                        e.begin, e.end, e.end - e.begin, SafetensorsDTypeName(e.tensor.dtype),
                        ShapeText(e.tensor.shape), want);
  return e;
}

constexpr char kMetadataCrcKey[] = "crc32c:__metadata__";

bool IsCrcKey(const std::string& key) { return key.rfind(kSafetensorsCrcPrefix, 0) == 0; }

std::string CrcText(uint32_t crc) { return fmt::format("{:08x}", crc); }

uint32_t MetadataCrc(const std::map<std::string, std::string>& metadata) {
  uint32_t crc = 0;
  for (const auto& [key, value] : metadata) {
    if (key == kMetadataCrcKey) continue;
    crc = Crc32c(key.data(), key.size() + 1, crc);  // with the terminating NUL
    crc = Crc32c(value.data(), value.size() + 1, crc);
  }
  return crc;
}

}  // namespace

StatusOr<std::map<std::string, std::string>> ReadSafetensorsMetadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput("{}: cannot open file", path);
  unsigned char len[8];
  if (!in.read(reinterpret_cast<char*>(len), 8))
    return InvalidInput("{}: too short for a safetensors file (8-byte header length)", path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{len[i]} << (8 * i);
  if (n > kMaxHeaderBytes) return InvalidInput("{}: header length {} is too large", path, n);
  std::string text(n, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(n)))
    return InvalidInput("{}: the file ends inside its {}-byte header", path, n);
  if (text.find('\0') != std::string::npos)
    return InvalidInput("{}: the header holds a NUL byte: it is not JSON", path);
  Json header = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return InvalidInput("{}: the header is not a JSON object", path);
  std::map<std::string, std::string> metadata;
  auto it = header.find("__metadata__");
  if (it == header.end()) return metadata;
  if (!it->is_object()) return InvalidInput("{}: __metadata__ is not an object", path);
  for (const auto& [key, v] : it->items()) {
    if (!v.is_string()) return InvalidInput("{}: __metadata__ '{}' is not a string", path, key);
    metadata[key] = v.get<std::string>();
  }
  return metadata;
}

void AddSafetensorsChecksums(const std::vector<SafetensorsTensor>& tensors,
                             std::map<std::string, std::string>* metadata) {
  for (const SafetensorsTensor& t : tensors)
    (*metadata)[kSafetensorsCrcPrefix + t.name] = CrcText(Crc32c(t.data.data(), t.data.size()));
  (*metadata)[kMetadataCrcKey] = CrcText(MetadataCrc(*metadata));
}

bool HasSafetensorsChecksums(const SafetensorsFile& file) {
  return std::any_of(file.metadata.begin(), file.metadata.end(),
                     [](const auto& kv) { return IsCrcKey(kv.first); });
}

Status VerifySafetensorsChecksums(const SafetensorsFile& file, const std::string& source) {
  auto it = file.metadata.find(kMetadataCrcKey);
  if (it == file.metadata.end())
    return InvalidInput("{}: __metadata__ has no '{}': the file carries no checksums", source,
                        kMetadataCrcKey);
  if (std::string want = CrcText(MetadataCrc(file.metadata)); it->second != want)
    return InvalidInput(
        "{}: checksum mismatch in __metadata__ (crc32c {}, recorded {}): the header is corrupt",
        source, want, it->second);
  std::set<std::string> named;
  for (const SafetensorsTensor& t : file.tensors) {
    auto crc = file.metadata.find(kSafetensorsCrcPrefix + t.name);
    if (crc == file.metadata.end())
      return InvalidInput("{}: tensor '{}' has no checksum ('{}{}' is missing)", source, t.name,
                          kSafetensorsCrcPrefix, t.name);
    if (std::string got = CrcText(Crc32c(t.data.data(), t.data.size())); got != crc->second)
      return InvalidInput(
          "{}: tensor '{}': checksum mismatch (crc32c of its {} bytes is {}, recorded {}): the "
          "tensor's data is corrupt",
          source, t.name, t.data.size(), got, crc->second);
    named.insert(t.name);
  }
  for (const auto& [key, value] : file.metadata)
    if (IsCrcKey(key) && key != kMetadataCrcKey &&
        !named.count(key.substr(sizeof(kSafetensorsCrcPrefix) - 1)))
      return InvalidInput("{}: __metadata__ '{}' is the checksum of a tensor the file lacks",
                          source, key);
  return Status::Ok();
}

const char* SafetensorsDTypeName(DType dtype) {
  for (const auto& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  return "?";
}

StatusOr<DType> ParseSafetensorsDType(std::string_view name) {
  for (const auto& d : kDTypeNames)
    if (name == d.name) return d.dtype;
  return InvalidInput(
      "dtype '{}' is not one a800c reads (F32 F16 BF16 F64 I64 I32 I16 I8 U64 U32 U16 U8 BOOL)",
      name);
}

StatusOr<std::string> SerializeSafetensors(const std::vector<SafetensorsTensor>& tensors,
                                           const std::map<std::string, std::string>& metadata) {
  std::vector<const SafetensorsTensor*> order;
  for (const SafetensorsTensor& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
    return a->name < b->name;
  });
  Json header = Json::object();
  uint64_t at = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const SafetensorsTensor& t = *order[i];
    if (t.name.empty() || t.name == "__metadata__" || (i > 0 && order[i - 1]->name == t.name))
      return Internal("safetensors: tensor name '{}' is empty, reserved or not unique", t.name);
    uint64_t count = 1;
    for (int64_t d : t.shape) count *= static_cast<uint64_t>(d);
    if (count * DTypeSize(t.dtype) != t.data.size())
      return Internal("safetensors: tensor '{}': {} bytes for {} {}", t.name, t.data.size(),
                      SafetensorsDTypeName(t.dtype), ShapeText(t.shape));
    header[t.name] = {{"dtype", SafetensorsDTypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {at, at + t.data.size()}}};
    at += t.data.size();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump(-1, ' ', false, Json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.reserve(8 + text.size() + at);
  out += text;
  for (const SafetensorsTensor* t : order) out.append(t->data);
  return out;
}

StatusOr<SafetensorsFile> ParseSafetensors(std::string bytes, const std::string& source) {
  SafetensorsFile file;
  file.bytes = std::make_shared<const std::string>(std::move(bytes));
  const std::string& b = *file.bytes;
  if (b.size() < 8)
    return InvalidInput("{}: {} bytes: too short for a safetensors file (8-byte header length)",
                        source, b.size());
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<uint8_t>(b[i])} << (8 * i);
  if (n > kMaxHeaderBytes || n > b.size() - 8)
    return InvalidInput("{}: header length {} does not fit the file ({} bytes)", source, n,
                        b.size());
  // A NUL byte is never valid JSON (strings escape control characters), but nlohmann's parser
  // takes it for the end of the input and would ignore whatever follows (found by flipping one
  // bit of a checkpoint's space padding: checkpoint_integrity_test.cc).
  if (std::memchr(b.data() + 8, 0, n) != nullptr)
    return InvalidInput("{}: the header holds a NUL byte: it is not JSON", source);
  Json header = Json::parse(b.begin() + 8, b.begin() + 8 + static_cast<std::ptrdiff_t>(n), nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return InvalidInput("{}: the header is not a JSON object", source);
  const uint64_t data_at = 8 + n, data_bytes = b.size() - data_at;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) return InvalidInput("{}: __metadata__ is not an object", source);
      for (const auto& [key, v] : value.items()) {
        if (!v.is_string())
          return InvalidInput("{}: __metadata__ '{}' is not a string", source, key);
        file.metadata[key] = v.get<std::string>();
      }
      continue;
    }
    A8_ASSIGN_OR_RETURN(
        Entry e, ParseEntry(name, value, data_bytes, fmt::format("{}: tensor '{}'", source, name)));
    entries.push_back(std::move(e));
  }
  // The tensors tile the data exactly, as the safetensors reference reader requires.
  std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
    return x.begin < y.begin || (x.begin == y.begin && x.end < y.end);
  });
  uint64_t at = 0;
  for (const Entry& e : entries) {
    if (e.begin != at)
      return InvalidInput("{}: tensor '{}': data_offsets [{}, {}] {} the previous tensor's end {}",
                          source, e.tensor.name, e.begin, e.end,
                          e.begin < at ? "overlap" : "leave a gap after", at);
    at = e.end;
  }
  if (at != data_bytes)
    return InvalidInput("{}: the tensors hold {} bytes, the file has {} bytes of data", source, at,
                        data_bytes);
  for (Entry& e : entries) {
    e.tensor.data = std::string_view(b).substr(data_at + e.begin, e.end - e.begin);
    file.tensors.push_back(std::move(e.tensor));
  }
  return file;
}

}  // namespace a8

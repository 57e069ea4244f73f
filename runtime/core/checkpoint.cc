#include "runtime/core/checkpoint.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "compiler/plan/plan_file.h"
#include "compiler/support/file_io.h"

namespace a8 {
namespace {

using Json = nlohmann::json;

// Larger headers are refused before parsing, as the safetensors reference reader does.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

constexpr struct {
  DType dtype;
  const char* name;
} kDTypeNames[] = {
    {DType::kF32, "F32"}, {DType::kF16, "F16"}, {DType::kBF16, "BF16"},
    {DType::kF64, "F64"}, {DType::kI64, "I64"}, {DType::kI32, "I32"},
    {DType::kI8, "I8"},   {DType::kU8, "U8"},   {DType::kBool, "BOOL"},
};

std::string ShapeText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

template <typename T>
bool ParseNumber(const std::string& text, T* out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && p == end && !text.empty();
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

// Metadata keys SerializeCheckpoint writes itself.
constexpr const char* kReservedKeys[] = {"format",    "format_version", "model_name", "model_hash",
                                         "plan_hash", "precision",      "step",       "seed"};

bool IsReservedKey(const std::string& key) {
  return std::find(std::begin(kReservedKeys), std::end(kReservedKeys), key) !=
         std::end(kReservedKeys);
}

}  // namespace

const char* SafetensorsDTypeName(DType dtype) {
  for (const auto& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  return "?";
}

StatusOr<DType> ParseSafetensorsDType(std::string_view name) {
  for (const auto& d : kDTypeNames)
    if (name == d.name) return d.dtype;
  return InvalidInput("dtype '{}' is not one a800c reads (F32 F16 BF16 F64 I64 I32 I8 U8 BOOL)",
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

std::string PlanHash(const plan::Plan& plan) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    plan.SerializeToCodedStream(&coded);
  }
  return "fnv1a64:" + Fnv1a64Hex(bytes);
}

StatusOr<std::string> SerializeCheckpoint(const Executor& ex, const CheckpointInfo& info) {
  const plan::Plan& p = ex.plan();
  std::vector<SafetensorsTensor> tensors;
  // Host copies of the buffers (they may be device memory); the views below point into them.
  std::vector<std::string> host(ex.checkpoint_buffers().size());
  size_t next = 0;
  for (int id : ex.checkpoint_buffers()) {
    const plan::Buffer& b = p.buffers(id);
    SafetensorsTensor t;
    t.name = b.name();
    t.dtype = static_cast<DType>(b.type().dtype());
    t.shape.assign(b.type().dims().begin(), b.type().dims().end());
    std::string& bytes = host[next++];
    bytes.resize(b.bytes());
    A8_RETURN_IF_ERROR(ex.ReadBuffer(id, bytes.data()));
    t.data = bytes;
    tensors.push_back(std::move(t));
  }
  std::map<std::string, std::string> meta = {
      {"format", kCheckpointFormat},
      {"format_version", std::to_string(kCheckpointFormatVersion)},
      {"model_name", p.model_name()},
      {"model_hash", p.model_hash()},
      {"plan_hash", PlanHash(p)},
      {"precision", p.precision()},
      {"step", std::to_string(ex.step())},
      {"seed", std::to_string(info.seed)},
  };
  for (const auto& [key, value] : info.extra)
    if (IsReservedKey(key) || !meta.emplace(key, value).second)
      return Internal("checkpoint metadata '{}' is reserved", key);
  return SerializeSafetensors(tensors, meta);
}

Status SaveCheckpoint(const Executor& ex, const CheckpointInfo& info, const std::string& path) {
  A8_ASSIGN_OR_RETURN(std::string bytes, SerializeCheckpoint(ex, info));
  return WriteFileAtomically(path, bytes);
}

StatusOr<CheckpointInfo> RestoreCheckpoint(Executor& ex, std::string bytes,
                                           const std::string& source) {
  A8_ASSIGN_OR_RETURN(SafetensorsFile file, ParseSafetensors(std::move(bytes), source));
  auto meta = [&](const char* key) -> std::string {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? "" : it->second;
  };
  if (meta("format") != kCheckpointFormat)
    return InvalidInput("{}: not an a800c checkpoint (__metadata__ 'format' is '{}', not '{}')",
                        source, meta("format"), kCheckpointFormat);
  int version = 0;
  if (!ParseNumber(meta("format_version"), &version) || version < 1)
    return InvalidInput("{}: __metadata__ 'format_version' '{}' is not a version", source,
                        meta("format_version"));
  if (version > kCheckpointFormatVersion)
    return InvalidInput("{}: checkpoint format version {} is newer than this a800c reads ({})",
                        source, version, kCheckpointFormatVersion);
  const plan::Plan& p = ex.plan();
  std::string plan_hash = PlanHash(p);
  if (meta("plan_hash") != plan_hash)
    return InvalidInput(
        "{}: the checkpoint was written for another plan (plan {}, model '{}' {}); this plan is "
        "{} (model '{}' {}): resume with the plan that wrote it",
        source, meta("plan_hash"), meta("model_name"), meta("model_hash"), plan_hash,
        p.model_name(), p.model_hash());
  CheckpointInfo info;
  if (!ParseNumber(meta("step"), &info.step) || info.step < 0)
    return InvalidInput("{}: __metadata__ 'step' '{}' is not a step", source, meta("step"));
  if (!ParseNumber(meta("seed"), &info.seed))
    return InvalidInput("{}: __metadata__ 'seed' '{}' is not a seed", source, meta("seed"));
  for (const auto& [key, value] : file.metadata)
    if (!IsReservedKey(key)) info.extra[key] = value;

  // Everything is checked before any byte of the executor changes.
  std::map<std::string, const SafetensorsTensor*> by_name;
  for (const SafetensorsTensor& t : file.tensors) by_name[t.name] = &t;
  std::vector<std::pair<int, const SafetensorsTensor*>> copies;
  for (int id : ex.checkpoint_buffers()) {
    const plan::Buffer& b = p.buffers(id);
    auto it = by_name.find(b.name());
    if (it == by_name.end())
      return InvalidInput("{}: tensor '{}' ({} of the plan) is missing", source, b.name(),
                          PlanBufferRoleName(b.role()));
    const SafetensorsTensor& t = *it->second;
    DType want = static_cast<DType>(b.type().dtype());
    std::vector<int64_t> shape(b.type().dims().begin(), b.type().dims().end());
    if (t.dtype != want || t.shape != shape)
      return InvalidInput("{}: tensor '{}': the file holds {} {}, the plan's buffer is {} {}",
                          source, t.name, SafetensorsDTypeName(t.dtype), ShapeText(t.shape),
                          SafetensorsDTypeName(want), ShapeText(shape));
    copies.emplace_back(id, &t);
    by_name.erase(it);
  }
  if (!by_name.empty())
    return InvalidInput("{}: tensor '{}' is not a parameter or state buffer of the plan", source,
                        by_name.begin()->first);
  int step_id = p.training() ? p.train().step_buffer() : -1;
  for (const auto& [id, t] : copies) {
    if (id != step_id) continue;
    int64_t value;
    std::memcpy(&value, t->data.data(), sizeof(value));
    if (value != info.step)
      return InvalidInput("{}: tensor '{}' holds step {}, the metadata says {}", source, t->name,
                          value, info.step);
  }
  for (const auto& [id, t] : copies)
    if (!t->data.empty()) A8_RETURN_IF_ERROR(ex.WriteBuffer(id, t->data.data()));
  ex.set_steps_run(info.step);
  return info;
}

StatusOr<CheckpointInfo> LoadCheckpoint(Executor& ex, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput("{}: cannot open file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return InvalidInput("{}: read error", path);
  return RestoreCheckpoint(ex, ss.str(), path);
}

}  // namespace a8

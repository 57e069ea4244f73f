#include "runtime/core/checkpoint.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "base/parse_number.h"
#include "compiler/plan/plan_file.h"
#include "compiler/support/file_io.h"

namespace a8 {
namespace {

std::string ShapeText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// Metadata keys SerializeCheckpoint writes itself.
constexpr const char* kReservedKeys[] = {"format",    "format_version", "model_name", "model_hash",
                                         "plan_hash", "precision",      "step",       "seed"};

bool IsReservedKey(const std::string& key) {
  return key.rfind(kSafetensorsCrcPrefix, 0) == 0 ||
         std::find(std::begin(kReservedKeys), std::end(kReservedKeys), key) !=
             std::end(kReservedKeys);
}

// Counts the elements of `data` whose exponent bits (`exp_mask`) are all ones.
template <typename Bits>
NonFiniteCount CountExponentAllOnes(std::string_view data, Bits exp_mask) {
  NonFiniteCount c;
  const int64_t n = static_cast<int64_t>(data.size() / sizeof(Bits));
  for (int64_t i = 0; i < n; ++i) {
    Bits v;
    std::memcpy(&v, data.data() + i * static_cast<int64_t>(sizeof(Bits)), sizeof(Bits));
    if ((v & exp_mask) == exp_mask) {
      if (c.count++ == 0) c.first = i;
    }
  }
  return c;
}

}  // namespace

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
  AddSafetensorsChecksums(tensors, &meta);
  return SerializeSafetensors(tensors, meta);
}

Status SaveCheckpoint(const Executor& ex, const CheckpointInfo& info, const std::string& path) {
  A8_ASSIGN_OR_RETURN(std::string bytes, SerializeCheckpoint(ex, info));
  return WriteFileAtomically(path, bytes);
}

NonFiniteCount CountNonFinite(const SafetensorsTensor& t) {
  switch (t.dtype) {
    case DType::kF32:
      return CountExponentAllOnes<uint32_t>(t.data, 0x7f800000u);
    case DType::kF64:
      return CountExponentAllOnes<uint64_t>(t.data, 0x7ff0000000000000ull);
    case DType::kF16:
      return CountExponentAllOnes<uint16_t>(t.data, 0x7c00);
    case DType::kBF16:
      return CountExponentAllOnes<uint16_t>(t.data, 0x7f80);
    default:
      return {};
  }
}

StatusOr<SafetensorsFile> ParseCheckpointFile(std::string bytes, const std::string& source) {
  A8_ASSIGN_OR_RETURN(SafetensorsFile file, ParseSafetensors(std::move(bytes), source));
  auto meta = [&](const char* key) -> std::string {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? "" : it->second;
  };
  // The checksums first: a flipped bit in the metadata must not pass for another format.
  const bool checked = HasSafetensorsChecksums(file);
  if (checked) A8_RETURN_IF_ERROR(VerifySafetensorsChecksums(file, source));
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
  if (version >= 2 && !checked)
    return InvalidInput("{}: checkpoint format version {} carries checksums, this file has none",
                        source, version);
  return file;
}

StatusOr<CheckpointInfo> RestoreCheckpoint(Executor& ex, std::string bytes,
                                           const std::string& source,
                                           const RestoreOptions& options) {
  A8_ASSIGN_OR_RETURN(SafetensorsFile file, ParseCheckpointFile(std::move(bytes), source));
  auto meta = [&](const char* key) -> std::string {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? "" : it->second;
  };
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
    if (!options.allow_nonfinite) {
      if (NonFiniteCount bad = CountNonFinite(t); bad.count > 0)
        return InvalidInput(
            "{}: tensor '{}' ({} of the plan) holds {} non-finite value{} (NaN or Inf; the first "
            "at element {}): the run that saved it had diverged; --allow-nonfinite resumes from "
            "it anyway",
            source, t.name, PlanBufferRoleName(b.role()), bad.count, bad.count == 1 ? "" : "s",
            bad.first);
    }
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

StatusOr<CheckpointInfo> LoadCheckpoint(Executor& ex, const std::string& path,
                                        const RestoreOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput("{}: cannot open file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return InvalidInput("{}: read error", path);
  return RestoreCheckpoint(ex, ss.str(), path, options);
}

}  // namespace a8

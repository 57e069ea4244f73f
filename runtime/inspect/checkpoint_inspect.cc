#include "runtime/inspect/checkpoint_inspect.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/plan/plan_file.h"
#include "runtime/core/checkpoint.h"
#include "runtime/core/safetensors.h"

namespace a8 {
namespace {

std::string ShapeText(const std::vector<int64_t>& d) {
  return fmt::format("[{}]", fmt::join(d, ","));
}

std::string Meta(const SafetensorsFile& f, const std::string& key) {
  auto it = f.metadata.find(key);
  return it == f.metadata.end() ? "" : it->second;
}

std::string CrcOf(const SafetensorsTensor& t) {
  return fmt::format("{:08x}", Crc32c(t.data.data(), t.data.size()));
}

StatusOr<std::string> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput("{}: cannot open file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return InvalidInput("{}: read error", path);
  return ss.str();
}

}  // namespace

bool IsCheckpointPath(const std::string& path) { return path.ends_with(".safetensors"); }

StatusOr<std::string> InspectCheckpoint(const std::string& path, InspectFormat format) {
  if (format == InspectFormat::kDot)
    return InvalidInput("--format=dot: a checkpoint has no graph (text or json)");
  A8_ASSIGN_OR_RETURN(std::string bytes, ReadBytes(path));
  A8_ASSIGN_OR_RETURN(SafetensorsFile file, ParseCheckpointFile(std::move(bytes), path));
  const bool checked = HasSafetensorsChecksums(file);
  int64_t nonfinite_tensors = 0;
  if (format == InspectFormat::kJson) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["kind"] = "checkpoint";
    j["path"] = path;
    j["checksums"] = checked ? "verified" : "none (format version 1)";
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : file.metadata)
      if (k.rfind(kSafetensorsCrcPrefix, 0) != 0) meta[k] = v;
    j["metadata"] = meta;
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (const SafetensorsTensor& t : file.tensors) {
      NonFiniteCount bad = CountNonFinite(t);
      nonfinite_tensors += bad.count > 0;
      tensors.push_back({{"name", t.name},
                         {"dtype", SafetensorsDTypeName(t.dtype)},
                         {"shape", t.shape},
                         {"bytes", t.data.size()},
                         {"crc32c", CrcOf(t)},
                         {"nonfinite", bad.count}});
    }
    j["tensors"] = tensors;
    j["tensors_with_nonfinite"] = nonfinite_tensors;
    return j.dump(2) + "\n";
  }
  std::string out = fmt::format(
      "checkpoint {}\n  format {} version {}, model '{}' ({}), plan {}\n  precision {}, step "
      "{}, seed {}\n",
      path, Meta(file, "format"), Meta(file, "format_version"), Meta(file, "model_name"),
      Meta(file, "model_hash"), Meta(file, "plan_hash"), Meta(file, "precision"),
      Meta(file, "step"), Meta(file, "seed"));
  for (const auto& [k, v] : file.metadata) {
    static const char* kShown[] = {"format",    "format_version", "model_name", "model_hash",
                                   "plan_hash", "precision",      "step",       "seed"};
    bool shown = k.rfind(kSafetensorsCrcPrefix, 0) == 0;
    for (const char* s : kShown) shown = shown || k == s;
    if (!shown) out += fmt::format("  {} {}\n", k, v);
  }
  out += fmt::format("tensors ({}):\n", file.tensors.size());
  size_t width = 6;
  for (const SafetensorsTensor& t : file.tensors) width = std::max(width, t.name.size());
  out += fmt::format("  {:<{}}  {:<5} {:<16} {:>10}  {:<8}  {}\n", "name", width, "dtype", "shape",
                     "bytes", "crc32c", "non-finite");
  for (const SafetensorsTensor& t : file.tensors) {
    NonFiniteCount bad = CountNonFinite(t);
    nonfinite_tensors += bad.count > 0;
    out += fmt::format("  {:<{}}  {:<5} {:<16} {:>10}  {:<8}  {}\n", t.name, width,
                       SafetensorsDTypeName(t.dtype), ShapeText(t.shape), t.data.size(), CrcOf(t),
                       bad.count);
  }
  out += checked ? fmt::format("checksums: the metadata and all {} tensors match\n",
                               file.tensors.size())
                 : "checksums: none (format version 1 predates them)\n";
  if (nonfinite_tensors > 0)
    out += fmt::format(
        "warning: {} tensor{} hold NaN or Inf: a800c-run --resume refuses this checkpoint "
        "without --allow-nonfinite\n",
        nonfinite_tensors, nonfinite_tensors == 1 ? "" : "s");
  return out;
}

}  // namespace a8

#include "runtime/core/checkpoint_files.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>

#include "base/parse_number.h"
#include "compiler/support/file_io.h"
#include "runtime/core/safetensors.h"

namespace a8 {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kExtension = ".safetensors";
constexpr std::string_view kStepTag = ".step-";

struct Parts {
  fs::path dir;
  std::string base;  // NAME.safetensors
  std::string stem;  // NAME
  std::string ext;   // ".safetensors" or ""
};

Parts Split(const std::string& path) {
  fs::path p(path);
  Parts r;
  r.dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  r.base = p.filename().string();
  r.stem = r.base;
  if (r.base.size() > kExtension.size() && r.base.ends_with(kExtension)) {
    r.stem = r.base.substr(0, r.base.size() - kExtension.size());
    r.ext = kExtension;
  }
  return r;
}

// The step of a step-numbered checkpoint's file name, if `name` is one of `parts`.
std::optional<int64_t> StepOfName(const Parts& parts, std::string_view name) {
  const std::string prefix = parts.stem + std::string(kStepTag);
  if (!name.starts_with(prefix) || !name.ends_with(parts.ext)) return std::nullopt;
  std::string_view digits =
      name.substr(prefix.size(), name.size() - prefix.size() - parts.ext.size());
  int64_t step = -1;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty() || step < 0)
    return std::nullopt;
  return step;
}

CheckpointFileInfo Describe(const std::string& path, bool step_numbered) {
  CheckpointFileInfo info;
  info.path = path;
  info.step_numbered = step_numbered;
  auto meta = ReadSafetensorsMetadata(path);
  if (!meta.ok()) return info;
  auto step = meta->find("step");
  info.readable = step != meta->end() && ParseNumber(step->second, &info.step);
  auto eval = meta->find("eval_loss");
  if (eval != meta->end()) {
    char* end = nullptr;
    info.eval_loss = std::strtod(eval->second.c_str(), &end);
    info.has_eval_loss = end != eval->second.c_str() && *end == '\0';
  }
  return info;
}

}  // namespace

std::string StepCheckpointPath(const std::string& path, int64_t step) {
  Parts parts = Split(path);
  return (parts.dir / (parts.stem + std::string(kStepTag) + std::to_string(step) + parts.ext))
      .string();
}

StatusOr<std::vector<std::string>> RemoveStaleTempFiles(const std::string& path) {
  Parts parts = Split(path);
  std::vector<std::string> removed;
  std::error_code ec;
  fs::directory_iterator it(parts.dir, ec);
  if (ec) return removed;  // no folder yet: nothing to clean
  for (const fs::directory_entry& e : it) {
    // .NAME.safetensors.tmp.XXXXXX or .NAME.step-N.safetensors.tmp.XXXXXX
    const std::string name = e.path().filename().string();
    const size_t tmp = name.rfind(".tmp.");
    if (name.size() < 2 || name[0] != '.' || tmp == std::string::npos) continue;
    const std::string target = name.substr(1, tmp - 1);
    if (target != parts.base && !StepOfName(parts, target)) continue;
    if (!e.is_regular_file(ec)) continue;
    if (!fs::remove(e.path(), ec) || ec)
      return InvalidInput("{}: cannot remove the stale temporary file: {}", e.path().string(),
                          ec.message());
    removed.push_back(e.path().string());
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

std::vector<CheckpointFileInfo> ListCheckpoints(const std::string& path) {
  Parts parts = Split(path);
  std::vector<CheckpointFileInfo> out;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) out.push_back(Describe(path, false));
  fs::directory_iterator it(parts.dir, ec);
  if (!ec) {
    for (const fs::directory_entry& e : it) {
      if (!StepOfName(parts, e.path().filename().string()) || !e.is_regular_file(ec)) continue;
      out.push_back(Describe(e.path().string(), true));
    }
  }
  // Newest first; at equal steps the step-numbered file (the latest is a link to it); the
  // unreadable last, in name order.
  std::sort(out.begin(), out.end(), [](const CheckpointFileInfo& a, const CheckpointFileInfo& b) {
    if (a.readable != b.readable) return a.readable;
    if (a.step != b.step) return a.step > b.step;
    if (a.step_numbered != b.step_numbered) return a.step_numbered;
    return a.path < b.path;
  });
  return out;
}

bool BestEvalLoss(const std::string& path, double* loss) {
  bool found = false;
  for (const CheckpointFileInfo& c : ListCheckpoints(path)) {
    if (!c.step_numbered || !c.has_eval_loss) continue;
    if (!found || c.eval_loss < *loss) *loss = c.eval_loss;
    found = true;
  }
  return found;
}

StatusOr<std::vector<std::string>> PruneCheckpoints(const std::string& path, int64_t keep,
                                                    bool keep_best) {
  std::vector<CheckpointFileInfo> steps;
  for (CheckpointFileInfo& c : ListCheckpoints(path))
    if (c.step_numbered && c.readable) steps.push_back(std::move(c));  // newest first
  const CheckpointFileInfo* best = nullptr;
  if (keep_best) {
    for (const CheckpointFileInfo& c : steps)
      if (c.has_eval_loss && (best == nullptr || c.eval_loss < best->eval_loss)) best = &c;
  }
  std::vector<std::string> removed;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(keep, 0)); i < steps.size(); ++i) {
    if (&steps[i] == best) continue;
    std::error_code ec;
    if (!fs::remove(steps[i].path, ec) || ec)
      return InvalidInput("{}: cannot remove an old checkpoint (--keep-checkpoints): {}",
                          steps[i].path, ec.message());
    removed.push_back(steps[i].path);
  }
  return removed;
}

Status WriteCheckpointFiles(const std::string& path, int64_t step, bool step_numbered,
                            const std::string& bytes) {
  if (!step_numbered) return WriteFileAtomically(path, bytes);
  const std::string numbered = StepCheckpointPath(path, step);
  A8_RETURN_IF_ERROR(WriteFileAtomically(numbered, bytes));
  // The latest is the same file under the plain name: a hard link renamed into place, so that
  // it too is replaced atomically (a copy where the file system has no links).
  Parts parts = Split(path);
  const std::string tmp = (parts.dir / ("." + parts.base + ".tmp.link")).string();
  unlink(tmp.c_str());
  if (link(numbered.c_str(), tmp.c_str()) == 0) {
    if (rename(tmp.c_str(), path.c_str()) == 0) return Status::Ok();
    unlink(tmp.c_str());
  }
  return WriteFileAtomically(path, bytes);
}

StatusOr<AutoResumeResult> ResumeNewest(Executor& ex, const std::string& path,
                                        const RestoreOptions& options) {
  AutoResumeResult result;
  std::vector<CheckpointFileInfo> files = ListCheckpoints(path);
  for (const CheckpointFileInfo& c : files) {
    auto info = LoadCheckpoint(ex, c.path, options);
    if (info.ok()) {
      result.path = c.path;
      result.info = std::move(info).value();
      return result;
    }
    result.warnings.push_back(
        fmt::format("--resume=auto: skipping a checkpoint: {}", info.status().message()));
  }
  if (!files.empty()) {
    std::string why;
    for (const std::string& w : result.warnings) why += "\n  " + w;
    return InvalidInput(
        "--resume=auto: none of the {} checkpoint file{} of {} restores (remove them to start "
        "over, or --resume=FILE one):{}",
        files.size(), files.size() == 1 ? "" : "s", path, why);
  }
  return result;  // nothing saved yet: a first start
}

}  // namespace a8

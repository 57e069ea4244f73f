// Output paths checked at start (see output_paths.h).
#include "runtime/core/output_paths.h"

#include <unistd.h>

#include <filesystem>

namespace a8 {
namespace {

namespace fs = std::filesystem;

bool Writable(const fs::path& p) { return ::access(p.c_str(), W_OK) == 0; }

Status CheckFile(const OutputPath& o) {
  std::error_code ec;
  const fs::path path(o.path);
  if (fs::is_directory(path, ec)) {
    return InvalidInput("{} {}: is a folder; give a file name", o.flag, o.path);
  }
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::exists(dir, ec)) {
    return InvalidInput("{} {}: no such folder '{}' (create it first)", o.flag, o.path,
                        dir.string());
  }
  if (!fs::is_directory(dir, ec)) {
    return InvalidInput("{} {}: '{}' is not a folder", o.flag, o.path, dir.string());
  }
  if (!Writable(dir)) {
    return InvalidInput("{} {}: the folder '{}' is not writable", o.flag, o.path, dir.string());
  }
  if (fs::exists(path, ec) && !Writable(path)) {
    return InvalidInput("{} {}: the file exists and is not writable", o.flag, o.path);
  }
  return Status::Ok();
}

Status CheckFolder(const OutputPath& o) {
  std::error_code ec;
  fs::path p(o.path);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) return InvalidInput("{} {}: is not a folder", o.flag, o.path);
    if (!Writable(p)) return InvalidInput("{} {}: the folder is not writable", o.flag, o.path);
    return Status::Ok();
  }
  // The run creates it: the nearest existing ancestor must be a writable folder.
  fs::path ancestor = fs::absolute(p, ec).parent_path();
  while (!ancestor.empty() && !fs::exists(ancestor, ec)) {
    if (ancestor == ancestor.parent_path()) break;
    ancestor = ancestor.parent_path();
  }
  if (!fs::is_directory(ancestor, ec)) {
    return InvalidInput("{} {}: cannot be created: '{}' is not a folder", o.flag, o.path,
                        ancestor.string());
  }
  if (!Writable(ancestor)) {
    return InvalidInput("{} {}: cannot be created: '{}' is not writable", o.flag, o.path,
                        ancestor.string());
  }
  return Status::Ok();
}

}  // namespace

Status CheckOutputPaths(const std::vector<OutputPath>& paths) {
  for (const OutputPath& o : paths) {
    if (o.path.empty()) continue;
    A8_RETURN_IF_ERROR(o.is_folder ? CheckFolder(o) : CheckFile(o));
  }
  return Status::Ok();
}

}  // namespace a8

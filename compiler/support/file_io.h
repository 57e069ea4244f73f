// Writing files so that nothing already written is lost on failure.
#pragma once

#include <string>
#include <string_view>

#include "compiler/ir/status.h"

namespace a8 {

// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename. On
// any failure the old file (a plan, a checkpoint) is untouched and no temporary is left. A
// symlink stays a symlink (the file it points to is replaced); an existing file keeps its mode;
// a device or pipe (`/dev/null`) is written in place, since renaming over it would replace it.
Status WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace a8

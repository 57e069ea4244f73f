// Writing files so that nothing already written is lost on failure.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "compiler/ir/status.h"

namespace a8 {

// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename. On
// any failure the old file (a plan, a checkpoint) is untouched and no temporary is left. A
// symlink stays a symlink (the file it points to is replaced); an existing file keeps its mode;
// a device or pipe (`/dev/null`) is written in place, since renaming over it would replace it.
Status WriteFileAtomically(const std::string& path, std::string_view bytes);
// The same for a file made of pieces, written one after the other (a plan's header and message,
// then its weights): the pieces are never joined in memory.
Status WriteFileAtomically(const std::string& path, std::span<const std::string_view> pieces);

}  // namespace a8

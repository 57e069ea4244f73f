// Writing files so that nothing already written is lost on failure.
#pragma once

#include <functional>
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

// How a large file made of pieces is streamed to the disk (WriteFileAtomically below).
struct WriteStream {
  // Sees every byte from file offset `observe_from` on, once, in order, as it is written (a
  // checksum computed in the same pass as the write).
  std::function<void(std::string_view)> observe;
  uint64_t observe_from = 0;
  // Called once all bytes are out: bytes that then overwrite the start of the file (a header
  // holding the checksum `observe` computed); empty: none. Never longer than the first piece.
  std::function<std::string()> final_head;
};
// WriteFileAtomically for big files: a regular file is written with O_DIRECT where the file
// system takes it (the bytes go from a small aligned staging buffer to the disk, without
// filling the page cache with a second copy of them; the fsync then has little left to do),
// and with plain writes elsewhere. Devices and pipes are written in place, as above.
Status WriteFileAtomically(const std::string& path, std::span<const std::string_view> pieces,
                           const WriteStream& stream);

}  // namespace a8

#include "compiler/support/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

namespace a8 {
namespace fs = std::filesystem;
namespace {

// Writes all of `bytes` to `fd`; false (with errno set) on failure.
bool WriteAll(int fd, std::string_view bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

// Writes the pieces in order; with `pause_ms` > 0, pauses that long once half the bytes are out.
bool WritePieces(int fd, std::span<const std::string_view> pieces, int pause_ms = 0) {
  size_t total = 0;
  for (std::string_view p : pieces) total += p.size();
  size_t half = pause_ms > 0 ? total / 2 : total + 1, done = 0;
  for (std::string_view p : pieces) {
    if (done <= half && half < done + p.size()) {
      if (!WriteAll(fd, p.substr(0, half - done))) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      p = p.substr(half - done);
      done = half;
    }
    if (!WriteAll(fd, p)) return false;
    done += p.size();
  }
  return true;
}

// Hands the part of a run of bytes at file offset `at` that lies past `stream.observe_from` to
// `stream.observe`.
void Observe(const WriteStream& stream, uint64_t at, std::string_view run) {
  if (!stream.observe || at + run.size() <= stream.observe_from) return;
  const uint64_t skip = at >= stream.observe_from ? 0 : stream.observe_from - at;
  stream.observe(run.substr(static_cast<size_t>(skip)));
}

// Buffered writes, observed, with WritePieces' test pause.
bool WritePiecesObserved(int fd, std::span<const std::string_view> pieces,
                         const WriteStream& stream, int pause_ms) {
  uint64_t at = 0;
  for (std::string_view p : pieces) {
    Observe(stream, at, p);
    at += p.size();
  }
  return WritePieces(fd, pieces, pause_ms);
}

constexpr size_t kDirectAlign = 4096;            // O_DIRECT's offset, size and address unit
constexpr size_t kStageBytes = size_t{4} << 20;  // the staging buffer: stays in the caches

// Streams `pieces` to `fd` (empty, at offset 0) with O_DIRECT: each staged chunk is observed
// while it is in the cache and written in one aligned write; the tail is padded to the block size
// and cut off again by ftruncate. False with errno set on failure; `*unsupported` when the
// file system refused O_DIRECT before a byte was written (the caller then writes plainly).
bool WriteDirect(int fd, std::span<const std::string_view> pieces, const WriteStream& stream,
                 int pause_ms, bool* unsupported) {
  *unsupported = false;
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_DIRECT) != 0) {
    *unsupported = true;
    return false;
  }
  void* mem = nullptr;
  if (posix_memalign(&mem, kDirectAlign, kStageBytes) != 0) {
    errno = ENOMEM;
    return false;
  }
  std::unique_ptr<char, decltype(&std::free)> stage(static_cast<char*>(mem), &std::free);
  uint64_t total = 0;
  for (std::string_view p : pieces) total += p.size();
  const uint64_t half = pause_ms > 0 ? total / 2 : total + 1;
  std::string first_block;  // the file's first block, rewritten with the final head
  uint64_t at = 0;          // file offset of the staged bytes
  size_t fill = 0;
  auto flush = [&](bool last) {
    size_t n = fill;
    if (last) {
      n = (fill + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
      std::memset(stage.get() + fill, 0, n - fill);
    }
    Observe(stream, at, std::string_view(stage.get(), fill));
    if (at == 0 && n > 0) first_block.assign(stage.get(), std::min(n, kDirectAlign));
    for (size_t done = 0; done < n;) {
      ssize_t w = write(fd, stage.get() + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EINVAL && at == 0 && done == 0) *unsupported = true;
      if (w <= 0) return false;
      done += static_cast<size_t>(w);
    }
    if (at <= half && half < at + fill) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    }
    at += fill;
    fill = 0;
    return true;
  };
  for (std::string_view p : pieces) {
    while (!p.empty()) {
      const size_t k = std::min(p.size(), kStageBytes - fill);
      std::memcpy(stage.get() + fill, p.data(), k);
      fill += k;
      p.remove_prefix(k);
      if (fill == kStageBytes && !flush(false)) return false;
    }
  }
  if (fill > 0 && !flush(true)) return false;
  if (stream.final_head) {
    const std::string head = stream.final_head();
    if (head.size() > first_block.size()) {
      errno = EINVAL;
      return false;
    }
    std::memcpy(stage.get(), first_block.data(), first_block.size());
    std::memcpy(stage.get(), head.data(), head.size());
    if (pwrite(fd, stage.get(), first_block.size(), 0) !=
        static_cast<ssize_t>(first_block.size())) {
      return false;
    }
  }
  return ftruncate(fd, static_cast<off_t>(total)) == 0;
}

// Writes into an existing non-regular file (a device, a pipe), which cannot be replaced.
Status WriteInPlace(const std::string& path, std::span<const std::string_view> pieces) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Internal("{}: cannot open for writing: {}", path, std::strerror(errno));
  if (!WritePieces(fd, pieces)) {
    Status s = Internal("{}: cannot write: {}", path, std::strerror(errno));
    close(fd);
    return s;
  }
  if (close(fd) != 0) return Internal("{}: cannot close: {}", path, std::strerror(errno));
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::string_view pieces[] = {bytes};
  return WriteFileAtomically(path, pieces);
}

Status WriteFileAtomically(const std::string& path, std::span<const std::string_view> pieces) {
  return WriteFileAtomically(path, pieces, WriteStream{});
}

Status WriteFileAtomically(const std::string& path, std::span<const std::string_view> pieces,
                           const WriteStream& stream) {
  // Plain writes for small files (checkpoint metadata, traces) and where no one asked to stream.
  const bool direct = stream.observe || stream.final_head;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);  // follows symlinks
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or a pipe (`-o /dev/null`): write into it; renaming over it would replace it.
    if (!stream.final_head) return WriteInPlace(path, pieces);
    return Internal("{}: cannot stream into a device or a pipe (its start cannot be rewritten)",
                    path);
  }
  // A symlink stays a symlink: the file it points to is replaced.
  fs::path target(path);
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    std::error_code link_ec;
    target = fs::canonical(path, link_ec);
    if (link_ec) return InvalidInput("{}: cannot follow the link: {}", path, link_ec.message());
  }
  // The new file gets the old one's mode, else the mode a plain create would give it.
  mode_t mask = umask(0);
  umask(mask);
  mode_t mode = fs::exists(st) ? static_cast<mode_t>(st.permissions() & fs::perms::mask)
                               : static_cast<mode_t>(0666 & ~mask);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  // Appended, not `"." + name + ...`: GCC 12 at -O3 reports a false -Wrestrict overlap in
  // libstdc++'s operator+ there, which -Werror turns into a failed Release build.
  std::string name = ".";
  name += target.filename().string();
  name += ".tmp.XXXXXX";
  std::string tmp = (dir / name).string();
  int fd = mkstemp(tmp.data());
  if (fd < 0) {
    return Internal("{}: cannot create a temporary file in '{}': {}", path, dir.string(),
                    std::strerror(errno));
  }
  auto fail = [&](std::string_view what) {
    Status s = Internal("{}: {}: {}", path, what, std::strerror(errno));
    close(fd);
    unlink(tmp.c_str());
    return s;
  };
  if (fchmod(fd, mode) != 0) return fail("cannot set the file mode");  // mkstemp gives 0600
  // Test hook (tests/e2e/training.py kills a writer mid-write): with
  // A8_TEST_PAUSE_MID_WRITE_MS=N, write half the bytes, pause N ms, write the rest.
  const char* pause = std::getenv("A8_TEST_PAUSE_MID_WRITE_MS");
  const int pause_ms = pause != nullptr ? std::max(std::atoi(pause), 1) : 0;
  bool unsupported = true;
  if (direct && !WriteDirect(fd, pieces, stream, pause_ms, &unsupported) && !unsupported) {
    return fail("cannot write");
  }
  if (unsupported) {  // plain writes: not asked for O_DIRECT, or the file system refused it
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0 || ftruncate(fd, 0) != 0 ||
        lseek(fd, 0, SEEK_SET) != 0) {
      return fail("cannot write");
    }
    if (!WritePiecesObserved(fd, pieces, stream, pause_ms)) return fail("cannot write");
    if (stream.final_head) {
      const std::string head = stream.final_head();
      if (pwrite(fd, head.data(), head.size(), 0) != static_cast<ssize_t>(head.size())) {
        return fail("cannot write");
      }
    }
  }
  if (fsync(fd) != 0) return fail("cannot flush to disk");
  if (close(fd) != 0) {
    Status s = Internal("{}: cannot close: {}", path, std::strerror(errno));
    unlink(tmp.c_str());
    return s;
  }
  if (rename(tmp.c_str(), target.c_str()) != 0) {
    Status s =
        Internal("{}: cannot rename the temporary file into place: {}", path, std::strerror(errno));
    unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

}  // namespace a8

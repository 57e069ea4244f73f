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
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);  // follows symlinks
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or a pipe (`-o /dev/null`): write into it; renaming over it would replace it.
    return WriteInPlace(path, pieces);
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
  std::string tmp = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
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
  if (!WritePieces(fd, pieces, pause != nullptr ? std::max(std::atoi(pause), 1) : 0)) {
    return fail("cannot write");
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

// Plan files (see plan_file.h): layout, checksum, atomic writing and validating reading
// (validation itself: plan_validate.cc).
#include "compiler/plan/plan_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "base/enum_names.h"
#include "compiler/ir/types.h"
#include "compiler/support/file_io.h"

namespace a8 {
namespace {

// Header fields' byte offsets.
constexpr size_t kMagicAt = 0, kVersionAt = 8, kHeaderBytesAt = 12, kMessageBytesAt = 16,
                 kBlobOffsetAt = 24, kBlobBytesAt = 32, kCrcAt = 40;

uint64_t AlignUp(uint64_t x) { return (x + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment; }

void PutU32(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutU64(std::string* s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) (*s)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t GetU32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
  return v;
}
uint64_t GetU64(std::string_view s, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
  return v;
}

}  // namespace

std::string Fnv1a64Hex(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return fmt::format("{:016x}", h);
}

const uint8_t* PlanFile::BlobBytes(uint64_t offset, uint64_t n) const {
  if (pieces.empty()) {
    return offset <= blob.size() && n <= blob.size() - offset ? blob.data() + offset : nullptr;
  }
  // The last piece starting at or before `offset`.
  auto it = std::upper_bound(pieces.begin(), pieces.end(), offset,
                             [](uint64_t at, const PlanBlobPiece& p) { return at < p.offset; });
  if (it == pieces.begin()) return nullptr;
  --it;
  const uint64_t in = offset - it->offset;
  if (in > it->bytes.size() || n > it->bytes.size() - in) return nullptr;
  return it->bytes.data() + in;
}

namespace {

// Zeros for the gaps between blob pieces (alignment padding).
constexpr size_t kZeroBytes = 4096;
const char kZeros[kZeroBytes] = {};

// The header (checksum left zero), the message and the padding up to the blob.
StatusOr<std::string> HeadWithoutCrc(const PlanFile& pf) {
  Status valid = ValidatePlan(pf, "plan");
  if (!valid.ok()) return Internal("the compiler made an invalid plan: {}", valid.message());
  std::string message;
  if (!pf.plan.SerializeToString(&message)) return Internal("plan: cannot serialise the message");
  const uint64_t blob_offset = AlignUp(kPlanHeaderBytes + message.size());
  std::string out(kPlanHeaderBytes, '\0');
  std::memcpy(out.data() + kMagicAt, kPlanMagic, sizeof(kPlanMagic));
  PutU32(&out, kVersionAt, kPlanFormatVersion);
  PutU32(&out, kHeaderBytesAt, kPlanHeaderBytes);
  PutU64(&out, kMessageBytesAt, message.size());
  PutU64(&out, kBlobOffsetAt, blob_offset);
  PutU64(&out, kBlobBytesAt, pf.BlobSize());
  out += message;
  out.resize(blob_offset, '\0');
  return out;
}

}  // namespace

std::vector<std::string_view> PlanBlobViews(const PlanFile& pf) {
  std::vector<std::string_view> views;
  if (pf.pieces.empty()) {
    views.emplace_back(reinterpret_cast<const char*>(pf.blob.data()), pf.blob.size());
    return views;
  }
  uint64_t at = 0;
  auto zeros = [&](uint64_t until) {
    for (; at < until; at += std::min<uint64_t>(until - at, kZeroBytes)) {
      views.emplace_back(kZeros, static_cast<size_t>(std::min<uint64_t>(until - at, kZeroBytes)));
    }
  };
  for (const PlanBlobPiece& piece : pf.pieces) {
    zeros(piece.offset);
    views.emplace_back(reinterpret_cast<const char*>(piece.bytes.data()), piece.bytes.size());
    at += piece.bytes.size();
  }
  zeros(pf.pieces_size);
  return views;
}

StatusOr<std::string> SerializePlanHead(const PlanFile& pf) {
  A8_ASSIGN_OR_RETURN(std::string out, HeadWithoutCrc(pf));
  // One pass over the bytes: the head, then the blob where it lies (never copied here).
  uint32_t crc = Crc32c(out.data() + kPlanHeaderBytes, out.size() - kPlanHeaderBytes);
  for (std::string_view v : PlanBlobViews(pf)) crc = Crc32c(v.data(), v.size(), crc);
  PutU32(&out, kCrcAt, crc);
  return out;
}

StatusOr<std::string> SerializePlan(const PlanFile& pf) {
  A8_ASSIGN_OR_RETURN(std::string out, SerializePlanHead(pf));
  for (std::string_view v : PlanBlobViews(pf)) out.append(v);
  return out;
}

Status WritePlanFile(const PlanFile& pf, const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    // A device or a pipe is written in place, in order: the checksum must come first.
    A8_ASSIGN_OR_RETURN(std::string head, SerializePlanHead(pf));
    std::vector<std::string_view> pieces = PlanBlobViews(pf);
    pieces.insert(pieces.begin(), head);
    return WriteFileAtomically(path, pieces);
  }
  A8_ASSIGN_OR_RETURN(std::string head, HeadWithoutCrc(pf));
  std::vector<std::string_view> pieces = PlanBlobViews(pf);
  pieces.insert(pieces.begin(), head);
  // The checksum is computed as the bytes go out and lands in the header, written last.
  uint32_t crc = 0;
  WriteStream stream;
  stream.observe_from = kPlanHeaderBytes;
  stream.observe = [&crc](std::string_view bytes) {
    crc = Crc32c(bytes.data(), bytes.size(), crc);
  };
  stream.final_head = [&] {
    std::string header = head.substr(0, kPlanHeaderBytes);
    PutU32(&header, kCrcAt, crc);
    return header;
  };
  return WriteFileAtomically(path, pieces, stream);
}

namespace {

// ParsePlan over any bytes: a string, or the mapping of a plan file (ReadPlanFile).
// With `mapping`, the blob stays where `bytes` are (one piece kept alive by it); else it is copied.
// `body_crc`, when given, is the CRC-32C of bytes[kPlanHeaderBytes, end) computed while they
// were read (ReadPlanFile): it is compared instead of computing it again.
StatusOr<PlanFile> ParsePlanBytes(std::string_view bytes, const std::string& src,
                                  std::shared_ptr<const void> mapping = nullptr,
                                  std::optional<uint32_t> body_crc = std::nullopt) {
  const uint64_t size = bytes.size();
  if (size < kPlanHeaderBytes) {
    return InvalidInput("{}: the file has {} bytes, less than the {}-byte plan header", src, size,
                        kPlanHeaderBytes);
  }
  if (std::memcmp(bytes.data() + kMagicAt, kPlanMagic, sizeof(kPlanMagic)) != 0) {
    return InvalidInput("{}: magic: not an a800c plan file (expected \"A800CPLN\")", src);
  }
  const uint32_t version = GetU32(bytes, kVersionAt);
  if (version > kPlanFormatVersion) {
    return InvalidInput(
        "{}: format version {} is newer than this a800c reads ({}); use a newer "
        "a800c",
        src, version, kPlanFormatVersion);
  }
  if (version < kPlanOldestReadVersion) {
    return InvalidInput("{}: format version {} is not one this a800c reads ({} to {})", src,
                        version, kPlanOldestReadVersion, kPlanFormatVersion);
  }
  if (GetU32(bytes, kHeaderBytesAt) != kPlanHeaderBytes) {
    return InvalidInput("{}: header_bytes is {}, expected {}", src, GetU32(bytes, kHeaderBytesAt),
                        kPlanHeaderBytes);
  }
  for (size_t i = kCrcAt + 4; i < kPlanHeaderBytes; ++i) {
    if (bytes[i] != '\0') return InvalidInput("{}: header padding byte {} is not zero", src, i);
  }
  const uint64_t message_bytes = GetU64(bytes, kMessageBytesAt);
  const uint64_t blob_offset = GetU64(bytes, kBlobOffsetAt);
  const uint64_t blob_bytes = GetU64(bytes, kBlobBytesAt);
  if (message_bytes > size - kPlanHeaderBytes ||
      message_bytes > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    return InvalidInput("{}: message_bytes {} is more than the file holds ({} bytes)", src,
                        message_bytes, size - kPlanHeaderBytes);
  }
  if (blob_offset != AlignUp(kPlanHeaderBytes + message_bytes)) {
    return InvalidInput("{}: blob_offset is {}, expected {} (the message end rounded up to {})",
                        src, blob_offset, AlignUp(kPlanHeaderBytes + message_bytes),
                        kPlanAlignment);
  }
  if (blob_offset > size || blob_bytes != size - blob_offset) {
    return InvalidInput(
        "{}: blob_offset {} + blob_bytes {} does not end at the file size {} (a "
        "truncated or padded file)",
        src, blob_offset, blob_bytes, size);
  }
  const uint32_t crc =
      body_crc ? *body_crc : Crc32c(bytes.data() + kPlanHeaderBytes, size - kPlanHeaderBytes);
  if (crc != GetU32(bytes, kCrcAt)) {
    return InvalidInput(
        "{}: crc32c: the checksum is {:08x}, the header says {:08x} (the file is "
        "corrupt)",
        src, crc, GetU32(bytes, kCrcAt));
  }
  PlanFile pf;
  if (!pf.plan.ParseFromArray(bytes.data() + kPlanHeaderBytes, static_cast<int>(message_bytes))) {
    return InvalidInput("{}: message: not a valid a8.plan.Plan message", src);
  }
  // A shorter message_bytes can still cut the message at a field boundary; a message that
  // re-encodes to another size is not what a800c wrote.
  if (pf.plan.ByteSizeLong() != message_bytes) {
    return InvalidInput("{}: message_bytes {} disagrees with the message it holds ({} bytes)", src,
                        message_bytes, pf.plan.ByteSizeLong());
  }
  for (uint64_t i = kPlanHeaderBytes + message_bytes; i < blob_offset; ++i) {
    if (bytes[i] != '\0') return InvalidInput("{}: padding byte {} is not zero", src, i);
  }
  if (pf.plan.format_version() != version) {
    return InvalidInput("{}: format_version {} in the message differs from the header's {}", src,
                        pf.plan.format_version(), version);
  }
  if (mapping != nullptr && blob_bytes > 0) {
    pf.pieces.push_back(PlanBlobPiece{
        0,
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()) + blob_offset,
                                 static_cast<size_t>(blob_bytes)),
        std::move(mapping), /*writable=*/true});
    pf.pieces_size = blob_bytes;
  } else {
    pf.blob.assign(bytes.begin() + static_cast<std::ptrdiff_t>(blob_offset), bytes.end());
  }
  A8_RETURN_IF_ERROR(ValidatePlan(pf, src));
  return pf;
}

}  // namespace

StatusOr<PlanFile> ParsePlan(const std::string& bytes, const std::string& src) {
  return ParsePlanBytes(bytes, src);
}

namespace {

// A mapping of a whole file (or anonymous memory holding its bytes), unmapped when the last
// PlanFile piece using it goes.
struct FileMapping {
  void* addr = nullptr;
  size_t size = 0;
  ~FileMapping() {
    if (addr != nullptr) munmap(addr, size);
  }
};

constexpr size_t kDirectAlign = 4096;             // O_DIRECT's offset, size and address unit
constexpr size_t kDirectChunk = size_t{8} << 20;  // one read

// Whether at least 7/8 of the mapped file's pages are in the page cache.
bool MostlyCached(void* map, size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = (size + page - 1) / page;
  std::vector<unsigned char> resident(pages);
  if (mincore(map, size, resident.data()) != 0) return true;  // cannot tell: map it
  size_t cached = 0;
  for (unsigned char r : resident) cached += r & 1;
  return cached * 8 >= pages * 7;
}

// Reads the file at `path` (`size` bytes) into fresh anonymous memory with O_DIRECT in large
// chunks on a second thread, while this one computes the CRC-32C of the bytes past the header as
// they arrive. For a plan that is not in the page cache (the writer uses O_DIRECT, so right after
// a compile it is not): the page cache's readahead of a mapping read this disk at ~0.3 GB/s,
// large direct reads at 1.3-1.7 GB/s (tools/bench/README.md). `fd` is the file already opened
// (and mapped) by the caller, so that a plan renamed over it meanwhile is not read instead. Null
// when the file system refuses O_DIRECT or a read fails (the caller uses its mapping instead);
// `*crc` is set on success.
std::shared_ptr<FileMapping> ReadDirect(int fd, size_t size, uint32_t* crc) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_DIRECT) != 0) return nullptr;
  const size_t mapped = (size + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  void* mem = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  auto mapping = std::make_shared<FileMapping>();
  mapping->addr = mem;
  mapping->size = mapped;
  char* base = static_cast<char*>(mem);

  std::mutex mu;
  std::condition_variable cv;
  size_t ready = 0;     // bytes read so far, from the start
  bool failed = false;  // a read failed or ended early
  std::thread reader([&] {
    size_t at = 0;
    bool ok = true;
    while (ok && at < size) {
      const size_t want = std::min(kDirectChunk, mapped - at);
      ssize_t n = pread(fd, base + at, want, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok = false;
        break;
      }
      at += static_cast<size_t>(n);
      if (static_cast<size_t>(n) < want && at < size) ok = false;  // short read before the end
      std::lock_guard<std::mutex> lock(mu);
      ready = std::min(at, size);
      cv.notify_one();
    }
    std::lock_guard<std::mutex> lock(mu);
    failed = !ok;
    if (!ok) ready = 0;
    cv.notify_one();
  });
  uint32_t c = 0;
  size_t done = kPlanHeaderBytes;  // CRC'd up to here
  bool ok = true;
  while (done < size) {
    size_t upto;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return failed || ready > done; });
      if (failed) {
        ok = false;
        break;
      }
      upto = ready;
    }
    c = Crc32c(base + done, upto - done, c);
    done = upto;
  }
  reader.join();
  if (!ok || failed) return nullptr;
  // Left writable: the executor may keep the initial values here (PlanBlobPiece.writable). Huge
  // pages from now on (khugepaged may merge these later); marking before the read stalled on
  // compaction (tools/bench/README.md).
  madvise(mem, mapped, MADV_HUGEPAGE);
  *crc = c;
  return mapping;
}

}  // namespace

// A plan in the page cache is mapped, not read into a buffer: its bytes are checked and parsed
// where the page cache holds them, and the blob stays there (PlanFile.pieces, writable: a private
// mapping): the runtime keeps the initial values there (runtime/core/initial_values.h), the first
// write to a page copying it. A plan mostly not in the page cache (right after a
// compile: the writer uses O_DIRECT) is read with O_DIRECT instead (ReadDirect).
StatusOr<PlanFile> ReadPlanFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidInput("{}: cannot open the plan: {}", path, std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidInput("{}: not a regular file", path);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return ParsePlanBytes(std::string_view(), path);
  }
  // Private and writable: writes (the executor keeping its weights here, PlanBlobPiece.writable)
  // copy the page and never reach the file.
  void* map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  if (map == MAP_FAILED) {
    close(fd);
    return InvalidInput("{}: cannot map the plan: {}", path, std::strerror(map_errno));
  }
  if (size > kPlanHeaderBytes && size >= kDirectChunk && !MostlyCached(map, size)) {
    uint32_t crc = 0;
    std::shared_ptr<FileMapping> read = ReadDirect(fd, size, &crc);
    if (read != nullptr) {
      close(fd);
      munmap(map, size);
      return ParsePlanBytes(std::string_view(static_cast<const char*>(read->addr), size), path,
                            read, crc);
    }
  }
  close(fd);  // the mapping keeps the file
  // Fault it all in now (what MAP_POPULATE did; advice only, failure is harmless).
  madvise(map, size, MADV_SEQUENTIAL);
  madvise(map, size, MADV_POPULATE_READ);
  auto mapping = std::make_shared<FileMapping>();
  mapping->addr = map;
  mapping->size = size;
  return ParsePlanBytes(std::string_view(static_cast<const char*>(map), size), path, mapping);
}

const plan::Attribute* FindPlanAttr(const plan::Kernel& k, std::string_view name) {
  for (const plan::Attribute& a : k.attrs())
    if (a.name() == name) return &a;
  return nullptr;
}

const char* PlanBufferRoleName(int role) {
  static constexpr EnumName<int> kNames[] = {{plan::Buffer::INTERMEDIATE, "intermediate"},
                                             {plan::Buffer::INPUT, "input"},
                                             {plan::Buffer::OUTPUT, "output"},
                                             {plan::Buffer::PARAMETER, "parameter"},
                                             {plan::Buffer::STATE, "state"},
                                             {plan::Buffer::CONSTANT, "constant"}};
  return NameIn(kNames, role, "unknown").data();  // the names are literals: NUL-terminated
}

}  // namespace a8

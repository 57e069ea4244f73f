// Reading and writing plan files.
//
// Layout (little-endian):
//   [0, 64)       header: magic "A800CPLN", u32 format_version, u32 header_bytes (64),
//                 u64 message_bytes, u64 blob_offset, u64 blob_bytes, u32 crc32c, padding;
//                 crc32c covers every byte after the header (message, padding, blob);
//   [64, 64+m)    the a8.plan.Plan message (plan.proto);
//   [blob_offset, blob_offset+blob_bytes)   the blob, blob_offset a multiple of 64.
//
// ReadPlan validates everything before anything runs: magic, format version (a newer one is
// an error that says so), sizes against the file size, the checksum, the message, and then
// every field: buffer ids, dtypes, element counts (no overflow), offsets + bytes inside their
// region and the blob, live ranges inside the kernel list, kernel names known to the kernel
// catalog and consistent with their buffers' dtypes, bindings. Every failure is an
// InvalidInput error naming the file and the field ("m.plan: buffer 12 ('h1'): offset 4096 +
// 512 bytes is outside the arena (4096 bytes)").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/plan/plan.pb.h"

namespace a8 {

inline constexpr char kPlanMagic[8] = {'A', '8', '0', '0', 'C', 'P', 'L', 'N'};
inline constexpr uint32_t kPlanFormatVersion = A800C_PLAN_FORMAT_VERSION;
// The oldest format this reader still takes: format 2 differs from 3 only in LossScaler's fields
// 2-7 (a copy of the scaler settings that format 3 leaves out and this reader ignores). Format 3
// was made a new number so that a runtime that reads only 2 refuses a format-3 plan instead of
// reading its missing scaler settings as zeros.
inline constexpr uint32_t kPlanOldestReadVersion = 2;
inline constexpr uint32_t kPlanHeaderBytes = 64;
inline constexpr uint32_t kPlanAlignment = 64;

// A piece of a plan's blob held elsewhere: `bytes` stay valid while `owner` lives.
struct PlanBlobPiece {
  uint64_t offset = 0;  // where the piece lies in the blob
  std::span<const uint8_t> bytes;
  std::shared_ptr<const void> owner;
  // The bytes are private, writable memory that only `owner` holds (ReadPlanFile's read buffer or
  // private mapping): an executor given the only PlanFile holding `owner` may keep the initial
  // values there instead of copying them (runtime/core/initial_values.h).
  bool writable = false;
};

struct PlanFile {
  plan::Plan plan;
  // The initial values of PERSISTENT buffers: `blob`, or, when `pieces` is not empty, the pieces
  // (ascending, not overlapping; the bytes between them and up to `pieces_size` are zeros) and
  // `blob` empty. Pieces are how the weights travel without being copied: the compiler's lowering
  // points at the tensors it lowers, and ReadPlanFile at the mapping of the file (one piece).
  std::vector<uint8_t> blob;
  std::vector<PlanBlobPiece> pieces;
  uint64_t pieces_size = 0;

  uint64_t BlobSize() const { return pieces.empty() ? blob.size() : pieces_size; }
  // Bytes [offset, offset + n) of the blob where they lie in one piece (or in `blob`); nullptr
  // where they are outside the blob or cross a piece's end. Callers check the range first.
  const uint8_t* BlobBytes(uint64_t offset, uint64_t n) const;
};

// Serialises a plan (validating it first, so the compiler never writes a plan the runtime would
// reject). The file is written atomically: a temporary file in the same folder, fsync, rename.
Status WritePlanFile(const PlanFile& plan, const std::string& path);
// The weights are streamed from where they lie (PlanFile.pieces), the checksum computed as they
// go out (WriteStream in compiler/support/file_io.h).
StatusOr<std::string> SerializePlan(const PlanFile& plan);
// The file without its blob: the header (its checksum covering the blob too), the message and
// the padding up to the blob. A plan file is these bytes followed by `plan.blob`, written
// without joining them (WritePlanFile, the driver).
StatusOr<std::string> SerializePlanHead(const PlanFile& plan);
// The blob as it lies in the file: the pieces in order with the zeros between them (views of
// `plan`'s memory and of a static page of zeros), or `plan.blob`.
std::vector<std::string_view> PlanBlobViews(const PlanFile& plan);

StatusOr<PlanFile> ReadPlanFile(const std::string& path);
StatusOr<PlanFile> ParsePlan(const std::string& bytes, const std::string& source_name);

// The field checks ReadPlan runs on a parsed message (exposed for tests and for the writer).
Status ValidatePlan(const PlanFile& plan, const std::string& source_name);
// The part of ValidatePlan that checks the training fields (plan_training_check.cc): updates
// (ids in range, targets parameters or state of the source's type, written once, in-place
// results sharing their target's bytes) and the Training message (state buffers of the right
// type, eval kernels ascending, loss/logits/labels bound).
Status ValidateTrainingFields(const plan::Plan& plan, const std::string& source_name);
// "buffer 3 ('x')", the WHERE of a buffer in messages.
std::string PlanBufferWhere(const plan::Buffer& b, int id);

// "intermediate", "input", "output", "parameter", "state", "constant" ("unknown" otherwise).
const char* PlanBufferRoleName(int role);

// Kernel `k`'s attribute `name`, or null.
const plan::Attribute* FindPlanAttr(const plan::Kernel& k, std::string_view name);

// CRC-32C (Castagnoli). Crc32c uses the SSE4.2 `crc32` instruction where the CPU has it
// (checked at run time) and a table otherwise; Crc32cPortable is the table alone (tests compare
// the two).
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);
uint32_t Crc32cPortable(const void* data, size_t n, uint32_t crc = 0);
bool Crc32cUsesHardware();
std::string Fnv1a64Hex(const std::string& bytes);

}  // namespace a8

// The safetensors file format: parsing, validation and serialisation, with no knowledge of
// plans or executors (checkpoint.h builds a800c's training checkpoints on it; the fuzz build
// links it without the rest of the runtime).
//
// File layout: u64 little-endian header length N, N bytes of JSON padded with spaces to a
// multiple of 8, then the tensor bytes. The JSON maps each tensor name to
// {"dtype": "F32"|"F16"|"BF16"|"F64"|"I64"|"I32"|"I8"|"U8"|"BOOL", "shape": [...],
// "data_offsets": [begin, end]} (offsets relative to the end of the header) and holds a
// "__metadata__" map of strings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/ir/types.h"

namespace a8 {

// One tensor of a safetensors file: a view of bytes owned elsewhere.
struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::string_view data;
};

struct SafetensorsFile {
  // The whole file; every tensor's data views into it (shared, so that copies stay valid).
  std::shared_ptr<const std::string> bytes;
  std::vector<SafetensorsTensor> tensors;  // in file order of their data
  std::map<std::string, std::string> metadata;
};

// "F32", "BF16", ... (the safetensors dtype names); ParseSafetensorsDType is its inverse.
const char* SafetensorsDTypeName(DType dtype);
StatusOr<DType> ParseSafetensorsDType(std::string_view name);

// Serialises tensors (laid out in name order; names must be unique) with `metadata`.
StatusOr<std::string> SerializeSafetensors(const std::vector<SafetensorsTensor>& tensors,
                                           const std::map<std::string, std::string>& metadata);
// Parses and validates a whole file: header length, JSON, every entry's dtype, shape and
// offsets (inside the data, sized by dtype and shape, not overlapping, covering all of it).
// Errors are InvalidInput naming `source` and the tensor.
StatusOr<SafetensorsFile> ParseSafetensors(std::string bytes, const std::string& source);

// Reads only the header of the file at `path` and returns its __metadata__ (a checkpoint's step
// without reading its tensors). Errors name the file.
StatusOr<std::map<std::string, std::string>> ReadSafetensorsMetadata(const std::string& path);

// Checksums. __metadata__ "crc32c:NAME" holds the CRC-32C of tensor NAME's bytes as 8 lowercase
// hex digits, and "crc32c:__metadata__" that of every other metadata entry (key, NUL, value, NUL,
// in key order), so a flipped bit in any tensor, in the step, the seed or a checksum is found.
// The keys are plain metadata strings: Python's `safetensors` reads the file as before.
inline constexpr char kSafetensorsCrcPrefix[] = "crc32c:";

// Adds the checksum entries of `tensors` and of `metadata` itself to `metadata`.
void AddSafetensorsChecksums(const std::vector<SafetensorsTensor>& tensors,
                             std::map<std::string, std::string>* metadata);
// Whether the file carries any checksum entry.
bool HasSafetensorsChecksums(const SafetensorsFile& file);
// Checks that the metadata and every tensor have a checksum and that each matches; no checksum
// may name a tensor the file lacks. Errors are InvalidInput naming `source` and the tensor.
Status VerifySafetensorsChecksums(const SafetensorsFile& file, const std::string& source);

}  // namespace a8

// libFuzzer target for the safetensors reader (checkpoints, a800c-inspect): any byte string must
// give a file that validates, or a clean error. The checksum check runs on what parses. A file
// the reader accepts and the writer can write must read back to the same tensors and metadata,
// and the writer's bytes re-encode to themselves.
//
//   tools/fuzz.sh 1 safetensors
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/core/safetensors.h"

namespace {

bool SameTensors(const a8::SafetensorsFile& a, const a8::SafetensorsFile& b) {
  if (a.tensors.size() != b.tensors.size() || a.metadata != b.metadata) return false;
  for (const a8::SafetensorsTensor& t : a.tensors) {
    bool found = false;
    for (const a8::SafetensorsTensor& u : b.tensors)
      if (u.name == t.name) found = u.dtype == t.dtype && u.shape == t.shape && u.data == t.data;
    if (!found) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = a8::ParseSafetensors(std::string(reinterpret_cast<const char*>(data), size), "f");
  if (!file.ok()) return 0;
  (void)a8::VerifySafetensorsChecksums(*file, "f");
  auto again = a8::SerializeSafetensors(file->tensors, file->metadata);
  if (!again.ok()) return 0;  // names the writer refuses (empty, duplicate)
  auto back = a8::ParseSafetensors(*again, "f");
  if (!back.ok() || !SameTensors(*file, *back)) __builtin_trap();
  auto third = a8::SerializeSafetensors(back->tensors, back->metadata);
  if (!third.ok() || *third != *again) __builtin_trap();
  return 0;
}

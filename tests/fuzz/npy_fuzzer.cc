// libFuzzer target for the .npy reader: any byte string must give an array or a clean error.
// An array the reader accepts must survive the writer: its bytes read back to the same dtype,
// dims and data. Each input is read twice, with and without bf16 for `<u2`.
//
//   tools/fuzz.sh 1 npy       (build-fuzz, seeds tests/fuzz/corpus/npy, tests/fuzz/npy.dict)
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/core/npy.h"

namespace {

void Check(const std::string& bytes, bool bf16_from_u2) {
  auto array = a8::ParseNpy(bytes, "fuzz.npy", bf16_from_u2);
  if (!array.ok()) return;
  std::string again = a8::SerializeNpy(array->dtype, array->dims, array->data.data());
  auto back = a8::ParseNpy(again, "fuzz.npy", bf16_from_u2);
  if (!back.ok()) __builtin_trap();  // the reader rejects what the writer wrote
  if (back->dtype != array->dtype || back->dims != array->dims || back->data != array->data)
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes, false);
  Check(bytes, true);
  return 0;
}

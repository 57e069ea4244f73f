// libFuzzer target for the plan reader: any byte string must give a plan that passes validation,
// or a clean error. Never a crash, a hang, a huge allocation or a sanitizer report. A plan the
// reader accepts must also be accepted by the writer, and the writer's bytes read back and
// re-encode to themselves.
//
// Each input is read twice: as it is, and with its header checksum made right, so that
// mutations reach the message decoder and the field checks instead of stopping at the CRC.
//
//   tools/fuzz.sh 1 plan      (build-fuzz, seeds tests/fuzz/corpus/plan, tests/fuzz/plan.dict)
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/plan/plan_file.h"

namespace {

void Check(const std::string& bytes) {
  auto plan = a8::ParsePlan(bytes, "fuzz.plan");
  if (!plan.ok()) return;
  auto again = a8::SerializePlan(*plan);
  if (!again.ok()) __builtin_trap();  // the reader accepted what the writer rejects
  // The input may encode a field non-canonically (an int32 as a 10-byte varint with junk high
  // bits); the writer's bytes must read back and re-encode to themselves.
  auto back = a8::ParsePlan(*again, "fuzz.plan");
  if (!back.ok()) __builtin_trap();
  auto third = a8::SerializePlan(*back);
  if (!third.ok() || *third != *again) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes);
  if (bytes.size() >= a8::kPlanHeaderBytes) {
    const uint32_t crc =
        a8::Crc32c(bytes.data() + a8::kPlanHeaderBytes, bytes.size() - a8::kPlanHeaderBytes);
    for (int i = 0; i < 4; ++i) bytes[40 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
    Check(bytes);
  }
  return 0;
}

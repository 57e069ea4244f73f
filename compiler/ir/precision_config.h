// The precision request of a compile (PRECISION.md): the mode and the user's overrides, as the
// flags spell them. The driver sets `Graph::precision` from it; assign-precision reads it. A graph
// without it (or with mode fp32) is compiled in FP32 and the mixed-precision passes change
// nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/status.h"

namespace a8 {

enum class PrecisionMode { kFp32, kTf32, kAmp, kFp16, kBf16 };

// "fp32", "tf32", "amp", "fp16", "bf16": the --precision spelling and plan.precision.
inline std::string_view PrecisionModeName(PrecisionMode m) {
  switch (m) {
    case PrecisionMode::kFp32:
      return "fp32";
    case PrecisionMode::kTf32:
      return "tf32";
    case PrecisionMode::kAmp:
      return "amp";
    case PrecisionMode::kFp16:
      return "fp16";
    case PrecisionMode::kBf16:
      return "bf16";
  }
  return "fp32";
}

inline StatusOr<PrecisionMode> ParsePrecisionMode(std::string_view text) {
  for (PrecisionMode m : {PrecisionMode::kFp32, PrecisionMode::kTf32, PrecisionMode::kAmp,
                          PrecisionMode::kFp16, PrecisionMode::kBf16}) {
    if (PrecisionModeName(m) == text) return m;
  }
  return InvalidInput("--precision: unknown mode '{}' (expected fp32, tf32, amp, fp16 or bf16)",
                      text);
}

struct PrecisionConfig {
  PrecisionMode mode = PrecisionMode::kFp32;
  std::vector<std::string> fp32_ops;  // --fp32-ops: op types computed in FP32
  std::vector<std::string> fp16_ops;  // --fp16-ops: op types computed in the low type
  std::string fp32_nodes;             // --fp32-nodes: ECMAScript regex over node names
  std::string policy_file;            // --policy: a JSON policy file (policy.h)

  // Whether the mode puts anything in a 16-bit type (amp, fp16, bf16).
  bool mixed() const {
    return mode == PrecisionMode::kAmp || mode == PrecisionMode::kFp16 ||
           mode == PrecisionMode::kBf16;
  }
};

}  // namespace a8

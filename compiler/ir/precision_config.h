// The precision request of a compile (PRECISION.md): the mode and the user's overrides, as the
// flags spell them: part of the compile configuration (compiler/pass/compile_config.h), which the
// passes receive; assign-precision reads it. A compile without it (or with mode fp32) is in FP32
// and the mixed-precision passes change nothing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "compiler/ir/status.h"

namespace a8 {

enum class PrecisionMode { kFp32, kTf32, kAmp, kFp16, kBf16 };

// "fp32", "tf32", "amp", "fp16", "bf16": the --precision spelling and plan.precision.
inline constexpr EnumName<PrecisionMode> kPrecisionModeNames[] = {{PrecisionMode::kFp32, "fp32"},
                                                                  {PrecisionMode::kTf32, "tf32"},
                                                                  {PrecisionMode::kAmp, "amp"},
                                                                  {PrecisionMode::kFp16, "fp16"},
                                                                  {PrecisionMode::kBf16, "bf16"}};

inline std::string_view PrecisionModeName(PrecisionMode m) {
  return NameIn(kPrecisionModeNames, m, "fp32");
}

inline StatusOr<PrecisionMode> ParsePrecisionMode(std::string_view text) {
  if (std::optional<PrecisionMode> m = ValueIn(kPrecisionModeNames, text)) return *m;
  return InvalidInput("--precision: unknown mode '{}' (expected fp32, tf32, amp, fp16 or bf16)",
                      text);
}

// One user override. PRECISION.md: later overrides win over earlier ones, so a config keeps
// them in command-line order.
struct PrecisionOverride {
  enum Kind { kFp32Ops, kFp16Ops, kFp32Nodes, kPolicyFile };
  Kind kind = kFp32Ops;
  std::vector<std::string> ops;  // kFp32Ops, kFp16Ops: op types ("Softmax", "a8.ReluGrad")
  std::string text;              // kFp32Nodes: an ECMAScript regex; kPolicyFile: the path

  static PrecisionOverride Fp32Ops(std::vector<std::string> ops) {
    return {kFp32Ops, std::move(ops), ""};
  }
  static PrecisionOverride Fp16Ops(std::vector<std::string> ops) {
    return {kFp16Ops, std::move(ops), ""};
  }
  static PrecisionOverride Fp32Nodes(std::string regex) { return {kFp32Nodes, {}, regex}; }
  static PrecisionOverride PolicyFile(std::string path) { return {kPolicyFile, {}, path}; }
};

struct PrecisionConfig {
  // The default of `a800c --precision` (PRECISION.md, CLI.md). A graph without a config is
  // compiled as written (FP32).
  static constexpr PrecisionMode kDefaultMode = PrecisionMode::kAmp;

  PrecisionMode mode = kDefaultMode;
  // --fp32-ops, --fp16-ops, --fp32-nodes, --policy in command-line order: a later override that
  // matches a node wins over an earlier one.
  std::vector<PrecisionOverride> overrides;

  // Whether the mode puts anything in a 16-bit type (amp, fp16, bf16).
  bool mixed() const {
    return mode == PrecisionMode::kAmp || mode == PrecisionMode::kFp16 ||
           mode == PrecisionMode::kBf16;
  }
};

}  // namespace a8

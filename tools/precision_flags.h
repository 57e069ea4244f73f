// The precision flags of `a800c` and `a800c-opt` (CLI.md, PRECISION.md): --precision and the
// overrides, mapped to a PrecisionConfig.
//
// The default mode is fp32 for now: CLI.md's default, amp, becomes the default once loss scaling
// and the rest of issue 5 are done (an amp plan without dynamic loss scaling can underflow its
// FP16 gradients).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "compiler/driver/driver.h"
#include "compiler/ir/precision_config.h"
#include "compiler/ir/status.h"

namespace a8::cli {

struct PrecisionFlags {
  std::string mode = "fp32";
  std::string fp32_ops, fp16_ops;
  std::string fp32_nodes;
  std::string policy;
};

inline void AddPrecisionFlags(CLI::App& app, PrecisionFlags& f) {
  const char* group = "Precision";
  app.add_option("--precision", f.mode,
                 "Precision mode (PRECISION.md): fp32; tf32 (GEMM/conv inputs rounded to TF32 on "
                 "GPUs); amp (allow-list ops in FP16, deny-list ops in FP32, the rest follow); "
                 "fp16 (everything FP16 but pinned ops); bf16 (amp in BF16). Default: fp32 until "
                 "loss scaling lands, then amp")
      ->type_name("fp32|tf32|amp|fp16|bf16")
      ->group(group);
  app.add_option("--fp32-ops", f.fp32_ops, "Op types to compute in FP32 (e.g. Gelu,Add)")
      ->type_name("OP,OP,...")
      ->group(group);
  app.add_option("--fp16-ops", f.fp16_ops,
                 "Op types to compute in the 16-bit type of the mode (e.g. Softmax)")
      ->type_name("OP,OP,...")
      ->group(group);
  app.add_option("--fp32-nodes", f.fp32_nodes,
                 "Nodes whose ONNX name matches this regular expression compute in FP32 (their "
                 "gradients too)")
      ->type_name("REGEX")
      ->group(group);
  app.add_option("--policy", f.policy,
                 "A JSON precision policy file: {\"fp32_ops\": [...], \"fp16_ops\": [...], "
                 "\"fp32_nodes\": \"REGEX\"}; the flags above win over it")
      ->type_name("FILE")
      ->group(group);
}

// The config, or nullopt for plain fp32 with no overrides (the graph is compiled as written).
// Overrides without a mixed mode are an error (they would silently do nothing).
inline StatusOr<std::optional<PrecisionConfig>> PrecisionConfigFromFlags(const CLI::App& app,
                                                                         const PrecisionFlags& f) {
  PrecisionConfig c;
  A8_ASSIGN_OR_RETURN(c.mode, ParsePrecisionMode(f.mode));
  if (app.count("--fp32-ops") > 0) {
    A8_ASSIGN_OR_RETURN(c.fp32_ops, ParseNameList("--fp32-ops", f.fp32_ops));
  }
  if (app.count("--fp16-ops") > 0) {
    A8_ASSIGN_OR_RETURN(c.fp16_ops, ParseNameList("--fp16-ops", f.fp16_ops));
  }
  c.fp32_nodes = f.fp32_nodes;
  c.policy_file = f.policy;
  if (!c.mixed()) {
    for (const char* flag : {"--fp32-ops", "--fp16-ops", "--fp32-nodes", "--policy"}) {
      if (app.count(flag) > 0) {
        return InvalidInput(
            "{}: needs --precision=amp, fp16 or bf16 (--precision={} computes "
            "every op in FP32)",
            flag, f.mode);
      }
    }
  }
  if (c.mode == PrecisionMode::kFp32) return std::optional<PrecisionConfig>();
  return std::optional<PrecisionConfig>(c);
}

// PrecisionConfigFromFlags into `out`, for a command line's one-line call.
inline Status ApplyPrecisionFlags(const CLI::App& app, const PrecisionFlags& f,
                                  std::optional<PrecisionConfig>* out) {
  A8_ASSIGN_OR_RETURN(*out, PrecisionConfigFromFlags(app, f));
  return Status::Ok();
}

}  // namespace a8::cli

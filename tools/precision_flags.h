// The precision flags of `a800c` and `a800c-opt` (CLI.md, PRECISION.md): --precision and the
// overrides, mapped to a PrecisionConfig.
// The overrides may repeat and mix; PRECISION.md's "later overrides win over earlier ones" is
// the order in which they appear on the command line (CLI11's parse order).
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/precision_config.h"
#include "compiler/ir/status.h"
#include "driver/driver.h"

namespace a8::cli {

struct PrecisionFlags {
  std::string mode{PrecisionModeName(PrecisionConfig::kDefaultMode)};
  // One entry per occurrence, in the order of that flag's occurrences.
  std::vector<std::string> fp32_ops, fp16_ops, fp32_nodes, policy;
};

inline void AddPrecisionFlags(CLI::App& app, PrecisionFlags& f) {
  const char* group = "Precision";
  app.add_option(
         "--precision", f.mode,
         "Precision mode (PRECISION.md): fp32; tf32 (GEMM/conv inputs rounded to TF32 on "
         "GPUs); amp (allow-list ops in FP16, deny-list ops in FP32, the rest follow); "
         "fp16 (everything FP16 but pinned ops, FP16 working copy of the weights); bf16 (amp "
         "in BF16). Default: amp")
      ->type_name("fp32|tf32|amp|fp16|bf16")
      ->group(group);
  app.add_option("--fp32-ops", f.fp32_ops,
                 "Op types to compute in FP32 (e.g. Gelu,Add). The precision overrides may repeat; "
                 "where two match a node, the later on the command line wins")
      ->type_name("OP,OP,...")
      ->take_all()
      ->allow_extra_args(false)
      ->group(group);
  app.add_option("--fp16-ops", f.fp16_ops,
                 "Op types to compute in the 16-bit type of the mode (e.g. Softmax)")
      ->type_name("OP,OP,...")
      ->take_all()
      ->allow_extra_args(false)
      ->group(group);
  app.add_option("--fp32-nodes", f.fp32_nodes,
                 "Nodes whose ONNX name matches this regular expression compute in FP32 (their "
                 "gradients too)")
      ->type_name("REGEX")
      ->take_all()
      ->allow_extra_args(false)
      ->group(group);
  app.add_option("--policy", f.policy,
                 "A JSON precision policy file: {\"fp32_ops\": [...], \"fp16_ops\": [...], "
                 "\"fp32_nodes\": \"REGEX\"}, its keys applied in that order where it stands among "
                 "the overrides")
      ->type_name("FILE")
      ->take_all()
      ->allow_extra_args(false)
      ->group(group);
}

// The config, or nullopt for plain fp32 with no overrides (the graph is compiled as written).
// Overrides without a mixed mode are an error (they would silently do nothing).
inline StatusOr<std::optional<PrecisionConfig>> PrecisionConfigFromFlags(const CLI::App& app,
                                                                         const PrecisionFlags& f) {
  PrecisionConfig c;
  A8_ASSIGN_OR_RETURN(c.mode, ParsePrecisionMode(f.mode));
  // The k-th occurrence of a flag in the parse order is the k-th entry of its vector.
  std::map<std::string, size_t> seen;
  for (const CLI::Option* opt : app.parse_order()) {
    const std::string flag = opt->get_name();
    const std::vector<std::string>* values = flag == "--fp32-ops"     ? &f.fp32_ops
                                             : flag == "--fp16-ops"   ? &f.fp16_ops
                                             : flag == "--fp32-nodes" ? &f.fp32_nodes
                                             : flag == "--policy"     ? &f.policy
                                                                      : nullptr;
    if (values == nullptr) continue;
    const size_t k = seen[flag]++;
    if (k >= values->size()) return Internal("{}: occurrence {} has no value", flag, k);
    const std::string& text = (*values)[k];
    if (flag == "--fp32-ops" || flag == "--fp16-ops") {
      A8_ASSIGN_OR_RETURN(std::vector<std::string> ops, ParseNameList(flag, text));
      c.overrides.push_back(flag == "--fp32-ops" ? PrecisionOverride::Fp32Ops(std::move(ops))
                                                 : PrecisionOverride::Fp16Ops(std::move(ops)));
    } else if (flag == "--fp32-nodes") {
      c.overrides.push_back(PrecisionOverride::Fp32Nodes(text));
    } else {
      c.overrides.push_back(PrecisionOverride::PolicyFile(text));
    }
  }
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

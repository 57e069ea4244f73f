// The flags that make a CompileConfig, shared by a800c, a800c-opt and a800c debug-precision: the
// training flags (training_flags.h) and the precision flags (precision_flags.h).
#pragma once

#include <CLI/CLI.hpp>

#include "compiler/ir/status.h"
#include "compiler/pass/compile_config.h"
#include "tools/precision_flags.h"
#include "tools/training_flags.h"

namespace a8::cli {

struct CompileConfigFlags {
  TrainingFlags training;
  PrecisionFlags precision;
};

inline void AddCompileConfigFlags(CLI::App& app, CompileConfigFlags& f) {
  AddTrainingFlags(app, f.training);
  AddPrecisionFlags(app, f.precision);
}

// The training (none without --loss) and precision parts of *config from the parsed flags.
inline Status ApplyCompileConfigFlags(const CLI::App& app, const CompileConfigFlags& f,
                                      CompileConfig* config) {
  A8_ASSIGN_OR_RETURN(config->training, TrainingConfigFromFlags(app, f.training));
  return ApplyPrecisionFlags(app, f.precision, &config->precision);
}

}  // namespace a8::cli

// The pass-dump flags of the compiler programs (a800c and a800c-opt): --print-ir-*, --dump-dir,
// --pass-timing, --stop-after. Apart from cli_common.h so that the runtime's programs need no
// compiler driver header.
#pragma once

#include <CLI/CLI.hpp>

#include "driver/driver.h"

namespace a8::cli {

// --print-ir-after-all, --print-ir-before/after, --dump-dir, --pass-timing, --stop-after.
inline void AddDumpFlags(CLI::App& app, PipelineFlags& pipeline) {
  app.add_flag("--print-weights", pipeline.print_weights,
               "--emit=ir and the IR dumps print every initializer's values (default: tensors "
               "over 16 elements print <elided>, which cannot be compiled to a plan)");
  app.add_flag("--print-ir-after-all", pipeline.print_ir_after_all,
               "Print the IR after every pass to stderr, after a banner line");
  app.add_option("--print-ir-before", pipeline.print_ir_before, "Print the IR before these passes")
      ->type_name("P,...")
      ->allow_extra_args(false);
  app.add_option("--print-ir-after", pipeline.print_ir_after, "Print the IR after these passes")
      ->type_name("P,...")
      ->allow_extra_args(false);
  app.add_option("--dump-dir", pipeline.dump_dir,
                 "Write 00-input.a8ir and one numbered .a8ir file per pass")
      ->type_name("DIR");
  app.add_flag("--pass-timing", pipeline.pass_timing,
               "Print each pass's wall time and counters to stderr");
  app.add_option("--stop-after", pipeline.stop_after, "Run the passes up to and including P")
      ->type_name("P");
}

}  // namespace a8::cli

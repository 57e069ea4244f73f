// What the four programs share on the command line: the error line and exit status of CLI.md,
// CLI11 parsing with that convention, and the dump flags of a800c and a800c-opt.
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "compiler/ir/status.h"
#include "driver/driver.h"

namespace a8::cli {

// Prints `PROGRAM: error: WHERE: WHAT` and returns the exit status (2 bad input, 1 failure).
inline int Fail(const char* program, const Status& s) {
  std::cerr << program << ": error: " << s.message() << "\n";
  return s.ExitCode();
}

// Parses the command line. Returns the exit status when the program should stop here (0 after
// --help, 2 for a bad flag), nullopt to go on.
inline std::optional<int> Parse(CLI::App& app, int argc, char** argv, const char* program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    return 2;
  }
  return std::nullopt;
}

// An integer flag's check (--steps, --epochs, --seed, ...): "must be >= 1, got 0" instead of
// CLI11's PositiveNumber message, which prints the range up to the largest double.
inline CLI::Validator IntegerAtLeast(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        size_t end = 0;
        long long v = 0;
        try {
          v = std::stoll(text, &end);
        } catch (const std::exception&) {
          end = 0;
        }
        if (text.empty() || end != text.size()) {
          return "expected an integer >= " + std::to_string(min) + ", got '" + text + "'";
        }
        if (v < min) return "must be >= " + std::to_string(min) + ", got " + text;
        return "";
      },
      "N>=" + std::to_string(min));
}

// Count flags: N >= 1.
inline CLI::Validator AtLeastOne() { return IntegerAtLeast(1); }

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

// What the four programs share on the command line: the error line and exit status of CLI.md,
// CLI11 parsing with that convention, --version, count flags (the dump flags of a800c and
// a800c-opt: dump_flags.h).
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "base/version.h"
#include "compiler/ir/status.h"

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

// Parse with --version, added here as the last flag of --help: --version prints the version
// line of `program` and stops (0).
inline std::optional<int> ParseWithVersion(CLI::App& app, int argc, char** argv,
                                           const char* program) {
  // Read from the option, not a bound variable, which would outlive this call in `app`.
  // --version=false is parsed as CLI11 parses any flag's value, and does not print.
  const std::string help = "Print the version and the plan format version, then exit";
  const CLI::Option* version = app.add_flag("--version", help);
  if (auto stop = Parse(app, argc, argv, program)) return stop;
  if (version->count() > 0 && version->as<bool>()) {
    std::cout << VersionString(program) << "\n";
    return 0;
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

// Adds a count flag: an integer N >= 1 (AtLeastOne), shown as N in --help.
template <typename T>
CLI::Option* AddCountOption(CLI::App& app, std::string name, T& count, std::string help) {
  return app.add_option(std::move(name), count, std::move(help))
      ->type_name("N")
      ->check(AtLeastOne());
}

}  // namespace a8::cli

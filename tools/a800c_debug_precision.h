// `a800c debug-precision` (runtime/core/precision_debug.h): the subcommand's command line.
#pragma once

namespace a8::cli {

// argv[0] is "debug-precision"; returns the exit status (0, 1 failed run, 2 bad input).
int DebugPrecisionMain(int argc, char** argv);

}  // namespace a8::cli

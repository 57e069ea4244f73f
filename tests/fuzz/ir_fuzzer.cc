// libFuzzer target for the textual IR parser (a800c-opt's input): any text must give a graph or
// a clean error naming the line and column. A graph that parses and verifies must print to text
// that parses and verifies again and prints the same.
//
//   tools/fuzz.sh 1 ir
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto graph = a8::ParseIr(text, "fuzz.a8ir");
  if (!graph.ok() || !a8::Verify(**graph).ok()) return 0;
  const a8::PrintOptions all{.max_inline_elements = -1};
  std::string printed = a8::PrintIrToString(**graph, all);
  auto back = a8::ParseIr(printed, "printed.a8ir");
  if (!back.ok() || !a8::Verify(**back).ok()) __builtin_trap();
  if (a8::PrintIrToString(**back, all) != printed) __builtin_trap();
  return 0;
}

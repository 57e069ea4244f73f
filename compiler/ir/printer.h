// The textual IR (STYLE.md, DESIGN.md "IR text"). Deterministic; parses back with ParseIr to a
// graph that prints identically. Format:
//
//   // a800c IR
//   graph @mlp opsets {"" = 17} {
//     input %x : f32[64,784]
//     param %w1 : f32[784,256] = <elided>
//     const %shape : i64[2] = [64, -1]
//     %h1 = MatMul(%x, %w1) : f32[64,256] loc("MatMul_0")
//     %a, %b = Split(%h1, %split) {axis=1} : f32[64,128], f32[64,128] loc("Split_1")
//     %y = Clip(%h1, _, %max) : f32[64,256] loc("Clip_2")
//     output %y
//   }
//
// - Names: `%name` when the name is [A-Za-z0-9_.:/-]+, else `%"escaped name"` (C escapes).
// - Ops outside ai.onnx are qualified by domain: `ai.onnx.preview.training.Adam`, `a8.Foo`.
//   Versions are not printed: every IR node has its op's canonical form (OpDef::canonical).
// - Attributes sorted by name: int `7`, float `1e-05` (shortest round-trip form, with a `.`
//   or exponent so it reads back as a float), string `"s"`, ints `[1, 2]`, floats `[1.0, 2.5]`,
//   strings `["a"]`, tensor `tensor<f32[2]: [1.0, 2.0]>`. An empty list is `ints[]`/`floats[]`/
//   `strings[]` so its kind survives the round trip.
// - Data of params/state/consts: printed in full up to PrintOptions::max_inline_elements,
//   otherwise `<elided>` (parses back as a value without data that prints `<elided>` again).
//   Floats print in the shortest form that reads back bit-exactly; f16/bf16 as their float value;
//   NaN/Inf as `nan`, `inf`, `-inf`.
// - Comments start with `//` (dump banners are comments, so a concatenated dump still parses)
//   or `#` to end of line (used for reasons like `# pinned: fp32-op`).
#pragma once

#include <ostream>
#include <string>

#include "compiler/ir/graph.h"

namespace a8 {

struct PrintOptions {
  int64_t max_inline_elements = 16;
};

void PrintIr(const Graph& g, std::ostream& os, const PrintOptions& opts = {});
std::string PrintIrToString(const Graph& g, const PrintOptions& opts = {});
// One node line, without indentation or newline (for error messages and debugging).
std::string PrintNode(const Node& n);

}  // namespace a8

// The textual IR (STYLE.md, DESIGN.md "IR text"). Deterministic; parses back with ParseIr to a
// graph that prints identically. Format:
//
//   graph @mlp opsets {"" = 17} {
//     input %x : f32[64,784]
//     param %w1 : f32[784,256] = <elided>
//     const %shape : i64[2] = [64, -1]
//     %h1 = MatMul(%x, %w1) : f32[64,256] loc("MatMul_0")
//     %a, %b = Split(%h1, %split) {axis=1} : f32[64,128], f32[64,128] loc("Split_1")
//     %y = Clip(%h1, _, %max) : f32[64,256]
//     output %y
//   }
//
// - Graph values in creation order, nodes in program order, then the graph outputs. `opsets`
//   lists domain -> version sorted by domain (`{}` when none).
// - Names: `%name` when the name is [A-Za-z0-9_.:/-]+, else `%"escaped name"` (C escapes
//   `\"`, `\\`, `\n`, `\t`, `\r`, `\xHH`); the graph name likewise after `@`.
// - Node lines: results, op, operands (`_` for an absent optional input), attributes, one type
//   per result, and `loc("node name")` when the node has a name. A node without results is
//   just `Op(%a)`.
// - Ops outside ai.onnx are qualified by domain: `ai.onnx.preview.training.Adam`, `a8.Foo` (the
//   parser splits at the last '.'). Versions are not printed: every IR node has its op's
//   canonical form (OpDef::canonical), which the parser sets.
// - Attributes sorted by name: int `7`, float `1e-05` (shortest round-trip form, with a `.`
//   or exponent so it reads back as a float), string `"s"`, ints `[1, 2]`, floats `[1.0, 2.5]`,
//   strings `["a"]`, tensor `tensor<f32[2]: [1.0, 2.0]>` (always in full: it is part of the
//   node's meaning). An empty list is `ints[]`/`floats[]`/`strings[]` so its kind survives the
//   round trip. Attribute names outside [A-Za-z_][A-Za-z0-9_.]* are quoted.
// - Data of params/state/consts: a flat list in row-major order, printed in full up to
//   PrintOptions::max_inline_elements, otherwise `<elided>` (parses back as a value without data
//   that prints `<elided>` again). Floats print in the shortest form that reads back bit-exactly;
//   f16/bf16 as the shortest float of their value (read back with float16.h rounding, exact for
//   these); bool as `true`/`false`; NaN/Inf as `nan`, `inf`, `-inf` (NaN sign and payload are not
//   kept).
// - The memory plan (Graph::memory_plan, set by plan-memory), when there is one, closes the
//   graph after the outputs: a header with the alignment, the arena size and the lower bound,
//   then one line per arena value, ordered by (first, name):
//     memory {alignment=64, arena=1536, lower_bound=1536} {
//       %x offset=0 bytes=512 live=[-1, 0]
//       %h offset=512 bytes=1024 live=[0, 1]
//       %y offset=512 bytes=1024 live=[1, 2] alias=%h
//     }
//   `offset` and `bytes` are in bytes, `live=[first, last]` are node positions (-1: graph
//   input; the node count: graph output), `alias=%v` marks an in-place result sharing %v's
//   bytes. The parser checks that every named value exists.
// - Comments start with `//` (dump banners are comments, so one graph cut from a dump parses,
//   banner and all) or `#` to end of line (used for reasons like `# pinned: fp32-op`). The
//   printer writes none. One text holds one graph.
#pragma once

#include <ostream>
#include <string>

#include "compiler/ir/graph.h"

namespace a8 {

struct PrintOptions {
  int64_t max_inline_elements = 16;  // negative: no limit
  // False before shape-inference has typed the intermediates: node results print as `?` (an
  // unknown type; `f32[]` would claim a scalar), which the parser reads back as untyped.
  bool types_known = true;
};

void PrintIr(const Graph& g, std::ostream& os, const PrintOptions& opts = {});
std::string PrintIrToString(const Graph& g, const PrintOptions& opts = {});
// One node line, without indentation or newline (for error messages and debugging).
std::string PrintNode(const Node& n, bool types_known = true);

}  // namespace a8

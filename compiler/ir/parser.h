// Parses the textual IR of printer.h. Errors name the file, line and column:
// "f.a8ir:12:7: unknown value '%h3'".
#pragma once

#include <memory>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

// `source_name` is used in error messages. The result is not verified; run Verify.
// Types are taken from the text as written (no shape inference); a node result typed `?` (a dump
// from before shape-inference) is untyped, and `*untyped` (when given) says whether there was one.
StatusOr<std::unique_ptr<Graph>> ParseIr(const std::string& text,
                                         const std::string& source_name = "<ir>",
                                         bool* untyped = nullptr);

}  // namespace a8

// The tokenizer of the IR text (internal to compiler/ir; the grammar is in printer.h).
//
// Whitespace and newlines separate tokens and carry no meaning; `//` and `#` start comments that
// run to the end of the line. Every token records its line and column (1-based) so that parse
// errors can point at it: "f.a8ir:12:7: unknown value '%h3'".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/status.h"

namespace a8 {

enum class TokKind : uint8_t {
  kEof,
  kIdent,      // [A-Za-z_][A-Za-z0-9_.]*: keywords, ops, dtypes, attribute names, inf, nan
  kValueName,  // %name or %"quoted": text is the decoded name
  kGraphName,  // @name or @"quoted"
  kInt,        // -?[0-9]+: text is the literal
  kFloat,      // -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)? with a '.' or an exponent
  kString,     // "...": text is the decoded string
  kPunct,      // one of ( ) { } [ ] < > , = : -
};

struct Token {
  TokKind kind = TokKind::kEof;
  std::string text;
  int line = 1, col = 1;

  bool Is(TokKind k, std::string_view t) const { return kind == k && text == t; }
  bool IsPunct(char c) const { return kind == TokKind::kPunct && text.size() == 1 && text[0] == c; }
};

// Tokenizes all of `text`; the last token is kEof. Errors read "SOURCE:LINE:COL: message".
StatusOr<std::vector<Token>> TokenizeIr(std::string_view text, const std::string& source_name);

// How a token reads in an error message ("'%h3'", "'('", "end of input").
std::string DescribeToken(const Token& t);

}  // namespace a8

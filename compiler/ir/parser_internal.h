// The IR text parser's state and grammar rules (compiler/ir/parser.cc: the file, statements and
// nodes; parser_values.cc: types, tensor data and attribute values). Internal to those two files:
// everything else calls ParseIr (parser.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/ir_lexer.h"
#include "compiler/ir/status.h"

namespace a8::ir_text {

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& source)
      : toks_(std::move(tokens)), source_(source) {}

  StatusOr<std::unique_ptr<Graph>> Run();
  // Whether a node result was typed `?` (a dump from before shape-inference).
  bool untyped() const { return untyped_; }

 private:
  bool untyped_ = false;
  // A use whose value was not yet defined where it appeared.
  struct Fixup {
    Node* node;
    int operand;
    Token tok;
  };

  const Token& Peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  Token Take() {
    Token t = Peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  Status ErrorAt(const Token& t, const std::string& message) const {
    return InvalidInput("{}:{}:{}: {}", source_, t.line, t.col, message);
  }
  Status Expected(const std::string& what) const {
    return ErrorAt(Peek(), fmt::format("expected {}, found {}", what, DescribeToken(Peek())));
  }
  Status ExpectPunct(char c) {
    if (!Peek().IsPunct(c)) return Expected(fmt::format("'{}'", c));
    Take();
    return Status::Ok();
  }
  bool TakePunct(char c) {
    if (!Peek().IsPunct(c)) return false;
    Take();
    return true;
  }
  StatusOr<Token> ExpectKind(TokKind kind, const std::string& what) {
    if (Peek().kind != kind) return Expected(what);
    return Take();
  }

  Status ParseOpsets();
  Status ParseStatement();
  Status ParseGraphValue(ValueRole role);
  Status ParseNode();
  Status ParseMemoryPlan();
  Status ParseMemoryEntry();
  StatusOr<int64_t> ParseKeyInt(const std::string& key);
  Status CheckMemoryPlan();
  Status CheckNewName(const Token& name);
  StatusOr<TensorType> ParseType();
  StatusOr<int64_t> ParseInt(const Token& t);
  // A float literal: FLOAT, INT, inf, nan, or '-' inf/nan. `what` names the expected thing.
  StatusOr<double> ParseFloating(bool as_float32, const std::string& what);
  StatusOr<std::shared_ptr<TensorData>> ParseData(const TensorType& type);
  Status ParseElement(TensorData* d, int64_t i);
  StatusOr<Attribute> ParseAttrValue();
  StatusOr<Attribute> ParseAttrList(std::optional<AttrKind> forced);

  std::vector<Token> toks_;
  size_t pos_ = 0;
  const std::string& source_;
  std::unique_ptr<Graph> graph_;
  std::vector<Fixup> fixups_;
  std::vector<Token> outputs_;                    // `output %y`, resolved at the end like fixups
  std::vector<std::pair<Token, Token>> updates_;  // `update %w = %w.new`, likewise
  std::vector<Token> plan_names_;                 // names in the memory block, checked at the end
};

}  // namespace a8::ir_text

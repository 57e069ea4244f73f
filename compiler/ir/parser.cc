// Recursive-descent parser of the IR text (grammar in printer.h):
//
//   file    := 'graph' GRAPHNAME ['opsets' '{' [STRING '=' INT {',' ...}] '}'] '{' stmt* '}'
//   stmt    := ('input'|'param'|'state'|'const') VALUE ':' type ['=' data]
//            | 'output' VALUE
//            | 'update' VALUE '=' VALUE
//            | 'memory' '{' IDENT '=' INT {',' IDENT '=' INT} '}' '{' entry* '}'
//   entry   := VALUE 'offset' '=' INT 'bytes' '=' INT 'live' '=' '[' INT ',' INT ']'
//              ['alias' '=' VALUE]
//            | [VALUE {',' VALUE} '='] OP '(' [operand {',' operand}] ')' ['{' attrs '}']
//              [':' type {',' type}] ['loc' '(' STRING ')']
//   operand := VALUE | '_'
//   type    := DTYPE '[' [INT {',' INT}] ']'
//   data    := '<' 'elided' '>' | '[' [literal {',' literal}] ']'
//
// Uses may come before their definition (a printed graph with a cycle reads back, so the
// verifier can report it); an operand still undefined at the end is an "unknown value" error at
// its use. The graph is built as it is read; nothing is verified (run Verify).
#include "compiler/ir/parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include "compiler/ir/ir_lexer.h"
#include "compiler/ir/op_table.h"
#include "kernels/common/float16.h"

namespace a8 {
namespace {

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

StatusOr<std::unique_ptr<Graph>> Parser::Run() {
  graph_ = std::make_unique<Graph>();
  graph_->source = source_;
  if (!Peek().Is(TokKind::kIdent, "graph")) return Expected("'graph'");
  Take();
  A8_ASSIGN_OR_RETURN(Token name, ExpectKind(TokKind::kGraphName, "a graph name '@name'"));
  graph_->name = name.text;
  if (Peek().Is(TokKind::kIdent, "opsets")) {
    Take();
    A8_RETURN_IF_ERROR(ParseOpsets());
  }
  A8_RETURN_IF_ERROR(ExpectPunct('{'));
  while (!Peek().IsPunct('}')) {
    if (Peek().kind == TokKind::kEof) return Expected("'}' closing the graph");
    A8_RETURN_IF_ERROR(ParseStatement());
  }
  Take();
  if (Peek().kind != TokKind::kEof) return Expected("end of input after the graph");

  for (const Fixup& f : fixups_) {
    Value* v = graph_->FindValue(f.tok.text);
    if (!v) return ErrorAt(f.tok, fmt::format("unknown value {}", DescribeToken(f.tok)));
    f.node->SetInput(f.operand, v);
  }
  for (const Token& t : outputs_) {
    Value* v = graph_->FindValue(t.text);
    if (!v) return ErrorAt(t, fmt::format("unknown value {}", DescribeToken(t)));
    graph_->AddOutput(v);
  }
  for (const auto& [target_tok, value_tok] : updates_) {
    Value* target = graph_->FindValue(target_tok.text);
    if (!target)
      return ErrorAt(target_tok, fmt::format("unknown value {}", DescribeToken(target_tok)));
    Value* value = graph_->FindValue(value_tok.text);
    if (!value)
      return ErrorAt(value_tok, fmt::format("unknown value {}", DescribeToken(value_tok)));
    graph_->AddUpdate(target, value);
  }
  A8_RETURN_IF_ERROR(CheckMemoryPlan());
  return std::move(graph_);
}

Status Parser::ParseOpsets() {
  A8_RETURN_IF_ERROR(ExpectPunct('{'));
  if (TakePunct('}')) return Status::Ok();
  do {
    A8_ASSIGN_OR_RETURN(Token domain, ExpectKind(TokKind::kString, "a domain string"));
    A8_RETURN_IF_ERROR(ExpectPunct('='));
    A8_ASSIGN_OR_RETURN(Token version, ExpectKind(TokKind::kInt, "an opset version"));
    A8_ASSIGN_OR_RETURN(int64_t v, ParseInt(version));
    if (!graph_->opsets.emplace(domain.text, v).second) {
      return ErrorAt(domain, fmt::format("duplicate opset for domain \"{}\"", domain.text));
    }
  } while (TakePunct(','));
  return ExpectPunct('}');
}

Status Parser::ParseStatement() {
  const Token& t = Peek();
  if (t.Is(TokKind::kIdent, "memory") && Peek(1).IsPunct('{')) return ParseMemoryPlan();
  if (t.kind == TokKind::kIdent && Peek(1).kind == TokKind::kValueName) {
    static const std::pair<std::string_view, ValueRole> kRoles[] = {
        {"input", ValueRole::kInput},
        {"param", ValueRole::kParameter},
        {"state", ValueRole::kState},
        {"const", ValueRole::kConstant}};
    for (const auto& [keyword, role] : kRoles) {
      if (t.text == keyword) {
        Take();
        return ParseGraphValue(role);
      }
    }
    if (t.text == "output") {
      Take();
      outputs_.push_back(Take());
      return Status::Ok();
    }
    if (t.text == "update") {
      Take();
      Token target = Take();
      A8_RETURN_IF_ERROR(ExpectPunct('='));
      A8_ASSIGN_OR_RETURN(Token value, ExpectKind(TokKind::kValueName, "a value '%name'"));
      updates_.emplace_back(std::move(target), std::move(value));
      return Status::Ok();
    }
    return ErrorAt(t, fmt::format("unknown keyword '{}' (expected input, param, state, const, "
                                  "output or update)",
                                  t.text));
  }
  if (t.kind == TokKind::kValueName || (t.kind == TokKind::kIdent && Peek(1).IsPunct('('))) {
    return ParseNode();
  }
  return Expected("a declaration, a node or '}'");
}

Status Parser::ParseMemoryPlan() {
  if (graph_->memory_plan) return ErrorAt(Peek(), "a second memory block");
  Take();
  graph_->memory_plan.emplace();
  MemoryPlan& plan = *graph_->memory_plan;
  A8_RETURN_IF_ERROR(ExpectPunct('{'));
  std::map<std::string, int64_t*> fields = {{"alignment", &plan.alignment},
                                            {"arena", &plan.arena_bytes},
                                            {"lower_bound", &plan.lower_bound}};
  std::map<std::string, bool> seen;
  do {
    A8_ASSIGN_OR_RETURN(Token key, ExpectKind(TokKind::kIdent, "alignment, arena or lower_bound"));
    auto it = fields.find(key.text);
    if (it == fields.end() || seen[key.text]) {
      return ErrorAt(key, fmt::format("unexpected memory field '{}' (expected alignment, arena "
                                      "and lower_bound, once each)",
                                      key.text));
    }
    seen[key.text] = true;
    A8_RETURN_IF_ERROR(ExpectPunct('='));
    A8_ASSIGN_OR_RETURN(Token value, ExpectKind(TokKind::kInt, "an integer"));
    A8_ASSIGN_OR_RETURN(*it->second, ParseInt(value));
  } while (TakePunct(','));
  if (seen.size() != fields.size()) return Expected("alignment, arena and lower_bound");
  A8_RETURN_IF_ERROR(ExpectPunct('}'));
  A8_RETURN_IF_ERROR(ExpectPunct('{'));
  while (!TakePunct('}')) A8_RETURN_IF_ERROR(ParseMemoryEntry());
  return Status::Ok();
}

StatusOr<int64_t> Parser::ParseKeyInt(const std::string& key) {
  if (!Peek().Is(TokKind::kIdent, key)) return Expected(fmt::format("'{}'", key));
  Take();
  A8_RETURN_IF_ERROR(ExpectPunct('='));
  A8_ASSIGN_OR_RETURN(Token value, ExpectKind(TokKind::kInt, "an integer"));
  return ParseInt(value);
}

Status Parser::ParseMemoryEntry() {
  A8_ASSIGN_OR_RETURN(Token name, ExpectKind(TokKind::kValueName, "a value '%name' or '}'"));
  MemoryPlan& plan = *graph_->memory_plan;
  if (plan.values.count(name.text)) {
    return ErrorAt(name, fmt::format("{} appears twice in the memory block", DescribeToken(name)));
  }
  BufferAssignment a;
  A8_ASSIGN_OR_RETURN(a.offset, ParseKeyInt("offset"));
  A8_ASSIGN_OR_RETURN(a.bytes, ParseKeyInt("bytes"));
  if (!Peek().Is(TokKind::kIdent, "live")) return Expected("'live'");
  Take();
  A8_RETURN_IF_ERROR(ExpectPunct('='));
  A8_RETURN_IF_ERROR(ExpectPunct('['));
  A8_ASSIGN_OR_RETURN(Token first, ExpectKind(TokKind::kInt, "the first position"));
  A8_RETURN_IF_ERROR(ExpectPunct(','));
  A8_ASSIGN_OR_RETURN(Token last, ExpectKind(TokKind::kInt, "the last position"));
  A8_RETURN_IF_ERROR(ExpectPunct(']'));
  A8_ASSIGN_OR_RETURN(int64_t f, ParseInt(first));
  A8_ASSIGN_OR_RETURN(int64_t l, ParseInt(last));
  if (a.offset < 0 || a.bytes < 0 || f < -1 || l < f || l > std::numeric_limits<int>::max()) {
    return ErrorAt(name, fmt::format("bad memory entry for {}: negative offset or size, or "
                                     "live range not -1 <= first <= last",
                                     DescribeToken(name)));
  }
  a.first = static_cast<int>(f);
  a.last = static_cast<int>(l);
  if (Peek().Is(TokKind::kIdent, "alias")) {
    Take();
    A8_RETURN_IF_ERROR(ExpectPunct('='));
    A8_ASSIGN_OR_RETURN(Token alias, ExpectKind(TokKind::kValueName, "the aliased value"));
    a.alias_of = alias.text;
    plan_names_.push_back(alias);
  }
  plan_names_.push_back(name);
  plan.values[name.text] = std::move(a);
  return Status::Ok();
}

Status Parser::CheckMemoryPlan() {
  for (const Token& t : plan_names_) {
    if (!graph_->FindValue(t.text)) {
      return ErrorAt(t, fmt::format("unknown value {} in the memory block", DescribeToken(t)));
    }
    if (!graph_->memory_plan->values.count(t.text)) {
      return ErrorAt(t, fmt::format("alias of {}, which has no memory entry", DescribeToken(t)));
    }
  }
  return Status::Ok();
}

Status Parser::CheckNewName(const Token& name) {
  if (graph_->FindValue(name.text)) {
    return ErrorAt(name, fmt::format("redefinition of {}", DescribeToken(name)));
  }
  return Status::Ok();
}

Status Parser::ParseGraphValue(ValueRole role) {
  Token name = Take();
  A8_RETURN_IF_ERROR(CheckNewName(name));
  A8_RETURN_IF_ERROR(ExpectPunct(':'));
  A8_ASSIGN_OR_RETURN(TensorType type, ParseType());
  TensorDataPtr data;
  if (Peek().IsPunct('=')) {
    if (role == ValueRole::kInput) {
      return ErrorAt(Peek(), fmt::format("graph input {} cannot have data", DescribeToken(name)));
    }
    Take();
    A8_ASSIGN_OR_RETURN(data, ParseData(type));
  }
  graph_->AddGraphValue(name.text, role, std::move(type), std::move(data));
  return Status::Ok();
}

Status Parser::ParseNode() {
  std::vector<Token> out_names;
  if (Peek().kind == TokKind::kValueName) {
    do {
      A8_ASSIGN_OR_RETURN(Token name, ExpectKind(TokKind::kValueName, "a result name '%name'"));
      A8_RETURN_IF_ERROR(CheckNewName(name));
      for (const Token& prev : out_names) {
        if (prev.text == name.text) {
          return ErrorAt(name, fmt::format("redefinition of {}", DescribeToken(name)));
        }
      }
      out_names.push_back(std::move(name));
    } while (TakePunct(','));
    A8_RETURN_IF_ERROR(ExpectPunct('='));
  }
  A8_ASSIGN_OR_RETURN(Token op_tok, ExpectKind(TokKind::kIdent, "an op name"));
  // The domain is everything before the last '.': "ai.onnx.preview.training.Adam", "a8.Foo".
  std::string domain, op = op_tok.text;
  if (size_t dot = op.rfind('.'); dot != std::string::npos) {
    domain = op.substr(0, dot);
    op = op.substr(dot + 1);
  }
  if (op.empty()) return ErrorAt(op_tok, fmt::format("malformed op name '{}'", op_tok.text));

  A8_RETURN_IF_ERROR(ExpectPunct('('));
  std::vector<Value*> inputs;
  std::vector<std::pair<int, Token>> pending;
  if (!Peek().IsPunct(')')) {
    do {
      if (Peek().Is(TokKind::kIdent, "_")) {
        Take();
        inputs.push_back(nullptr);
        continue;
      }
      A8_ASSIGN_OR_RETURN(Token in, ExpectKind(TokKind::kValueName, "an operand '%name' or '_'"));
      Value* v = graph_->FindValue(in.text);
      if (!v) pending.emplace_back(static_cast<int>(inputs.size()), in);
      inputs.push_back(v);
    } while (TakePunct(','));
  }
  A8_RETURN_IF_ERROR(ExpectPunct(')'));

  std::map<std::string, Attribute> attrs;
  if (TakePunct('{')) {
    do {
      Token name = Take();
      if (name.kind != TokKind::kIdent && name.kind != TokKind::kString) {
        return ErrorAt(name,
                       fmt::format("expected an attribute name, found {}", DescribeToken(name)));
      }
      A8_RETURN_IF_ERROR(ExpectPunct('='));
      A8_ASSIGN_OR_RETURN(Attribute value, ParseAttrValue());
      if (!attrs.emplace(name.text, std::move(value)).second) {
        return ErrorAt(name, fmt::format("duplicate attribute '{}'", name.text));
      }
    } while (TakePunct(','));
    A8_RETURN_IF_ERROR(ExpectPunct('}'));
  }

  std::vector<std::pair<std::string, TensorType>> outputs;
  if (!out_names.empty()) {
    const Token& colon = Peek();
    A8_RETURN_IF_ERROR(ExpectPunct(':'));
    std::vector<TensorType> types;
    do {
      if (TakePunct('?')) {  // not typed yet: shape-inference types it
        untyped_ = true;
        types.emplace_back();
        continue;
      }
      A8_ASSIGN_OR_RETURN(TensorType type, ParseType());
      types.push_back(std::move(type));
    } while (TakePunct(','));
    if (types.size() != out_names.size()) {
      return ErrorAt(colon, fmt::format("{} result{} but {} type{}", out_names.size(),
                                        out_names.size() == 1 ? "" : "s", types.size(),
                                        types.size() == 1 ? "" : "s"));
    }
    for (size_t i = 0; i < types.size(); ++i) outputs.emplace_back(out_names[i].text, types[i]);
  }

  std::string node_name;
  if (Peek().Is(TokKind::kIdent, "loc") && Peek(1).IsPunct('(')) {
    Take();
    Take();
    A8_ASSIGN_OR_RETURN(Token loc, ExpectKind(TokKind::kString, "a node name string"));
    node_name = loc.text;
    A8_RETURN_IF_ERROR(ExpectPunct(')'));
  }

  Node* node = graph_->AddNode(op, domain, std::move(inputs), outputs, std::move(attrs), node_name);
  const OpDef* def = FindOp(domain, op);
  node->set_version(def ? def->canonical : 0);
  for (auto& [operand, tok] : pending) fixups_.push_back(Fixup{node, operand, std::move(tok)});
  return Status::Ok();
}

StatusOr<TensorType> Parser::ParseType() {
  A8_ASSIGN_OR_RETURN(Token dtype, ExpectKind(TokKind::kIdent, "a type such as f32[2,3]"));
  auto parsed = ParseDTypeName(dtype.text);
  if (!parsed.ok()) return ErrorAt(dtype, parsed.status().message());
  TensorType type{*parsed, {}};
  A8_RETURN_IF_ERROR(ExpectPunct('['));
  if (!TakePunct(']')) {
    do {
      A8_ASSIGN_OR_RETURN(Token dim, ExpectKind(TokKind::kInt, "a dimension"));
      A8_ASSIGN_OR_RETURN(int64_t d, ParseInt(dim));
      if (d < 0) return ErrorAt(dim, fmt::format("negative dimension {}", d));
      type.dims.push_back(d);
    } while (TakePunct(','));
    A8_RETURN_IF_ERROR(ExpectPunct(']'));
  }
  return type;
}

StatusOr<int64_t> Parser::ParseInt(const Token& t) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec != std::errc() || end != t.text.data() + t.text.size()) {
    return ErrorAt(t, fmt::format("integer '{}' is out of range for i64", t.text));
  }
  return v;
}

StatusOr<double> Parser::ParseFloating(bool as_float32, const std::string& what) {
  Token t = Take();
  bool negative = false;
  Token start = t;
  if (t.IsPunct('-') && Peek().kind == TokKind::kIdent) {
    negative = true;
    t = Take();
  }
  if (t.kind == TokKind::kIdent && (t.text == "inf" || t.text == "nan")) {
    double v = t.text == "inf" ? std::numeric_limits<double>::infinity()
                               : std::numeric_limits<double>::quiet_NaN();
    return negative ? -v : v;
  }
  if (negative || (t.kind != TokKind::kFloat && t.kind != TokKind::kInt)) {
    return ErrorAt(start, fmt::format("expected {}, found {}", what, DescribeToken(start)));
  }
  const char* b = t.text.data();
  const char* e = b + t.text.size();
  std::from_chars_result r;
  double v = 0;
  if (as_float32) {
    float f = 0;
    r = std::from_chars(b, e, f);
    v = f;
  } else {
    r = std::from_chars(b, e, v);
  }
  if (r.ec != std::errc() || r.ptr != e) {
    return ErrorAt(
        t, fmt::format("number '{}' is out of range for {}", t.text, as_float32 ? "f32" : "f64"));
  }
  return v;
}

StatusOr<std::shared_ptr<TensorData>> Parser::ParseData(const TensorType& type) {
  if (Peek().IsPunct('<')) {
    Take();
    if (!Peek().Is(TokKind::kIdent, "elided")) return Expected("'elided'");
    Take();
    A8_RETURN_IF_ERROR(ExpectPunct('>'));
    return std::shared_ptr<TensorData>();
  }
  const Token& open = Peek();
  A8_RETURN_IF_ERROR(ExpectPunct('['));
  auto n = type.NumElements();
  if (!n.ok()) return ErrorAt(open, fmt::format("{}: {}", type.ToString(), n.status().message()));
  // Read the literals before allocating, so a huge type with a short list is an error, not an
  // allocation.
  size_t first = pos_;
  int64_t count = 0;
  if (!Peek().IsPunct(']')) {
    while (!Peek().IsPunct(']') && Peek().kind != TokKind::kEof) {
      if (Peek().IsPunct(',')) ++count;
      Take();
    }
    ++count;
  }
  if (count != *n) {
    return ErrorAt(
        open, fmt::format("{} has {} elements but the data has {}", type.ToString(), *n, count));
  }
  pos_ = first;
  auto data = TensorData::Make(type);
  for (int64_t i = 0; i < *n; ++i) {
    if (i) A8_RETURN_IF_ERROR(ExpectPunct(','));
    A8_RETURN_IF_ERROR(ParseElement(data.get(), i));
  }
  A8_RETURN_IF_ERROR(ExpectPunct(']'));
  return data;
}

Status Parser::ParseElement(TensorData* d, int64_t i) {
  DType dt = d->type.dtype;
  std::string what = fmt::format("a {} element", DTypeName(dt));
  if (IsFloat(dt)) {
    Token at = Peek();
    A8_ASSIGN_OR_RETURN(double v, ParseFloating(dt != DType::kF64, what));
    float f = static_cast<float>(v);
    switch (dt) {
      case DType::kF64:
        d->mutable_data<double>()[i] = v;
        break;
      case DType::kF32:
        d->mutable_data<float>()[i] = f;
        break;
      case DType::kF16: {
        uint16_t h = FloatToHalfBits(f);
        if (std::isfinite(f) && (h & 0x7c00u) == 0x7c00u) {
          return ErrorAt(at, fmt::format("{} is out of range for f16", at.text));
        }
        d->mutable_data<uint16_t>()[i] = h;
        break;
      }
      default: {
        uint16_t b = FloatToBFloat16Bits(f);
        if (std::isfinite(f) && (b & 0x7f80u) == 0x7f80u) {
          return ErrorAt(at, fmt::format("{} is out of range for bf16", at.text));
        }
        d->mutable_data<uint16_t>()[i] = b;
      }
    }
    return Status::Ok();
  }
  Token t = Take();
  if (dt == DType::kBool) {
    if (t.Is(TokKind::kIdent, "true") || t.Is(TokKind::kInt, "1")) {
      d->mutable_data<uint8_t>()[i] = 1;
    } else if (t.Is(TokKind::kIdent, "false") || t.Is(TokKind::kInt, "0")) {
      d->mutable_data<uint8_t>()[i] = 0;
    } else {
      return ErrorAt(t, fmt::format("expected true or false, found {}", DescribeToken(t)));
    }
    return Status::Ok();
  }
  if (t.kind != TokKind::kInt) {
    return ErrorAt(t, fmt::format("expected {}, found {}", what, DescribeToken(t)));
  }
  A8_ASSIGN_OR_RETURN(int64_t v, ParseInt(t));
  auto check = [&](int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi) {
      return ErrorAt(t, fmt::format("{} is out of range for {}", v, DTypeName(dt)));
    }
    return Status::Ok();
  };
  switch (dt) {
    case DType::kI64:
      d->mutable_data<int64_t>()[i] = v;
      break;
    case DType::kI32:
      A8_RETURN_IF_ERROR(
          check(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
      d->mutable_data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DType::kI8:
      A8_RETURN_IF_ERROR(check(-128, 127));
      d->mutable_data<int8_t>()[i] = static_cast<int8_t>(v);
      break;
    default:
      A8_RETURN_IF_ERROR(check(0, 255));
      d->mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
  return Status::Ok();
}

StatusOr<Attribute> Parser::ParseAttrValue() {
  const Token& t = Peek();
  switch (t.kind) {
    case TokKind::kInt: {
      Token tok = Take();
      A8_ASSIGN_OR_RETURN(int64_t v, ParseInt(tok));
      return Attribute(v);
    }
    case TokKind::kString:
      return Attribute(Take().text);
    case TokKind::kFloat: {
      A8_ASSIGN_OR_RETURN(double v, ParseFloating(true, "a float"));
      return Attribute(static_cast<float>(v));
    }
    default:
      break;
  }
  if (t.IsPunct('-') || t.Is(TokKind::kIdent, "inf") || t.Is(TokKind::kIdent, "nan")) {
    A8_ASSIGN_OR_RETURN(double v, ParseFloating(true, "an attribute value"));
    return Attribute(static_cast<float>(v));
  }
  if (t.IsPunct('[')) return ParseAttrList(std::nullopt);
  if (t.kind == TokKind::kIdent && Peek(1).IsPunct('[')) {
    static const std::pair<std::string_view, AttrKind> kKinds[] = {
        {"ints", AttrKind::kInts}, {"floats", AttrKind::kFloats}, {"strings", AttrKind::kStrings}};
    for (const auto& [word, kind] : kKinds) {
      if (t.text == word) {
        Take();
        return ParseAttrList(kind);
      }
    }
  }
  if (t.Is(TokKind::kIdent, "tensor") && Peek(1).IsPunct('<')) {
    Take();
    Take();
    A8_ASSIGN_OR_RETURN(TensorType type, ParseType());
    A8_RETURN_IF_ERROR(ExpectPunct(':'));
    if (!Peek().IsPunct('[')) return Expected("'[' (tensor attributes are never elided)");
    A8_ASSIGN_OR_RETURN(std::shared_ptr<TensorData> data, ParseData(type));
    A8_RETURN_IF_ERROR(ExpectPunct('>'));
    return Attribute(TensorDataPtr(std::move(data)));
  }
  return Expected("an attribute value (int, float, \"string\", list or tensor<...>)");
}

// `[...]` after an optional kind word. Without one, the literals decide: strings if the first is
// a string, floats if any is a float, else ints; an empty list needs the kind word.
StatusOr<Attribute> Parser::ParseAttrList(std::optional<AttrKind> forced) {
  const Token& open = Peek();
  A8_RETURN_IF_ERROR(ExpectPunct('['));
  size_t first = pos_;
  std::optional<AttrKind> kind = forced;
  if (!kind) {
    if (Peek().IsPunct(']')) {
      return ErrorAt(open, "an empty list needs its kind: ints[], floats[] or strings[]");
    }
    kind = Peek().kind == TokKind::kString ? AttrKind::kStrings : AttrKind::kInts;
    for (size_t i = first;
         kind == AttrKind::kInts && !toks_[i].IsPunct(']') && toks_[i].kind != TokKind::kEof; ++i) {
      const Token& e = toks_[i];
      if (e.kind == TokKind::kFloat || e.IsPunct('-') || e.Is(TokKind::kIdent, "inf") ||
          e.Is(TokKind::kIdent, "nan")) {
        kind = AttrKind::kFloats;
      }
    }
  }
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  if (!Peek().IsPunct(']')) {
    do {
      if (*kind == AttrKind::kStrings) {
        A8_ASSIGN_OR_RETURN(Token s, ExpectKind(TokKind::kString, "a string"));
        strings.push_back(s.text);
      } else if (*kind == AttrKind::kFloats) {
        A8_ASSIGN_OR_RETURN(double v, ParseFloating(true, "a float"));
        floats.push_back(static_cast<float>(v));
      } else {
        A8_ASSIGN_OR_RETURN(Token i, ExpectKind(TokKind::kInt, "an integer"));
        A8_ASSIGN_OR_RETURN(int64_t v, ParseInt(i));
        ints.push_back(v);
      }
    } while (TakePunct(','));
  }
  A8_RETURN_IF_ERROR(ExpectPunct(']'));
  if (*kind == AttrKind::kStrings) return Attribute(std::move(strings));
  if (*kind == AttrKind::kFloats) return Attribute(std::move(floats));
  return Attribute(std::move(ints));
}

}  // namespace

StatusOr<std::unique_ptr<Graph>> ParseIr(const std::string& text, const std::string& source_name,
                                         bool* untyped) {
  A8_ASSIGN_OR_RETURN(std::vector<Token> tokens, TokenizeIr(text, source_name));
  Parser parser(std::move(tokens), source_name);
  auto graph = parser.Run();
  if (untyped != nullptr) *untyped = parser.untyped();
  return graph;
}

}  // namespace a8

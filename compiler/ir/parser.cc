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

#include "compiler/ir/op_table.h"
#include "compiler/ir/parser_internal.h"

namespace a8 {
namespace ir_text {

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
    for (ValueRole role :
         {ValueRole::kInput, ValueRole::kParameter, ValueRole::kState, ValueRole::kConstant}) {
      if (t.text == ValueRoleName(role)) {
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

}  // namespace ir_text

StatusOr<std::unique_ptr<Graph>> ParseIr(const std::string& text, const std::string& source_name,
                                         bool* untyped) {
  A8_ASSIGN_OR_RETURN(std::vector<Token> tokens, TokenizeIr(text, source_name));
  ir_text::Parser parser(std::move(tokens), source_name);
  auto graph = parser.Run();
  if (untyped != nullptr) *untyped = parser.untyped();
  return graph;
}

}  // namespace a8

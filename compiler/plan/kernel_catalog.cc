// The kernel catalog (see kernel_catalog.h): one row per op, from the op table's signatures
// (OpDef::kernel).
#include "compiler/plan/kernel_catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "compiler/ir/op_table.h"

namespace a8 {
namespace {

using DTypes = std::vector<DType>;

struct Token {
  char var = 0;               // type variable, or 0
  DType fixed = DType::kF32;  // when var == 0
  bool optional = false, variadic = false;
};

// An op's signature (OpDef::kernel) with its tokens parsed.
struct CompiledRow {
  std::string op;  // qualified: "a8.ReluGrad"
  const KernelRowSpec* spec;
  std::vector<Token> ins, outs;
};

std::vector<Token> ParseTokens(const std::string& text) {
  std::vector<Token> out;
  if (text.empty()) return out;  // an op without inputs (RandomUniform)
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    Token t;
    if (!item.empty() && (item.back() == '?' || item.back() == '*')) {
      (item.back() == '?' ? t.optional : t.variadic) = true;
      item.pop_back();
    }
    if (item.size() == 1 && item[0] >= 'A' && item[0] <= 'Z') {
      t.var = item[0];
    } else {
      auto d = ParseDTypeName(item);
      assert(d.ok());
      t.fixed = *d;
    }
    out.push_back(t);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// Every op that declares a signature, by qualified name.
const std::map<std::string, CompiledRow, std::less<>>& Catalog() {
  static const auto* kCatalog = [] {
    auto* m = new std::map<std::string, CompiledRow, std::less<>>();
    for (const OpDef& op : AllOps()) {
      if (!op.kernel) continue;
      std::string q = QualifiedName(op);
      (*m)[q] = CompiledRow{q, &*op.kernel, ParseTokens(op.kernel->ins),
                            ParseTokens(op.kernel->outs)};
    }
    return m;
  }();
  return *kCatalog;
}

std::string SetText(const DTypes& set) {
  std::string s = "{";
  for (DType d : set) s += (s.size() > 1 ? "," : "") + std::string(DTypeName(d));
  return s + "}";
}

std::string DTypeText(std::optional<DType> d) {
  return d ? std::string(DTypeName(*d)) : std::string("_");
}

// Checks one side (inputs or outputs) against its tokens, binding type variables.
Status MatchSide(const std::string& kernel, const char* side, const std::vector<Token>& tokens,
                 const std::vector<std::optional<DType>>& dtypes, const CompiledRow& row,
                 std::map<char, DType>* bound) {
  size_t required = 0;
  for (const Token& t : tokens) required += t.optional ? 0 : 1;
  const bool variadic = !tokens.empty() && tokens.back().variadic;
  if (dtypes.size() < required || (!variadic && dtypes.size() > tokens.size())) {
    std::string range = variadic ? fmt::format("at least {}", required)
                        : required == tokens.size()
                            ? fmt::format("{}", required)
                            : fmt::format("{} to {}", required, tokens.size());
    return InvalidInput("kernel '{}': {} expects {} {}, got {}", kernel, row.op, range, side,
                        dtypes.size());
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const Token& t = tokens[std::min(i, tokens.size() - 1)];
    if (!dtypes[i]) {
      if (!t.optional) {
        return InvalidInput("kernel '{}': {} {} {} is required, got `_`", kernel, row.op,
                            side == std::string("inputs") ? "input" : "output", i);
      }
      continue;
    }
    DType d = *dtypes[i];
    if (t.var == 0) {
      if (d != t.fixed) {
        return InvalidInput("kernel '{}': {} {} must be {}, got {}", kernel, side, i,
                            DTypeName(t.fixed), DTypeName(d));
      }
      continue;
    }
    auto it = bound->find(t.var);
    if (it != bound->end()) {
      if (it->second != d) {
        return InvalidInput("kernel '{}': {} {} must have type {} = {}, got {}", kernel, side, i,
                            t.var, DTypeName(it->second), DTypeName(d));
      }
      continue;
    }
    const DTypes* set = nullptr;
    for (const auto& [v, s] : row.spec->vars) {
      if (v == t.var) set = &s;
    }
    if (set == nullptr || std::find(set->begin(), set->end(), d) == set->end()) {
      return InvalidInput("kernel '{}': {} must be one of {}, got {}", kernel, t.var,
                          set ? SetText(*set) : "{}", DTypeName(d));
    }
    (*bound)[t.var] = d;
  }
  return Status::Ok();
}

std::string TokensText(const std::vector<Token>& tokens) {
  std::string s;
  for (const Token& t : tokens) {
    if (!s.empty()) s += ",";
    s += t.var ? std::string(1, t.var) : std::string(DTypeName(t.fixed));
    if (t.optional) s += "?";
    if (t.variadic) s += "*";
  }
  return s;
}

}  // namespace

std::string KernelName(const KernelSignature& sig) {
  std::string s = sig.op + ":";
  for (size_t i = 0; i < sig.inputs.size(); ++i) s += (i ? "," : "") + DTypeText(sig.inputs[i]);
  s += "->";
  for (size_t i = 0; i < sig.outputs.size(); ++i) {
    s += (i ? "," : "") + std::string(DTypeName(sig.outputs[i]));
  }
  return s;
}

std::string KernelName(const OpNode& node) {
  KernelSignature sig;
  sig.op = node.qualified_op();
  int n = node.num_inputs();
  while (n > 0 && !node.has_input(n - 1)) --n;
  for (int i = 0; i < n; ++i) {
    sig.inputs.push_back(node.has_input(i) ? std::optional<DType>(node.input(i)->dtype())
                                           : std::nullopt);
  }
  for (const OpValue* v : node.outputs()) sig.outputs.push_back(v->dtype());
  return KernelName(sig);
}

StatusOr<KernelSignature> ParseKernelName(std::string_view name) {
  auto bad = [&](std::string_view why) {
    return InvalidInput("kernel name '{}': {}; expected OP:IN,...->OUT,...", name, why);
  };
  size_t colon = name.rfind(':');
  if (colon == std::string_view::npos) return bad("no ':'");
  if (colon == 0) return bad("the op is empty");
  std::string_view types = name.substr(colon + 1);
  size_t arrow = types.find("->");
  if (arrow == std::string_view::npos) return bad("no '->'");
  KernelSignature sig;
  sig.op = std::string(name.substr(0, colon));
  auto split = [&](std::string_view list, bool inputs) -> Status {
    if (list.empty()) return Status::Ok();
    size_t start = 0;
    while (true) {
      size_t comma = list.find(',', start);
      std::string_view item = list.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (inputs && item == "_") {
        sig.inputs.push_back(std::nullopt);
      } else {
        auto d = ParseDTypeName(item);
        if (!d.ok()) return bad(fmt::format("'{}' is not a dtype", item));
        if (inputs) {
          sig.inputs.push_back(*d);
        } else {
          sig.outputs.push_back(*d);
        }
      }
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return Status::Ok();
  };
  A8_RETURN_IF_ERROR(split(types.substr(0, arrow), true));
  A8_RETURN_IF_ERROR(split(types.substr(arrow + 2), false));
  return sig;
}

Status CheckKernel(std::string_view op, const std::vector<std::optional<DType>>& inputs,
                   const std::vector<DType>& outputs) {
  KernelSignature sig{std::string(op), inputs, outputs};
  const std::string name = KernelName(sig);
  auto it = Catalog().find(op);
  if (it == Catalog().end()) {
    return InvalidInput("kernel '{}': unknown kernel op '{}' (not in the kernel catalog)", name,
                        op);
  }
  const CompiledRow& row = it->second;
  if (!inputs.empty() && !inputs.back()) {
    return InvalidInput("kernel '{}': a trailing absent input must be left out", name);
  }
  std::map<char, DType> bound;
  A8_RETURN_IF_ERROR(MatchSide(name, "inputs", row.ins, inputs, row, &bound));
  std::vector<std::optional<DType>> outs(outputs.begin(), outputs.end());
  return MatchSide(name, "outputs", row.outs, outs, row, &bound);
}

Status CheckKernel(const KernelSignature& sig) {
  return CheckKernel(sig.op, sig.inputs, sig.outputs);
}

Status CheckKernelName(std::string_view name) {
  A8_ASSIGN_OR_RETURN(KernelSignature sig, ParseKernelName(name));
  return CheckKernel(sig);
}

bool IsCatalogOp(std::string_view op) { return Catalog().count(op) > 0; }

std::vector<KernelPattern> AllKernelPatterns() {
  std::vector<KernelPattern> out;
  for (const auto& [op, row] : Catalog()) {
    std::string p = op + ":" + TokensText(row.ins) + "->" + TokensText(row.outs);
    for (const auto& [v, set] : row.spec->vars) p += fmt::format(", {} in {}", v, SetText(set));
    out.push_back({op, std::move(p)});
  }
  return out;
}

std::vector<std::string> KernelNamesForOp(std::string_view op) {
  auto it = Catalog().find(op);
  if (it == Catalog().end()) return {};
  const CompiledRow& row = it->second;
  const auto& vars = row.spec->vars;
  std::vector<std::string> names;
  std::vector<size_t> idx(vars.size(), 0);
  while (true) {
    std::map<char, DType> bound;
    for (size_t v = 0; v < vars.size(); ++v) bound[vars[v].first] = vars[v].second[idx[v]];
    auto dtype = [&](const Token& t) { return t.var ? bound[t.var] : t.fixed; };
    KernelSignature sig{std::string(op), {}, {}};
    for (const Token& t : row.ins) sig.inputs.push_back(dtype(t));
    for (const Token& t : row.outs) sig.outputs.push_back(dtype(t));
    names.push_back(KernelName(sig));
    size_t v = 0;
    while (v < vars.size() && ++idx[v] == vars[v].second.size()) idx[v++] = 0;
    if (v == vars.size()) break;
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace a8

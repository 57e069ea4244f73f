// PrecisionPolicy: the op table's precision classes and the user's overrides (see policy.h).
#include "passes/mixed_precision/policy.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "compiler/ir/op_table.h"

namespace a8 {
namespace {

// Splits "a8.ReluGrad" into ("a8", "ReluGrad"); "MatMul" into ("", "MatMul").
std::pair<std::string, std::string> SplitQualified(const std::string& op) {
  const size_t dot = op.rfind('.');
  if (dot == std::string::npos) return {"", op};
  return {op.substr(0, dot), op.substr(dot + 1)};
}

StatusOr<std::regex> CompileRegex(const std::string& where, const std::string& text) {
  try {
    return std::regex(text, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return InvalidInput("{}: bad regular expression '{}': {}", where, text, e.what());
  }
}

// An op name a user may override: one the op table knows.
Status CheckKnownOp(const std::string& where, const std::string& op) {
  auto [domain, name] = SplitQualified(op);
  if (FindOp(domain, name) == nullptr) {
    return InvalidInput("{}: unknown op '{}' (see a800c --list-ops)", where, op);
  }
  return Status::Ok();
}

struct PolicyFile {
  std::vector<std::string> fp32_ops, fp16_ops;
  std::string fp32_nodes;
};

StatusOr<PolicyFile> ReadPolicyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidInput("--policy: {}: no such file", path);
  std::stringstream text;
  text << in.rdbuf();
  // nlohmann's parser stops at a NUL byte and ignores what follows: refuse it, never half-read.
  if (text.str().find('\0') != std::string::npos) {
    return InvalidInput("--policy: {}: not valid JSON (it holds a NUL byte)", path);
  }
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidInput("--policy: {}: not valid JSON", path);
  if (!j.is_object()) return InvalidInput("--policy: {}: expected a JSON object", path);
  PolicyFile f;
  auto read_ops = [&](const std::string& key, std::vector<std::string>* out) -> Status {
    if (!j[key].is_array()) {
      return InvalidInput("--policy: {}: '{}' must be an array of op names", path, key);
    }
    for (const nlohmann::json& item : j[key]) {
      if (!item.is_string()) {
        return InvalidInput("--policy: {}: '{}' must be an array of op names", path, key);
      }
      out->push_back(item.get<std::string>());
    }
    return Status::Ok();
  };
  for (const auto& [key, value] : j.items()) {
    if (key == "fp32_ops") {
      A8_RETURN_IF_ERROR(read_ops(key, &f.fp32_ops));
    } else if (key == "fp16_ops") {
      A8_RETURN_IF_ERROR(read_ops(key, &f.fp16_ops));
    } else if (key == "fp32_nodes") {
      if (!value.is_string()) {
        return InvalidInput("--policy: {}: 'fp32_nodes' must be a string (a regex)", path);
      }
      f.fp32_nodes = value.get<std::string>();
    } else if (key == "evidence" || key == "debug_precision") {
      // Written by `a800c debug-precision` for the reader: why each node is in fp32_nodes.
      if (!value.is_array() && !value.is_object()) {
        return InvalidInput("--policy: {}: '{}' must be an array or an object", path, key);
      }
    } else {
      return InvalidInput(
          "--policy: {}: unknown key '{}' (expected fp32_ops, fp16_ops, fp32_nodes, evidence, "
          "debug_precision)",
          path, key);
    }
  }
  return f;
}

}  // namespace

std::string_view OpPrecisionClassName(OpPrecisionClass c) {
  // Indexed by the enum, in its order.
  static constexpr std::string_view kNames[] = {"allow", "deny", "follow", "pinned", "none"};
  static_assert(std::size(kNames) == static_cast<size_t>(OpPrecisionClass::kNone) + 1);
  const auto i = static_cast<size_t>(c);
  return i < std::size(kNames) ? kNames[i] : "none";
}

std::optional<OpPrecisionClass> DefaultOpClass(std::string_view qualified_op) {
  const OpDef* def = FindQualifiedOp(qualified_op);
  return def != nullptr ? def->precision : std::nullopt;
}

StatusOr<PrecisionPolicy> PrecisionPolicy::Create(const PrecisionConfig& config) {
  PrecisionPolicy p;
  p.config_ = config;
  auto add_ops = [&](const std::string& where, const std::vector<std::string>& ops, bool fp32,
                     const char* why) -> Status {
    Rule r;
    r.fp32 = fp32;
    r.why = why;
    for (const std::string& op : ops) {
      A8_RETURN_IF_ERROR(CheckKnownOp(where, op));
      r.ops.insert(op);
    }
    p.rules_.push_back(std::move(r));
    return Status::Ok();
  };
  auto add_nodes = [&](const std::string& where, const std::string& regex,
                       const char* why) -> Status {
    Rule r;
    r.fp32 = true;
    r.why = why;
    A8_ASSIGN_OR_RETURN(r.nodes, CompileRegex(where, regex));
    p.rules_.push_back(std::move(r));
    return Status::Ok();
  };
  // Rules in command-line order; Decide reads them from the last.
  for (const PrecisionOverride& o : config.overrides) {
    switch (o.kind) {
      case PrecisionOverride::kFp32Ops:
        A8_RETURN_IF_ERROR(add_ops("--fp32-ops", o.ops, true, "user-op"));
        break;
      case PrecisionOverride::kFp16Ops:
        A8_RETURN_IF_ERROR(add_ops("--fp16-ops", o.ops, false, "user-op"));
        break;
      case PrecisionOverride::kFp32Nodes:
        if (!o.text.empty()) A8_RETURN_IF_ERROR(add_nodes("--fp32-nodes", o.text, "user-node"));
        break;
      case PrecisionOverride::kPolicyFile: {
        // A file's keys count as written in this order: fp16_ops, fp32_ops, fp32_nodes.
        A8_ASSIGN_OR_RETURN(PolicyFile f, ReadPolicyFile(o.text));
        const std::string where = "--policy: " + o.text;
        A8_RETURN_IF_ERROR(add_ops(where, f.fp16_ops, false, "policy-file"));
        A8_RETURN_IF_ERROR(add_ops(where, f.fp32_ops, true, "policy-file"));
        if (!f.fp32_nodes.empty()) {
          A8_RETURN_IF_ERROR(add_nodes(where + ": fp32_nodes", f.fp32_nodes, "policy-file"));
        }
        break;
      }
    }
  }
  return p;
}

DType PrecisionPolicy::low_type() const {
  return config_.mode == PrecisionMode::kBf16 ? DType::kBF16 : DType::kF16;
}

StatusOr<PrecisionDecision> PrecisionPolicy::Decide(const Node& node) const {
  const std::string op = node.qualified_op();
  std::optional<OpPrecisionClass> cls = DefaultOpClass(op);
  if (!cls) {
    return Unsupported(
        "{}: op '{}' has no precision class (allow, deny or follow), so a800c "
        "cannot put it in a mixed-precision plan",
        node.Where(), op);
  }
  using K = PrecisionDecision::Kind;
  if (*cls == OpPrecisionClass::kNone) return PrecisionDecision{K::kNone, "", false};
  if (*cls == OpPrecisionClass::kPinned) return PrecisionDecision{K::kF32, "pinned", false};
  for (auto r = rules_.rbegin(); r != rules_.rend(); ++r) {
    const bool match = r->nodes ? std::regex_search(node.name(), *r->nodes) : r->ops.count(op) > 0;
    if (match) return PrecisionDecision{r->fp32 ? K::kF32 : K::kLow, r->why, false};
  }
  const bool pure_low = config_.mode == PrecisionMode::kFp16;
  switch (*cls) {
    case OpPrecisionClass::kAllow:
      return PrecisionDecision{K::kLow, pure_low ? "mode" : "allow", true};
    case OpPrecisionClass::kDeny:
      // In fp16 mode everything is low but for these: they are pinned by the mode's exception.
      return PrecisionDecision{K::kF32, pure_low ? "pinned" : "deny", true};
    case OpPrecisionClass::kFollow:
      if (pure_low) return PrecisionDecision{K::kLow, "mode", true};
      return PrecisionDecision{K::kFollow, "follow", true};
    default:
      break;
  }
  return PrecisionDecision{K::kNone, "", false};
}

std::string GradientForwardName(const std::string& name) {
  const size_t at = name.rfind(".grad");
  return at == std::string::npos ? "" : name.substr(0, at);
}

namespace {

// Whether `operand` is in `list` of the op table's entry for `node` (OpDef's operand traits).
bool Listed(const Node& node, std::vector<int> OpDef::*list, int operand) {
  const OpDef* def = FindOp(node.domain(), node.op());
  if (def == nullptr) return false;
  const std::vector<int>& v = def->*list;
  return std::find(v.begin(), v.end(), operand) != v.end();
}

}  // namespace

bool PrecisionPolicy::HasLowEdges(const Node& node) {
  const OpDef* def = FindOp(node.domain(), node.op());
  return def != nullptr && !def->low_edge_inputs.empty();
}

bool PrecisionPolicy::IsEdgeOperand(const Node& node, int operand) {
  return Listed(node, &OpDef::low_edge_inputs, operand);
}

bool PrecisionPolicy::KeepsF32Operand(const Node& node, int operand) {
  return Listed(node, &OpDef::f32_inputs, operand);
}

bool PrecisionPolicy::KeepsF32Result(const Node& node, int result) {
  return Listed(node, &OpDef::f32_outputs, result);
}

bool PrecisionPolicy::ReadsAnyFloat(const Node& node, int operand) {
  return Listed(node, &OpDef::any_float_inputs, operand);
}

}  // namespace a8

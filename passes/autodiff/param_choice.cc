// Parameter choice (see param_choice.h).
#include "passes/autodiff/param_choice.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include "passes/autodiff/grad_rule.h"

namespace a8 {
namespace {

// Inputs that carry no gradient in the model's meaning, by op: what the input is.
const char* NonDifferentiableInput(const Node& n, int i) {
  struct Entry {
    const char* op;
    int first, last;  // input range [first, last]
    const char* what;
  };
  static const Entry kTable[] = {
      {"Pow", 1, 1, "exponent"},
      {"Reshape", 1, 1, "shape"},
      {"Expand", 1, 1, "shape"},
      {"Tile", 1, 1, "repeats"},
      {"ConstantOfShape", 0, 0, "shape"},
      {"Slice", 1, 4, "starts/ends/axes/steps"},
      {"Squeeze", 1, 1, "axes"},
      {"Unsqueeze", 1, 1, "axes"},
      {"Split", 1, 1, "split sizes"},
      {"Pad", 1, 3, "pads"},
      {"Resize", 1, 3, "roi/scales/sizes"},
      {"Range", 0, 2, "range bounds"},
      {"TopK", 1, 1, "k"},
      {"OneHot", 0, 2, "indices/depth/values"},
      {"Gather", 1, 1, "indices"},
      {"GatherElements", 1, 1, "indices"},
      {"GatherND", 1, 1, "indices"},
      {"ScatterND", 1, 1, "indices"},
      {"ScatterElements", 1, 1, "indices"},
      {"Clip", 1, 2, "bounds"},
      {"Dropout", 1, 2, "ratio"},
      {"Where", 0, 0, "condition"},
      {"CastLike", 1, 1, "type template"},
      {"BatchNormalization", 3, 4, "running statistics"},
      {"ReduceSum", 1, 1, "axes"},
      {"ReduceMean", 1, 1, "axes"},
      {"ReduceMax", 1, 1, "axes"},
      {"ReduceMin", 1, 1, "axes"},
      {"ReduceProd", 1, 1, "axes"},
      {"ReduceL2", 1, 1, "axes"},
      {"CumSum", 1, 1, "axis"},
      {"Trilu", 1, 1, "k"},
      {"SoftmaxCrossEntropyLoss", 1, 1, "labels"},
      {"NegativeLogLikelihoodLoss", 1, 1, "labels"},
  };
  if (!n.domain().empty()) return nullptr;
  for (const Entry& e : kTable) {
    if (n.op() == e.op && i >= e.first && i <= e.last) return e.what;
  }
  return nullptr;
}

bool IsExporterConstantName(const std::string& name) {
  static const std::regex kVal("^val_[0-9]+$");
  return std::regex_match(name, kVal);
}

// Whether `d` holds an Inf/NaN or a value below -1e30 (finfo.min stands for -inf in masks).
bool LooksLikeMask(const TensorData& d) {
  const int64_t n = d.num_elements();
  if (d.type.dtype == DType::kF32) {  // the common case, read as it lies, four lanes at a time
    // Masked: !(x > -1e30f && x <= max), i.e. NaN, +-Inf, and -1e30f (the float nearest -1e30,
    // just below it) or less: the test below in float. GetDouble's switch per element cost
    // ~0.2 s on BERT-base's weights.
    using Floats = float __attribute__((vector_size(16)));
    using Ints = int32_t __attribute__((vector_size(16)));
    constexpr float kLow = -1e30f, kHigh = std::numeric_limits<float>::max();
    const float* x = d.data<float>();
    const Floats low = {kLow, kLow, kLow, kLow}, high = {kHigh, kHigh, kHigh, kHigh};
    Ints bad = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      Floats v;
      std::memcpy(&v, x + i, sizeof(v));
      bad |= ~((v > low) & (v <= high));
    }
    bool mask = (bad[0] | bad[1] | bad[2] | bad[3]) != 0;
    for (; i < n; ++i) mask |= !((x[i] > kLow) & (x[i] <= kHigh));
    return mask;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double x = d.GetDouble(i);
    if (!std::isfinite(x) || x < -1e30) return true;
  }
  return false;
}

StatusOr<std::regex> CompileRegex(const char* flag, const std::string& text) {
  try {
    return std::regex(text, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return InvalidInput("{}: '{}' is not a valid regular expression: {}", flag, text, e.what());
  }
}

std::string Thousands(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(i, ",");
  return s;
}

std::string Bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB"};
  int u = 0;
  while (b >= 1000.0 && u < 3) b /= 1000.0, ++u;
  return u == 0 ? fmt::format("{} B", static_cast<int64_t>(b))
                : fmt::format("{:.1f} {}", b, units[u]);
}

}  // namespace

StatusOr<std::vector<ParamDecision>> ChooseParameters(const Graph& g,
                                                      const std::vector<const Value*>& roots,
                                                      const std::string& freeze,
                                                      const std::string& trainable) {
  std::regex freeze_re, trainable_re;
  if (!freeze.empty()) {
    A8_ASSIGN_OR_RETURN(freeze_re, CompileRegex("--freeze", freeze));
  }
  if (!trainable.empty()) {
    A8_ASSIGN_OR_RETURN(trainable_re, CompileRegex("--trainable", trainable));
  }

  // `reaches`: values the roots depend on at all; `diff`: through differentiable inputs only.
  // `non_diff_use`: for a value the roots depend on only through a non-differentiable input,
  // the first such use (in reverse program order, deterministic).
  std::set<const Value*> reaches(roots.begin(), roots.end());
  std::set<const Value*> diff(roots.begin(), roots.end());
  std::map<const Value*, std::string> non_diff_use;
  const std::vector<Node*> nodes = g.NodeList();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node& n = **it;
    bool r = false, d = false;
    for (const Value* v : n.outputs()) {
      r |= reaches.count(v) > 0;
      d |= diff.count(v) > 0 && IsFloat(v->dtype());
    }
    if (!r) continue;
    const GradRule rule = FindGradRule(n.qualified_op());
    for (int i = 0; i < n.num_inputs(); ++i) {
      const Value* v = n.input(i);
      if (v == nullptr) continue;
      reaches.insert(v);
      if (!d || !IsFloat(v->dtype())) continue;
      const char* what = NonDifferentiableInput(n, i);
      if (what == nullptr && rule == kNoGradient) what = "input (the op has no gradient)";
      if (what != nullptr) {
        non_diff_use.emplace(v, fmt::format("{}'s {}", n.Where(), what));
        continue;
      }
      diff.insert(v);
    }
  }

  std::vector<ParamDecision> out;
  for (Value* p : g.parameters()) {
    if (!IsFloat(p->dtype())) continue;
    ParamDecision dec;
    dec.value = p;
    auto keep = [&](const char* kind, std::string reason) {
      dec.kind = kind;
      dec.reason = std::move(reason);
    };
    if (!freeze.empty() && std::regex_search(p->name(), freeze_re)) {
      keep("freeze", fmt::format("matches --freeze='{}'", freeze));
    } else if (!trainable.empty()) {
      if (!std::regex_search(p->name(), trainable_re)) {
        keep("trainable", fmt::format("does not match --trainable='{}'", trainable));
      } else if (reaches.count(p) == 0) {
        keep("unused", "the loss does not depend on it");
      } else {
        dec.trained = true;
        keep("trained", fmt::format("matches --trainable='{}'", trainable));
      }
    } else if (reaches.count(p) == 0) {
      keep("unused", "the loss does not depend on it");
    } else if (diff.count(p) == 0) {
      auto use = non_diff_use.find(p);
      keep("non-diff", use != non_diff_use.end()
                           ? "the loss depends on it only as " + use->second
                           : std::string("the loss depends on it only through non-float values"));
    } else if (IsExporterConstantName(p->name()) && p->type().NumElements().ok() &&
               *p->type().NumElements() <= 1) {
      keep("exporter",
           "a scalar the exporter lifted to an initializer (val_N); module parameters keep their "
           "state_dict names");
    } else if (p->data() != nullptr && LooksLikeMask(*p->data())) {
      keep("mask", "holds -inf/NaN or values below -1e30 (a mask)");
    } else {
      dec.trained = true;
      keep("trained", "a float initializer the loss depends on");
    }
    out.push_back(std::move(dec));
  }
  return out;
}

std::string ParameterSummary(const std::vector<ParamDecision>& decisions) {
  int64_t trained = 0, elements = 0;
  double bytes = 0;
  std::map<std::string, int> kept;
  for (const ParamDecision& d : decisions) {
    if (!d.trained) {
      ++kept[d.kind];
      continue;
    }
    ++trained;
    auto num = d.value->type().NumElements();
    const int64_t n = num.ok() ? *num : 0;
    elements += n;
    bytes += static_cast<double>(n) * static_cast<double>(DTypeSize(d.value->dtype()));
  }
  static const std::map<std::string, std::string> kWhy = {
      {"freeze", "matched --freeze"},     {"trainable", "outside --trainable"},
      {"unused", "not used by the loss"}, {"non-diff", "non-differentiable uses"},
      {"exporter", "exporter constants"}, {"mask", "masks"}};
  int64_t constant = 0;
  std::string why;
  for (const auto& [kind, count] : kept) {
    constant += count;
    auto w = kWhy.find(kind);
    why +=
        fmt::format("{}{} {}", why.empty() ? "" : ", ", count, w == kWhy.end() ? kind : w->second);
  }
  std::string s = fmt::format("parameters: {} trained ({} elements, {})", trained,
                              Thousands(elements), Bytes(bytes));
  if (constant > 0) {
    s += fmt::format("; {} initializer{} kept constant ({})", constant, constant == 1 ? "" : "s",
                     why);
  }
  return s;
}

std::string ParameterTable(const std::vector<ParamDecision>& decisions) {
  size_t name_w = 4, type_w = 4;
  for (const ParamDecision& d : decisions) {
    name_w = std::max(name_w, d.value->name().size());
    type_w = std::max(type_w, d.value->type().ToString().size());
  }
  std::string s = fmt::format("{:<{}}  {:<{}}  {:<8}  {}\n", "name", name_w, "type", type_w,
                              "decision", "reason");
  for (const ParamDecision& d : decisions) {
    s += fmt::format("{:<{}}  {:<{}}  {:<8}  {}\n", d.value->name(), name_w,
                     d.value->type().ToString(), type_w, d.trained ? "trained" : "constant",
                     d.reason);
  }
  return s;
}

}  // namespace a8

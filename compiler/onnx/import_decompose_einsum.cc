// Einsum-12 (inputs; equation) imported as nodes a800c has, the equation parsed at import:
//
//   1. each operand's repeated label (a diagonal, "ii") -> Where(Equal(iota_p, iota_q), x, 0)
//      summed over the second of the two dims (exact: the other terms are zeros);
//   2. each operand -> Transpose to the global label order (the output's labels, then the summed
//      ones in order of appearance) and Unsqueeze of the labels it lacks (size 1, broadcast);
//      a summed label only it has is summed there (ReduceSum, keepdims) to keep step 3 small;
//   3. Mul of all operands (numpy broadcasting, so "..." broadcasts as numpy's einsum does), then
//      ReduceSum over the summed labels (the trailing dims): the output in its label order.
//
// The output without "->" is numpy's: the "..." dims, then the labels seen once, sorted.
// This is the definition, not a contraction planner: step 3 holds the product over all labels
// (b * i * j * k elements for "bij,bjk->bik"), where a MatMul would not. "..." needs the
// operands' ranks at import.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/onnx/import_decompose_internal.h"

namespace a8::decompose_internal {
namespace {

constexpr int kEllipsisBase = 1000;  // label of the k-th "..." dim (right-aligned)

struct Term {
  std::vector<int> before;  // letters before "..." (or all, without one)
  bool ellipsis = false;
  std::vector<int> after;  // letters after "..."
};

int LetterLabel(char c) { return static_cast<unsigned char>(c); }

StatusOr<Term> ParseTerm(const DecomposeRequest& req, std::string_view t) {
  Term term;
  for (size_t i = 0; i < t.size();) {
    if (t.substr(i, 3) == "...") {
      if (term.ellipsis) {
        return InvalidInput("{}: equation term '{}' has more than one '...'", req.where, t);
      }
      term.ellipsis = true;
      i += 3;
    } else if (std::isalpha(static_cast<unsigned char>(t[i]))) {
      (term.ellipsis ? term.after : term.before).push_back(LetterLabel(t[i]));
      ++i;
    } else {
      return InvalidInput("{}: equation term '{}' has '{}' (labels are letters, and '...')",
                          req.where, t, t[i]);
    }
  }
  return term;
}

// The term's labels for `dims` "..." dims out of `total` (the last `dims` of them).
std::vector<int> Labels(const Term& t, int64_t dims, int64_t total) {
  std::vector<int> out = t.before;
  for (int64_t k = total - dims; k < total; ++k) out.push_back(kEllipsisBase + static_cast<int>(k));
  out.insert(out.end(), t.after.begin(), t.after.end());
  return out;
}

Value* Axes(Emitter& e, const std::string& suffix, const std::vector<int64_t>& axes) {
  return e.Int64s(suffix, axes, {static_cast<int64_t>(axes.size())});
}

// x's labels with the first repeated pair reduced to its diagonal, until none repeats.
Value* TakeDiagonals(Emitter& e, Value* x, std::vector<int>& labels, const std::string& name) {
  for (bool again = true; again;) {
    again = false;
    for (size_t p = 0; p < labels.size() && !again; ++p) {
      for (size_t q = p + 1; q < labels.size() && !again; ++q) {
        if (labels[p] != labels[q]) continue;
        const int64_t rank = static_cast<int64_t>(labels.size());
        auto along = [&](size_t axis, const std::string& s) {
          std::vector<int64_t> shape(labels.size(), 1);
          shape[axis] = -1;
          Value* iota = Iota(e, x, static_cast<int64_t>(axis), s);
          return e.Emit("Reshape", 14, {iota, e.Int64s(s + "_shape", shape, {rank})}, {},
                        s + "_along", false);
        };
        const std::string s = fmt::format("{}_diag{}_{}", name, p, q);
        Value* mask =
            e.Emit("Equal", 13, {along(p, s + "_p"), along(q, s + "_q")}, {}, s + "_mask", false);
        Value* zero =
            e.Emit("CastLike", 15, {e.Constant(s + "_zero", TensorData::FromFloats({0.0f}, {})), x},
                   {}, s + "_zero_x", false);
        Value* kept = e.Emit("Where", 16, {mask, x, zero}, {}, s + "_kept", false);
        x = e.Emit("ReduceSum", 13, {kept, Axes(e, s + "_axes", {static_cast<int64_t>(q)})},
                   {{"keepdims", 0}}, s, false);
        labels.erase(labels.begin() + static_cast<std::ptrdiff_t>(q));
        again = true;
      }
    }
  }
  return x;
}

}  // namespace

StatusOr<std::vector<DecomposedNode>> DecomposeEinsum(Graph& g, const DecomposeRequest& req) {
  if (req.outputs.size() != 1 || req.inputs.empty()) {
    return InvalidInput("{}: Einsum takes one or more inputs and 1 output", req.where);
  }
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    if (req.inputs[i] == nullptr) return InvalidInput("{}: input {} is missing", req.where, i);
  }
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"equation"}));
  A8_ASSIGN_OR_RETURN(std::string equation, StringAttr(req, "equation", ""));
  std::string eq;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  }
  if (eq.empty()) return InvalidInput("{}: attribute 'equation' is required", req.where);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    A8_ASSIGN_OR_RETURN(
        Term t,
        ParseTerm(req, std::string_view(lhs).substr(
                           start, comma == std::string::npos ? std::string::npos : comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != req.inputs.size()) {
    return InvalidInput("{}: equation '{}' has {} operands, the node {} inputs", req.where,
                        equation, terms.size(), req.inputs.size());
  }
  // The number of "..." dims of each operand, from its rank.
  std::vector<int64_t> ellipsis_dims(terms.size(), 0);
  int64_t total = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t letters = static_cast<int64_t>(terms[i].before.size() + terms[i].after.size());
    std::optional<int64_t> rank = req.known_rank ? req.known_rank(req.inputs[i]) : std::nullopt;
    if (!rank && terms[i].ellipsis) {
      return Unsupported(
          "{}: Einsum with '...' needs the rank of input '{}', which the model does "
          "not declare",
          req.where, req.inputs[i]->name());
    }
    if (rank && (terms[i].ellipsis ? *rank < letters : *rank != letters)) {
      return InvalidInput("{}: equation '{}' gives operand {} {} labels, input '{}' has rank {}",
                          req.where, equation, i, letters, req.inputs[i]->name(), *rank);
    }
    if (terms[i].ellipsis) ellipsis_dims[i] = *rank - letters;
    total = std::max(total, ellipsis_dims[i]);
  }
  std::vector<std::vector<int>> labels;
  std::map<int, int> count;
  std::vector<int> seen;  // labels in order of first appearance
  for (size_t i = 0; i < terms.size(); ++i) {
    labels.push_back(Labels(terms[i], ellipsis_dims[i], total));
    for (int l : labels.back()) {
      if (count[l]++ == 0) seen.push_back(l);
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    A8_ASSIGN_OR_RETURN(Term out, ParseTerm(req, std::string_view(eq).substr(arrow + 2)));
    out_labels = Labels(out, out.ellipsis ? total : 0, total);
    for (size_t i = 0; i < out_labels.size(); ++i) {
      if (count.count(out_labels[i]) == 0 && out_labels[i] < kEllipsisBase) {
        return InvalidInput("{}: equation '{}': output label '{}' is in no input", req.where,
                            equation, static_cast<char>(out_labels[i]));
      }
      for (size_t j = 0; j < i; ++j) {
        if (out_labels[i] == out_labels[j]) {
          return InvalidInput("{}: equation '{}': output label '{}' repeats", req.where, equation,
                              static_cast<char>(out_labels[i]));
        }
      }
    }
  } else {
    for (int64_t k = 0; k < total; ++k) out_labels.push_back(kEllipsisBase + static_cast<int>(k));
    std::vector<int> once;
    for (const auto& [l, n] : count) {
      if (n == 1 && l < kEllipsisBase) once.push_back(l);
    }
    std::sort(once.begin(), once.end());
    out_labels.insert(out_labels.end(), once.begin(), once.end());
  }
  // The global order: the output's labels, then the summed ones.
  std::vector<int> order = out_labels;
  for (int l : seen) {
    if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
  }
  auto position = [&](int l) {
    return static_cast<int64_t>(std::find(order.begin(), order.end(), l) - order.begin());
  };
  const int64_t out_rank = static_cast<int64_t>(out_labels.size());
  const int64_t all_rank = static_cast<int64_t>(order.size());
  // How many operands have each label (after their diagonals).
  Emitter e(g, req);
  std::vector<Value*> operands;
  std::vector<std::vector<int>> kept_labels;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int> l = labels[i];
    operands.push_back(TakeDiagonals(e, req.inputs[i], l, fmt::format("in{}", i)));
    kept_labels.push_back(l);
  }
  std::map<int, int> operands_with;
  for (const auto& l : kept_labels) {
    for (int x : l) ++operands_with[x];
  }
  Value* product = nullptr;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::vector<int>& l = kept_labels[i];
    Value* x = operands[i];
    std::vector<int64_t> perm(l.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(k);
    std::sort(perm.begin(), perm.end(),
              [&](int64_t a, int64_t b) { return position(l[a]) < position(l[b]); });
    bool identity = true;
    for (size_t k = 0; k < perm.size(); ++k) identity = identity && perm[k] == (int64_t)k;
    if (!identity) {
      x = e.Emit("Transpose", 13, {x}, {{"perm", Attribute(perm)}}, fmt::format("in{}_t", i),
                 false);
    }
    std::vector<int64_t> missing, own_sums;
    for (int64_t p = 0; p < all_rank; ++p) {
      const int lab = order[static_cast<size_t>(p)];
      if (std::find(l.begin(), l.end(), lab) == l.end()) {
        missing.push_back(p);
      } else if (p >= out_rank && operands_with[lab] == 1) {
        own_sums.push_back(p);
      }
    }
    if (!missing.empty()) {
      x = e.Emit("Unsqueeze", 13, {x, Axes(e, fmt::format("in{}_missing", i), missing)}, {},
                 fmt::format("in{}_u", i), false);
    }
    if (!own_sums.empty() && operands.size() > 1) {
      x = e.Emit("ReduceSum", 13, {x, Axes(e, fmt::format("in{}_own_axes", i), own_sums)},
                 {{"keepdims", 1}}, fmt::format("in{}_own_sum", i), false);
    }
    product = product == nullptr
                  ? x
                  : e.Emit("Mul", 14, {product, x}, {}, fmt::format("mul{}", i), false);
  }
  if (all_rank > out_rank) {
    std::vector<int64_t> summed;
    for (int64_t p = out_rank; p < all_rank; ++p) summed.push_back(p);
    e.Emit("ReduceSum", 13, {product, Axes(e, "summed_axes", summed)}, {{"keepdims", 0}}, "", true);
  } else {
    // Every label is in the output: the product (or the lone operand) is the result.
    e.Emit("Identity", 13, {product}, {}, "", true);
  }
  return e.nodes();
}

}  // namespace a8::decompose_internal

// Einsum-12/28 (inputs; equation) imported as nodes a800c has, the equation parsed at import.
// Each operand's repeated label (a diagonal, "ii") first -> Where(Equal(iota_p, iota_q), x, 0)
// summed over the second of the two dims (exact: the other terms are zeros). Then:
//
//   two operands (the common case: "bij,bjk->bik", "bhqd,bkhd->bhqk", "i,i") -> one batched
//       MatMul: a label only one operand has and the output lacks is summed there (ReduceSum);
//       a Transpose to [batch, M, K] and [batch, K, N] (batch: in both and the output; M, N: in
//       the output and one operand; K: summed, in both), a Reshape of each group to one dim
//       (its size a ReduceProd of Shape: folded), MatMul, a Reshape to [batch, M.., N..] and a
//       Transpose to the output's order;
//   other counts, or a summed "..." dim (which may broadcast, 1 against n, where a MatMul dim
//       cannot) -> the definition: each operand transposed to the global label order (the
//       output's labels, then the summed ones) with Unsqueeze of the labels it lacks, a label
//       only it has summed there; Mul of all of them (numpy broadcasting), ReduceSum over the
//       summed labels. This holds the product over all labels, so it is for small operands.
//
// The output without "->" is numpy's: the "..." dims, then the labels seen once, sorted.
// "..." needs the operands' ranks at import.
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

bool Has(const std::vector<int>& labels, int l) {
  return std::find(labels.begin(), labels.end(), l) != labels.end();
}

// Transpose of x (labels `from`) to the labels `to` (the same set), if they differ.
Value* Permute(Emitter& e, Value* x, const std::vector<int>& from, const std::vector<int>& to,
               const std::string& suffix, bool last) {
  std::vector<int64_t> perm;
  bool identity = true;
  for (int l : to) {
    perm.push_back(std::find(from.begin(), from.end(), l) - from.begin());
    identity = identity && perm.back() == static_cast<int64_t>(perm.size() - 1);
  }
  if (identity && !last) return x;
  if (identity) return e.Emit("Identity", 13, {x}, {}, "", true);
  return e.Emit("Transpose", 13, {x}, {{"perm", Attribute(perm)}}, suffix, last);
}

// Two operands a (labels la) and b (lb) contracted by one batched MatMul: a as [batch, M, K],
// b as [batch, K, N] (M, N: the output labels only one has; K: the summed labels both have;
// those only one has summed first), each group flattened to one dim, then the product reshaped
// to [batch, M, N] and transposed to the output's order. The output.
void ContractByMatMul(Emitter& e, Value* a, std::vector<int> la, Value* b, std::vector<int> lb,
                      const std::vector<int>& out) {
  auto sum_own = [&](Value* x, std::vector<int>& l, const std::vector<int>& other,
                     const std::string& s) {
    std::vector<int64_t> axes;
    std::vector<int> kept;
    for (size_t i = 0; i < l.size(); ++i) {
      if (!Has(other, l[i]) && !Has(out, l[i])) {
        axes.push_back(static_cast<int64_t>(i));
      } else {
        kept.push_back(l[i]);
      }
    }
    if (axes.empty()) return x;
    l = kept;
    return e.Emit("ReduceSum", 13, {x, Axes(e, s + "_own_axes", axes)}, {{"keepdims", 0}},
                  s + "_own_sum", false);
  };
  a = sum_own(a, la, lb, "in0");
  b = sum_own(b, lb, la, "in1");
  std::vector<int> batch, m, n, k;
  for (int l : out) {
    if (Has(la, l) && Has(lb, l)) batch.push_back(l);
  }
  for (int l : la) {
    if (!Has(lb, l)) m.push_back(l);
    if (Has(lb, l) && !Has(out, l)) k.push_back(l);
  }
  for (int l : lb) {
    if (!Has(la, l)) n.push_back(l);
  }
  auto concat = [](std::vector<int> x, const std::vector<int>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  const int64_t nb = static_cast<int64_t>(batch.size());
  const int64_t nm = static_cast<int64_t>(m.size()), nk = static_cast<int64_t>(k.size());
  Value* at = Permute(e, a, la, concat(concat(batch, m), k), "in0_t", false);
  Value* bt = Permute(e, b, lb, concat(concat(batch, k), n), "in1_t", false);
  auto shape = [&](Value* x, int64_t start, std::optional<int64_t> end, const std::string& s) {
    std::map<std::string, Attribute> attrs = {{"start", Attribute(start)}};
    if (end) attrs.emplace("end", Attribute(*end));
    return e.Emit("Shape", 15, {x}, attrs, s, false);
  };
  Value* kprod = nk == 0 ? e.Int64s("k_size", {1}, {1})
                         : e.Emit("ReduceProd", 13, {shape(at, nb + nm, std::nullopt, "k_dims")},
                                  {{"keepdims", 1}}, "k_size", false);
  std::vector<int64_t> copy(static_cast<size_t>(nb), 0);
  Value* copy_batch = e.Int64s("copy_batch", copy, {nb});
  Value* minus1 = e.Int64s("minus1", {-1}, {1});
  Value* a_shape =
      e.Emit("Concat", 13, {copy_batch, minus1, kprod}, {{"axis", 0}}, "in0_3d_shape", false);
  Value* b_shape =
      e.Emit("Concat", 13, {copy_batch, kprod, minus1}, {{"axis", 0}}, "in1_3d_shape", false);
  Value* a3 = e.Emit("Reshape", 14, {at, a_shape}, {}, "in0_3d", false);
  Value* b3 = e.Emit("Reshape", 14, {bt, b_shape}, {}, "in1_3d", false);
  Value* c = e.Emit("MatMul", 13, {a3, b3}, {}, "matmul", false);
  std::vector<Value*> dims;
  if (nb > 0) dims.push_back(shape(c, 0, nb, "batch_dims"));
  if (nm > 0) dims.push_back(shape(at, nb, nb + nm, "m_dims"));
  if (!n.empty()) dims.push_back(shape(bt, nb + nk, std::nullopt, "n_dims"));
  Value* out_shape = dims.empty() ? e.Int64s("scalar_shape", {}, {0})
                                  : e.Emit("Concat", 13, dims, {{"axis", 0}}, "out_shape", false);
  const std::vector<int> bmn = concat(concat(batch, m), n);
  const bool transpose = bmn != out;
  Value* y = e.Emit("Reshape", 14, {c, out_shape}, {}, transpose ? "unflat" : "", !transpose);
  if (transpose) Permute(e, y, bmn, out, "", true);
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
  // Two operands whose summed labels are letters (a "..." dim may broadcast, which a MatMul
  // dim cannot): one MatMul.
  bool matmul = operands.size() == 2;
  for (int l : order) {
    if (l >= kEllipsisBase && !Has(out_labels, l)) matmul = false;
  }
  if (matmul) {
    ContractByMatMul(e, operands[0], kept_labels[0], operands[1], kept_labels[1], out_labels);
    return e.nodes();
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

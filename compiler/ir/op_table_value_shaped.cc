// NonZero, Unique and NonMaxSuppression: ops whose output shapes depend on their input values.
// a800c's shapes are static, so these run at compile time only. The shape rule needs every input
// constant (an initializer, a folded value, or a graph input frozen with --bind; otherwise one
// error naming the input to bind) and computes the outputs with the op's host implementation
// below (FindFoldRule, op_table_value_shaped.h), which constant folding
// (passes/cleanup/constant_folding.cc) then puts in place of the node: they never reach a plan
// and have no kernel. Each follows onnx's reference
// implementation (onnx/reference/ops/op_non_zero.py, op_unique.py, op_non_max_suppression.py).
// None is differentiable (the outputs are indices, or values picked by comparisons).
#include "compiler/ir/op_table_value_shaped.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

using Outputs = std::vector<TensorDataPtr>;

// The constant data of every present input (null for an absent optional one), or the error
// naming the first that is not constant, with the --bind hint when a graph input feeds it.
StatusOr<Outputs> ConstantInputs(const OpNode& node, const std::vector<std::string>& fields) {
  Outputs data(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!node.has_input(static_cast<int>(i))) continue;
    A8_ASSIGN_OR_RETURN(data[i], ConstantData(node, static_cast<int>(i), fields[i]));
  }
  return data;
}

// ---- NonZero: the indices of the non-zero elements, [rank, count], in row-major order.
StatusOr<Outputs> FoldNonZero(const OpNode& node) {
  A8_ASSIGN_OR_RETURN(Outputs in, ConstantInputs(node, {"X"}));
  const TensorData& x = *in[0];
  const std::vector<int64_t>& dims = x.type.dims;
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (x.GetDouble(i) != 0) hits.push_back(i);  // NaN counts as non-zero, as in numpy
  }
  const int64_t count = static_cast<int64_t>(hits.size());
  // A scalar is indexed as a one-element 1-D tensor (onnxruntime's choice; numpy has none).
  const int64_t out_rank = std::max(rank, 1);
  std::vector<int64_t> out(out_rank * count, 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = hits[k];
    for (int d = rank - 1; d >= 0; --d) {
      out[d * count + k] = rest % dims[d];
      rest /= dims[d];
    }
  }
  return Outputs{TensorData::FromInt64s(out, {out_rank, count})};
}

// ---- Unique: the distinct elements (or slices along `axis`), with the index of each one's first
// occurrence, each input element's (slice's) index into them, and their counts. sorted=1: in
// ascending (lexicographic for slices) order; sorted=0: in order of first occurrence.
StatusOr<Outputs> FoldUnique(const OpNode& node) {
  A8_ASSIGN_OR_RETURN(Outputs in, ConstantInputs(node, {"X"}));
  const TensorData& x = *in[0];
  const std::vector<int64_t>& dims = x.type.dims;
  const int64_t total = x.num_elements();
  const bool sorted = node.GetInt("sorted", 1) != 0;
  const bool has_axis = node.attr("axis") != nullptr;
  // Slice s is the elements (o, s, i), o < outer, i < inner, of X seen as [outer, n, inner].
  int64_t outer = 1, n = total, inner = 1, axis = 0;
  if (has_axis) {
    A8_ASSIGN_OR_RETURN(axis, NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", 0),
                                            static_cast<int64_t>(dims.size())));
    n = dims[axis];
    outer = std::accumulate(dims.begin(), dims.begin() + axis, int64_t{1}, std::multiplies<>());
    inner = std::accumulate(dims.begin() + axis + 1, dims.end(), int64_t{1}, std::multiplies<>());
  }
  const int64_t slice = outer * inner;
  auto at = [&](int64_t s, int64_t p) { return (p / inner) * n * inner + s * inner + p % inner; };
  // Integers compare as int64 (exact), floats as double (f16/bf16/f32 exactly; -0 == 0).
  const bool integer = IsInteger(x.type.dtype);
  std::vector<int64_t> ints(integer ? total : 0);
  std::vector<double> reals(integer ? 0 : total);
  for (int64_t i = 0; i < total; ++i) {
    if (integer) {
      ints[i] = x.GetInt64(i);
    } else {
      reals[i] = x.GetDouble(i);
    }
  }
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t p = 0; p < slice; ++p) {
      const int64_t ia = at(a, p), ib = at(b, p);
      if (integer ? ints[ia] != ints[ib] : reals[ia] != reals[ib]) {
        return integer ? ints[ia] < ints[ib] : reals[ia] < reals[ib];
      }
    }
    return false;
  };
  // A stable sort keeps equal slices in input order: each group's first is its first occurrence
  // (numpy's unique sorts with mergesort for return_index).
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<int64_t> first, counts, inverse(n);
  for (int64_t k : order) {
    if (first.empty() || less(first.back(), k)) {
      first.push_back(k);
      counts.push_back(0);
    }
    inverse[k] = static_cast<int64_t>(first.size()) - 1;
    ++counts.back();
  }
  const int64_t groups = static_cast<int64_t>(first.size());
  if (!sorted) {  // renumber the groups by first occurrence
    std::vector<int64_t> by_first(groups), rank_of(groups);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    std::vector<int64_t> f(groups), c(groups);
    for (int64_t g = 0; g < groups; ++g) {
      rank_of[by_first[g]] = g;
      f[g] = first[by_first[g]];
      c[g] = counts[by_first[g]];
    }
    for (int64_t& v : inverse) v = rank_of[v];
    first = std::move(f);
    counts = std::move(c);
  }
  std::vector<int64_t> y_dims = {groups};
  if (has_axis) {
    y_dims = dims;
    y_dims[axis] = groups;
  }
  auto y = TensorData::Make(TensorType{x.type.dtype, y_dims});
  const size_t elem = DTypeSize(x.type.dtype);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t p = 0; p < slice; ++p) {
      const int64_t to = (p / inner) * groups * inner + g * inner + p % inner;
      std::memcpy(y->bytes.data() + to * elem, x.bytes.data() + at(first[g], p) * elem, elem);
    }
  }
  return Outputs{y, TensorData::FromInt64s(first, {groups}), TensorData::FromInt64s(inverse, {n}),
                 TensorData::FromInt64s(counts, {groups})};
}

// ---- NonMaxSuppression: per batch and class, the boxes by descending score (ties: lower index
// first) above score_threshold (when given), each kept unless its IoU with a kept box exceeds
// iou_threshold, at most max_output_boxes_per_class (absent: 0); rows [batch, class, box].
struct Box {
  float x_min, x_max, y_min, y_max;
};

Box BoxAt(const TensorData& boxes, int64_t i, bool center_point) {
  const float* b = boxes.data<float>() + 4 * i;
  if (center_point) {  // [x_center, y_center, width, height]
    const float w = b[2] / 2, h = b[3] / 2;
    return Box{b[0] - w, b[0] + w, b[1] - h, b[1] + h};
  }
  // [y1, x1, y2, x2], either corner first
  return Box{std::min(b[1], b[3]), std::max(b[1], b[3]), std::min(b[0], b[2]),
             std::max(b[0], b[2])};
}

// onnx's suppress_by_iou, in float as the reference computes on float32 data.
bool Suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float x_min = std::max(a.x_min, b.x_min), x_max = std::min(a.x_max, b.x_max);
  if (x_max <= x_min) return false;
  const float y_min = std::max(a.y_min, b.y_min), y_max = std::min(a.y_max, b.y_max);
  if (y_max <= y_min) return false;
  const float intersection = (x_max - x_min) * (y_max - y_min);
  if (intersection <= 0) return false;
  const float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const float union_area = area_a + area_b - intersection;
  if (area_a <= 0 || area_b <= 0 || union_area <= 0) return false;
  return intersection / union_area > iou_threshold;
}

Status CheckNmsOperands(const OpNode& node, const Outputs& in) {
  const TensorType& boxes = in[0]->type;
  const TensorType& scores = in[1]->type;
  if (boxes.dtype != DType::kF32 || boxes.rank() != 3 || boxes.dims[2] != 4) {
    return InvalidInput("{}: input 'boxes' must be f32[num_batches, num_boxes, 4], got {}",
                        node.Where(), boxes.ToString());
  }
  if (scores.dtype != DType::kF32 || scores.rank() != 3 || scores.dims[0] != boxes.dims[0] ||
      scores.dims[2] != boxes.dims[1]) {
    return InvalidInput("{}: input 'scores' must be f32[{}, num_classes, {}], got {}", node.Where(),
                        boxes.dims[0], boxes.dims[1], scores.ToString());
  }
  if (in[2] && in[2]->type.dtype != DType::kI64) {
    return InvalidInput("{}: input 'max_output_boxes_per_class' must be i64, got {}", node.Where(),
                        in[2]->type.ToString());
  }
  for (int i : {3, 4}) {
    if (in[i] && in[i]->type.dtype != DType::kF32) {
      return InvalidInput("{}: input '{}' must be f32, got {}", node.Where(),
                          i == 3 ? "iou_threshold" : "score_threshold", in[i]->type.ToString());
    }
  }
  const int64_t center = node.GetInt("center_point_box", 0);
  if (center != 0 && center != 1) {
    return InvalidInput("{}: attribute 'center_point_box' {} must be 0 or 1", node.Where(), center);
  }
  return Status::Ok();
}

StatusOr<Outputs> FoldNonMaxSuppression(const OpNode& node) {
  A8_ASSIGN_OR_RETURN(Outputs in,
                      ConstantInputs(node, {"boxes", "scores", "max_output_boxes_per_class",
                                            "iou_threshold", "score_threshold"}));
  A8_RETURN_IF_ERROR(CheckNmsOperands(node, in));
  auto present = [&](int i) { return in[i] && in[i]->num_elements() > 0; };
  const int64_t max_per_class = present(2) ? std::max<int64_t>(in[2]->GetInt64(0), 0) : 0;
  const float iou_threshold = present(3) ? in[3]->data<float>()[0] : 0.0f;
  const bool filter_scores = present(4);
  const float score_threshold = filter_scores ? in[4]->data<float>()[0] : 0.0f;
  const bool center_point = node.GetInt("center_point_box", 0) == 1;
  const TensorData& boxes = *in[0];
  const TensorData& scores = *in[1];
  const int64_t batches = boxes.type.dims[0], num_boxes = boxes.type.dims[1];
  const int64_t classes = scores.type.dims[1];
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const float* score = scores.data<float>() + (b * classes + c) * num_boxes;
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < num_boxes; ++i) {
        if (!filter_scores || score[i] > score_threshold) candidates.push_back(i);
      }
      std::sort(candidates.begin(), candidates.end(), [&](int64_t l, int64_t r) {
        return score[l] > score[r] || (score[l] == score[r] && l < r);
      });
      std::vector<Box> kept;
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const Box box = BoxAt(boxes, b * num_boxes + i, center_point);
        const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const Box& k) {
          return Suppresses(box, k, iou_threshold);
        });
        if (suppressed) continue;
        kept.push_back(box);
        rows.insert(rows.end(), {b, c, i});
      }
    }
  }
  return Outputs{TensorData::FromInt64s(rows, {static_cast<int64_t>(rows.size()) / 3, 3})};
}

// The shape rule of every value-shaped op: the types of what its fold rule computes.
Status InferFromFold(const OpNode& node, std::vector<TensorType>* out) {
  const FoldRule fold = FindFoldRule(node.domain(), node.op());
  if (fold == nullptr) return Internal("{}: not a value-shaped op", node.Where());
  A8_ASSIGN_OR_RETURN(Outputs data, fold(node));
  std::vector<TensorType> types;
  for (int i = 0; i < node.num_outputs() && i < static_cast<int>(data.size()); ++i) {
    types.push_back(data[i]->type);
  }
  return SetOutputs(node, out, std::move(types));
}

OpDef ValueShaped(OpDef op, OpPrecisionClass precision) {
  op.precision = precision;
  op.gradient = GradDecision::kNone;
  return op;
}

}  // namespace

FoldRule FindFoldRule(std::string_view domain, std::string_view op) {
  if (!domain.empty()) return nullptr;
  if (op == "NonZero") return FoldNonZero;
  if (op == "Unique") return FoldUnique;
  if (op == "NonMaxSuppression") return FoldNonMaxSuppression;
  return nullptr;
}

void AddValueShapedOps(std::vector<OpDef>* ops) {
  ops->push_back(ValueShaped(Op("NonZero", kUnary, {}, {9, 13}, 9, InferFromFold,
                                "indices of the non-zero elements (constant input, folded)"),
                             OpPrecisionClass::kNone));
  ops->push_back(ValueShaped(
      Op("Unique", {1, 1, 1, 4}, {OptNoDefault("axis", AttrKind::kInt), Opt("sorted", 1)}, {11, 28},
         11, InferFromFold,
         "distinct elements or slices, first indices, inverse, counts (constant input, folded)"),
      OpPrecisionClass::kFollow));
  ops->push_back(
      ValueShaped(Op("NonMaxSuppression", {2, 5, 1, 1}, {Opt("center_point_box", 0)}, {10, 11}, 10,
                     InferFromFold,
                     "boxes kept by score and IoU per batch and class (constant inputs, folded)"),
                  OpPrecisionClass::kNone));
}

}  // namespace a8

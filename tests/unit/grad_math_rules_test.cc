// The gradient rules of grad_rules_math.cc / grad_rules_math_shape.cc against central finite
// differences in float64 (grad_check_util.h): every rule, several shapes, broadcasting cases and
// attributes.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/unit/grad_check_util.h"

namespace a8 {
namespace {

using Attrs = std::map<std::string, Attribute>;
using Dims = std::vector<int64_t>;
using testing::GradCheckCase;
using testing::GradCheckInput;

using testing::Absent;
using testing::Fixed;
using testing::Positive;

// A differentiable f64 input, random in [-1, 1].
GradCheckInput X(Dims dims) { return testing::Input(DType::kF64, std::move(dims)); }

// An i64 graph constant (shapes, axes, pads): 1-D, or a scalar with `scalar`.
GradCheckInput IntInput(const std::vector<int64_t>& v, bool scalar = false) {
  return testing::Const(DType::kI64, scalar ? Dims{} : Dims{static_cast<int64_t>(v.size())},
                        std::vector<double>(v.begin(), v.end()));
}

void CheckGradient(const std::string& op, std::vector<GradCheckInput> inputs, Attrs attrs = {},
                   int num_outputs = 1, std::vector<int> loss_outputs = {}) {
  GradCheckCase c;
  c.op = op;
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  c.num_outputs = num_outputs;
  c.loss_outputs = std::move(loss_outputs);
  testing::ExpectGradientsMatch(c);
}

TEST(GradCheckMathTest, BroadcastingArithmetic) {
  const std::pair<Dims, Dims> shapes[] = {
      {{3, 4}, {3, 4}}, {{2, 3, 4}, {4}}, {{3, 1}, {1, 5}}, {{}, {2, 3}}, {{2, 1, 4}, {3, 1}}};
  for (const auto& [a, b] : shapes) {
    for (const char* op : {"Add", "Sub", "Mul"}) {
      SCOPED_TRACE(op);
      CheckGradient(op, {X(a), X(b)});
    }
    CheckGradient("Div", {X(a), Positive(b)});
  }
  CheckGradient("Mul", {X({3}), Fixed(DType::kF64, {3}, {0.5, -2, 3})});  // one side constant
}

TEST(GradCheckMathTest, Pow) {
  CheckGradient("Pow", {Positive({2, 3}), X({2, 3})});
  CheckGradient("Pow", {Positive({2, 3}), X({3})});
  CheckGradient("Pow", {Positive({3}), X({})});
  // An integer exponent: only the base has a gradient (and may be negative).
  CheckGradient("Pow", {X({2, 3}), Fixed(DType::kI64, {3}, {2, 3, 1})});
}

TEST(GradCheckMathTest, UnaryMath) {
  for (const Dims& dims : {Dims{7}, Dims{2, 3, 5}, Dims{}}) {
    for (const char* op : {"Neg", "Abs", "Relu", "Sigmoid", "Tanh", "Exp", "Erf", "Softplus", "Sin",
                           "Cos", "Identity"}) {
      SCOPED_TRACE(op);
      CheckGradient(op, {X(dims)});
    }
    for (const char* op : {"Log", "Sqrt", "Reciprocal"}) {
      SCOPED_TRACE(op);
      CheckGradient(op, {Positive(dims)});
    }
  }
}

TEST(GradCheckMathTest, ActivationsWithAttributes) {
  CheckGradient("LeakyRelu", {X({4, 5})});
  CheckGradient("LeakyRelu", {X({4, 5})}, {{"alpha", Attribute(0.3f)}});
  CheckGradient("Elu", {X({4, 5})});
  CheckGradient("Elu", {X({4, 5})}, {{"alpha", Attribute(0.7f)}});
  CheckGradient("Gelu", {X({4, 5})});
  CheckGradient("Gelu", {X({4, 5})}, {{"approximate", Attribute("tanh")}});
  CheckGradient("HardSigmoid", {X({4, 5})});
  // Both sides of the clamp are hit: alpha x + beta spans [-0.1, 1.1].
  CheckGradient("HardSigmoid", {X({4, 5})},
                {{"alpha", Attribute(0.6f)}, {"beta", Attribute(0.5f)}});
}

TEST(GradCheckMathTest, Cast) {
  CheckGradient("Cast", {X({3, 4})},
                {{"to", Attribute(static_cast<int64_t>(DTypeToOnnx(DType::kF64)))}});
  // Through f32: the loss is only as exact as f32, so a large step (Cast is linear).
  GradCheckCase c;
  c.op = "Cast";
  c.inputs = {X({3, 4})};
  c.attrs = {{"to", Attribute(static_cast<int64_t>(DTypeToOnnx(DType::kF32)))}};
  c.eps = 1e-2;
  c.rtol = 1e-3;
  c.atol = 1e-3;
  testing::ExpectGradientsMatch(c);
  CheckGradient("CastLike", {X({3, 4}), Fixed(DType::kF64, {1}, {0.0})});
}

TEST(GradCheckMathTest, WhereAndClip) {
  CheckGradient("Where", {Fixed(DType::kBool, {3, 4}, {1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0}),
                          X({3, 4}), X({3, 4})});
  CheckGradient("Where", {Fixed(DType::kBool, {3, 1}, {1, 0, 1}), X({1, 4}), X({})});
  const GradCheckInput lo = Fixed(DType::kF64, {}, {-0.5}), hi = Fixed(DType::kF64, {}, {0.4});
  CheckGradient("Clip", {X({4, 5}), lo, hi});
  CheckGradient("Clip", {X({4, 5}), Absent(), hi});
  CheckGradient("Clip", {X({4, 5}), lo});
  CheckGradient("Clip", {X({4, 5})});
}

TEST(GradCheckMathTest, VariadicOps) {
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    SCOPED_TRACE(op);
    CheckGradient(op, {X({3, 4})});
    CheckGradient(op, {X({3, 4}), X({4})});
    CheckGradient(op, {X({2, 3}), X({3}), X({2, 1})});
  }
}

TEST(GradCheckMathTest, MatMulAllNumpyCases) {
  const std::pair<Dims, Dims> shapes[] = {
      {{3, 4}, {4, 5}},       {{4}, {4, 5}},
      {{3, 4}, {4}},          {{4}, {4}},
      {{2, 3, 4}, {4, 5}},    {{2, 3, 4}, {2, 4, 5}},
      {{3, 4}, {2, 4, 5}},    {{2, 1, 3, 4}, {3, 4, 2}},
      {{4}, {2, 4, 5}},       {{2, 3, 4}, {4}},
      {{1, 3, 4}, {2, 4, 5}},
  };
  for (const auto& [a, b] : shapes) CheckGradient("MatMul", {X(a), X(b)});
}

TEST(GradCheckMathTest, GemmTransposesAlphaBetaAndC) {
  for (int64_t ta : {0, 1}) {
    for (int64_t tb : {0, 1}) {
      SCOPED_TRACE("transA=" + std::to_string(ta) + " transB=" + std::to_string(tb));
      const Dims a = ta ? Dims{4, 3} : Dims{3, 4}, b = tb ? Dims{5, 4} : Dims{4, 5};
      Attrs attrs = {{"transA", Attribute(ta)}, {"transB", Attribute(tb)}};
      CheckGradient("Gemm", {X(a), X(b), X({3, 5})}, attrs);
      attrs["alpha"] = Attribute(0.5f);
      attrs["beta"] = Attribute(-1.5f);
      CheckGradient("Gemm", {X(a), X(b), X({5})}, attrs);
      CheckGradient("Gemm", {X(a), X(b), X({3, 1})}, attrs);
      CheckGradient("Gemm", {X(a), X(b), X({})}, attrs);
      CheckGradient("Gemm", {X(a), X(b)}, attrs);
    }
  }
}

TEST(GradCheckMathTest, Reshapes) {
  CheckGradient("Reshape", {X({2, 3, 4}), IntInput({4, 6})});
  CheckGradient("Reshape", {X({2, 3, 4}), IntInput({0, -1})});
  CheckGradient("Flatten", {X({2, 3, 4, 5})}, {{"axis", Attribute(2)}});
  CheckGradient("Flatten", {X({2, 3, 4})});
  CheckGradient("Squeeze", {X({3, 1, 4, 1}), IntInput({1, -1})});
  CheckGradient("Squeeze", {X({3, 1, 4, 1})});
  CheckGradient("Unsqueeze", {X({3, 4}), IntInput({0, 2})});
  CheckGradient("Transpose", {X({2, 3, 4})}, {{"perm", Attribute(Dims{2, 0, 1})}});
  CheckGradient("Transpose", {X({2, 3, 4})});
}

TEST(GradCheckMathTest, ExpandAndTile) {
  CheckGradient("Expand", {X({3, 1}), IntInput({2, 3, 4})});
  CheckGradient("Expand", {X({4}), IntInput({3, 1})});
  CheckGradient("Tile", {X({2, 3}), IntInput({2, 1})});
  CheckGradient("Tile", {X({2, 3, 1}), IntInput({1, 2, 3})});
}

TEST(GradCheckMathTest, ConcatAndSplit) {
  CheckGradient("Concat", {X({2, 3}), X({2, 1}), X({2, 4})}, {{"axis", Attribute(1)}});
  CheckGradient("Concat", {X({2, 3}), X({1, 3})}, {{"axis", Attribute(-2)}});
  CheckGradient("Concat", {X({2, 3})}, {{"axis", Attribute(0)}});
  CheckGradient("Split", {X({6, 4}), IntInput({1, 2, 3})}, {{"axis", Attribute(0)}}, 3);
  // Outputs that the loss does not use get a zero gradient.
  CheckGradient("Split", {X({6, 4}), IntInput({1, 2, 3})}, {{"axis", Attribute(0)}}, 3, {0, 2});
  CheckGradient("Split", {X({2, 7})}, {{"axis", Attribute(-1)}, {"num_outputs", Attribute(3)}}, 3,
                {1});
}

TEST(GradCheckMathTest, SliceWithStepsAndNegativeIndices) {
  CheckGradient("Slice", {X({6, 5}), IntInput({1, -4}), IntInput({5, 100}), IntInput({0, 1}),
                          IntInput({2, 1})});
  CheckGradient("Slice", {X({7}), IntInput({-1}), IntInput({-8}), IntInput({0}), IntInput({-2})});
  CheckGradient("Slice", {X({3, 4, 5}), IntInput({1}), IntInput({3}), IntInput({-1})});
  CheckGradient("Slice", {X({3, 4}), IntInput({0, 3}), IntInput({2, 0}), IntInput({0, 1}),
                          IntInput({1, -1})});
}

TEST(GradCheckMathTest, GatherAnyAxisWithRepeats) {
  CheckGradient("Gather", {X({5, 3}), Fixed(DType::kI64, {4}, {0, 4, -1, 0})});
  CheckGradient("Gather", {X({2, 5, 3}), Fixed(DType::kI64, {2, 2}, {1, -2, 1, 4})},
                {{"axis", Attribute(1)}});
  CheckGradient("Gather", {X({3, 4}), Fixed(DType::kI32, {}, {2})}, {{"axis", Attribute(-1)}});
}

TEST(GradCheckMathTest, PadConstant) {
  CheckGradient("Pad", {X({3, 4}), IntInput({1, 0, 2, -1})});
  CheckGradient("Pad",
                {X({3, 4}), IntInput({0, 2, 1, 1}), X({})});  // the pad value has a gradient too
  CheckGradient("Pad", {X({2, 3, 4}), IntInput({1, 2}), Absent(), IntInput({-1})});
  CheckGradient("Pad", {X({2, 3, 4}), IntInput({-1, 2}), X({}), IntInput({1})});
}

TEST(GradCheckMathTest, Reductions) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2",
                         "ReduceLogSumExp", "ReduceMax", "ReduceMin"}) {
    SCOPED_TRACE(op);
    {
      SCOPED_TRACE("axes [1]");
      CheckGradient(op, {X({3, 4, 5}), IntInput({1})});
    }
    {
      SCOPED_TRACE("axes [0, -1] keepdims 0");
      CheckGradient(op, {X({3, 4, 5}), IntInput({0, -1})}, {{"keepdims", Attribute(0)}});
    }
    {
      SCOPED_TRACE("all axes keepdims 0");
      CheckGradient(op, {X({3, 4, 5})}, {{"keepdims", Attribute(0)}});
    }
    {
      SCOPED_TRACE("all axes");
      CheckGradient(op, {X({3, 4})});
    }
    {
      SCOPED_TRACE("noop_with_empty_axes");
      CheckGradient(op, {X({3, 4})}, {{"noop_with_empty_axes", Attribute(1)}});
    }
  }
}

// Tied extremes: a central difference sees half the slope at a two-way tie, which is what
// splitting dy evenly between the tied positions gives.
TEST(GradCheckMathTest, ReduceMaxMinSplitTies) {
  GradCheckInput x = X({2, 3});
  x.values = {0.5, 0.9, 0.9, -0.3, 0.2, -0.7};
  CheckGradient("ReduceMax", {x, IntInput({1})});
  x.values = {-0.5, 0.9, -0.5, 0.3, 0.3, 0.7};
  CheckGradient("ReduceMin", {x, IntInput({1})}, {{"keepdims", Attribute(0)}});
}

TEST(GradCheckMathTest, CumSumAndTrilu) {
  for (int64_t exclusive : {0, 1}) {
    for (int64_t reverse : {0, 1}) {
      Attrs attrs = {{"exclusive", Attribute(exclusive)}, {"reverse", Attribute(reverse)}};
      CheckGradient("CumSum", {X({3, 4}), IntInput({1}, true)}, attrs);
      CheckGradient("CumSum", {X({3, 4}), IntInput({-2}, true)}, attrs);
    }
  }
  CheckGradient("Trilu", {X({4, 5})});
  CheckGradient("Trilu", {X({4, 5}), IntInput({1}, true)}, {{"upper", Attribute(0)}});
  CheckGradient("Trilu", {X({2, 3, 3}), IntInput({-1}, true)});
}

}  // namespace
}  // namespace a8

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
GradCheckInput Ints(const std::vector<int64_t>& v, bool scalar = false) {
  return testing::Const(DType::kI64, scalar ? Dims{} : Dims{static_cast<int64_t>(v.size())},
                        std::vector<double>(v.begin(), v.end()));
}

void Check(const std::string& op, std::vector<GradCheckInput> inputs, Attrs attrs = {},
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
      Check(op, {X(a), X(b)});
    }
    Check("Div", {X(a), Positive(b)});
  }
  Check("Mul", {X({3}), Fixed(DType::kF64, {3}, {0.5, -2, 3})});  // one side constant
}

TEST(GradCheckMathTest, Pow) {
  Check("Pow", {Positive({2, 3}), X({2, 3})});
  Check("Pow", {Positive({2, 3}), X({3})});
  Check("Pow", {Positive({3}), X({})});
  // An integer exponent: only the base has a gradient (and may be negative).
  Check("Pow", {X({2, 3}), Fixed(DType::kI64, {3}, {2, 3, 1})});
}

TEST(GradCheckMathTest, UnaryMath) {
  for (const Dims& dims : {Dims{7}, Dims{2, 3, 5}, Dims{}}) {
    for (const char* op : {"Neg", "Abs", "Relu", "Sigmoid", "Tanh", "Exp", "Erf", "Softplus", "Sin",
                           "Cos", "Identity"}) {
      SCOPED_TRACE(op);
      Check(op, {X(dims)});
    }
    for (const char* op : {"Log", "Sqrt", "Reciprocal"}) {
      SCOPED_TRACE(op);
      Check(op, {Positive(dims)});
    }
  }
}

TEST(GradCheckMathTest, ActivationsWithAttributes) {
  Check("LeakyRelu", {X({4, 5})});
  Check("LeakyRelu", {X({4, 5})}, {{"alpha", Attribute(0.3f)}});
  Check("Elu", {X({4, 5})});
  Check("Elu", {X({4, 5})}, {{"alpha", Attribute(0.7f)}});
  Check("Gelu", {X({4, 5})});
  Check("Gelu", {X({4, 5})}, {{"approximate", Attribute("tanh")}});
  Check("HardSigmoid", {X({4, 5})});
  // Both sides of the clamp are hit: alpha x + beta spans [-0.1, 1.1].
  Check("HardSigmoid", {X({4, 5})}, {{"alpha", Attribute(0.6f)}, {"beta", Attribute(0.5f)}});
}

TEST(GradCheckMathTest, Cast) {
  Check("Cast", {X({3, 4})}, {{"to", Attribute(static_cast<int64_t>(DTypeToOnnx(DType::kF64)))}});
  // Through f32: the loss is only as exact as f32, so a large step (Cast is linear).
  GradCheckCase c;
  c.op = "Cast";
  c.inputs = {X({3, 4})};
  c.attrs = {{"to", Attribute(static_cast<int64_t>(DTypeToOnnx(DType::kF32)))}};
  c.eps = 1e-2;
  c.rtol = 1e-3;
  c.atol = 1e-3;
  testing::ExpectGradientsMatch(c);
  Check("CastLike", {X({3, 4}), Fixed(DType::kF64, {1}, {0.0})});
}

TEST(GradCheckMathTest, WhereAndClip) {
  Check("Where",
        {Fixed(DType::kBool, {3, 4}, {1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0}), X({3, 4}), X({3, 4})});
  Check("Where", {Fixed(DType::kBool, {3, 1}, {1, 0, 1}), X({1, 4}), X({})});
  const GradCheckInput lo = Fixed(DType::kF64, {}, {-0.5}), hi = Fixed(DType::kF64, {}, {0.4});
  Check("Clip", {X({4, 5}), lo, hi});
  Check("Clip", {X({4, 5}), Absent(), hi});
  Check("Clip", {X({4, 5}), lo});
  Check("Clip", {X({4, 5})});
}

TEST(GradCheckMathTest, VariadicOps) {
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    SCOPED_TRACE(op);
    Check(op, {X({3, 4})});
    Check(op, {X({3, 4}), X({4})});
    Check(op, {X({2, 3}), X({3}), X({2, 1})});
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
  for (const auto& [a, b] : shapes) Check("MatMul", {X(a), X(b)});
}

TEST(GradCheckMathTest, GemmTransposesAlphaBetaAndC) {
  for (int64_t ta : {0, 1}) {
    for (int64_t tb : {0, 1}) {
      SCOPED_TRACE("transA=" + std::to_string(ta) + " transB=" + std::to_string(tb));
      const Dims a = ta ? Dims{4, 3} : Dims{3, 4}, b = tb ? Dims{5, 4} : Dims{4, 5};
      Attrs attrs = {{"transA", Attribute(ta)}, {"transB", Attribute(tb)}};
      Check("Gemm", {X(a), X(b), X({3, 5})}, attrs);
      attrs["alpha"] = Attribute(0.5f);
      attrs["beta"] = Attribute(-1.5f);
      Check("Gemm", {X(a), X(b), X({5})}, attrs);
      Check("Gemm", {X(a), X(b), X({3, 1})}, attrs);
      Check("Gemm", {X(a), X(b), X({})}, attrs);
      Check("Gemm", {X(a), X(b)}, attrs);
    }
  }
}

TEST(GradCheckMathTest, Reshapes) {
  Check("Reshape", {X({2, 3, 4}), Ints({4, 6})});
  Check("Reshape", {X({2, 3, 4}), Ints({0, -1})});
  Check("Flatten", {X({2, 3, 4, 5})}, {{"axis", Attribute(2)}});
  Check("Flatten", {X({2, 3, 4})});
  Check("Squeeze", {X({3, 1, 4, 1}), Ints({1, -1})});
  Check("Squeeze", {X({3, 1, 4, 1})});
  Check("Unsqueeze", {X({3, 4}), Ints({0, 2})});
  Check("Transpose", {X({2, 3, 4})}, {{"perm", Attribute(Dims{2, 0, 1})}});
  Check("Transpose", {X({2, 3, 4})});
}

TEST(GradCheckMathTest, ExpandAndTile) {
  Check("Expand", {X({3, 1}), Ints({2, 3, 4})});
  Check("Expand", {X({4}), Ints({3, 1})});
  Check("Tile", {X({2, 3}), Ints({2, 1})});
  Check("Tile", {X({2, 3, 1}), Ints({1, 2, 3})});
}

TEST(GradCheckMathTest, ConcatAndSplit) {
  Check("Concat", {X({2, 3}), X({2, 1}), X({2, 4})}, {{"axis", Attribute(1)}});
  Check("Concat", {X({2, 3}), X({1, 3})}, {{"axis", Attribute(-2)}});
  Check("Concat", {X({2, 3})}, {{"axis", Attribute(0)}});
  Check("Split", {X({6, 4}), Ints({1, 2, 3})}, {{"axis", Attribute(0)}}, 3);
  // Outputs that the loss does not use get a zero gradient.
  Check("Split", {X({6, 4}), Ints({1, 2, 3})}, {{"axis", Attribute(0)}}, 3, {0, 2});
  Check("Split", {X({2, 7})}, {{"axis", Attribute(-1)}, {"num_outputs", Attribute(3)}}, 3, {1});
}

TEST(GradCheckMathTest, SliceWithStepsAndNegativeIndices) {
  Check("Slice", {X({6, 5}), Ints({1, -4}), Ints({5, 100}), Ints({0, 1}), Ints({2, 1})});
  Check("Slice", {X({7}), Ints({-1}), Ints({-8}), Ints({0}), Ints({-2})});
  Check("Slice", {X({3, 4, 5}), Ints({1}), Ints({3}), Ints({-1})});
  Check("Slice", {X({3, 4}), Ints({0, 3}), Ints({2, 0}), Ints({0, 1}), Ints({1, -1})});
}

TEST(GradCheckMathTest, GatherAnyAxisWithRepeats) {
  Check("Gather", {X({5, 3}), Fixed(DType::kI64, {4}, {0, 4, -1, 0})});
  Check("Gather", {X({2, 5, 3}), Fixed(DType::kI64, {2, 2}, {1, -2, 1, 4})},
        {{"axis", Attribute(1)}});
  Check("Gather", {X({3, 4}), Fixed(DType::kI32, {}, {2})}, {{"axis", Attribute(-1)}});
}

TEST(GradCheckMathTest, PadConstant) {
  Check("Pad", {X({3, 4}), Ints({1, 0, 2, -1})});
  Check("Pad", {X({3, 4}), Ints({0, 2, 1, 1}), X({})});  // the pad value has a gradient too
  Check("Pad", {X({2, 3, 4}), Ints({1, 2}), Absent(), Ints({-1})});
  Check("Pad", {X({2, 3, 4}), Ints({-1, 2}), X({}), Ints({1})});
}

TEST(GradCheckMathTest, Reductions) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2",
                         "ReduceLogSumExp", "ReduceMax", "ReduceMin"}) {
    SCOPED_TRACE(op);
    {
      SCOPED_TRACE("axes [1]");
      Check(op, {X({3, 4, 5}), Ints({1})});
    }
    {
      SCOPED_TRACE("axes [0, -1] keepdims 0");
      Check(op, {X({3, 4, 5}), Ints({0, -1})}, {{"keepdims", Attribute(0)}});
    }
    {
      SCOPED_TRACE("all axes keepdims 0");
      Check(op, {X({3, 4, 5})}, {{"keepdims", Attribute(0)}});
    }
    {
      SCOPED_TRACE("all axes");
      Check(op, {X({3, 4})});
    }
    {
      SCOPED_TRACE("noop_with_empty_axes");
      Check(op, {X({3, 4})}, {{"noop_with_empty_axes", Attribute(1)}});
    }
  }
}

// Tied extremes: a central difference sees half the slope at a two-way tie, which is what
// splitting dy evenly between the tied positions gives.
TEST(GradCheckMathTest, ReduceMaxMinSplitTies) {
  GradCheckInput x = X({2, 3});
  x.values = {0.5, 0.9, 0.9, -0.3, 0.2, -0.7};
  Check("ReduceMax", {x, Ints({1})});
  x.values = {-0.5, 0.9, -0.5, 0.3, 0.3, 0.7};
  Check("ReduceMin", {x, Ints({1})}, {{"keepdims", Attribute(0)}});
}

TEST(GradCheckMathTest, CumSumAndTrilu) {
  for (int64_t exclusive : {0, 1}) {
    for (int64_t reverse : {0, 1}) {
      Attrs attrs = {{"exclusive", Attribute(exclusive)}, {"reverse", Attribute(reverse)}};
      Check("CumSum", {X({3, 4}), Ints({1}, true)}, attrs);
      Check("CumSum", {X({3, 4}), Ints({-2}, true)}, attrs);
    }
  }
  Check("Trilu", {X({4, 5})});
  Check("Trilu", {X({4, 5}), Ints({1}, true)}, {{"upper", Attribute(0)}});
  Check("Trilu", {X({2, 3, 3}), Ints({-1}, true)});
}

}  // namespace
}  // namespace a8

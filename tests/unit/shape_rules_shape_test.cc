// Shape rules of reductions, shape manipulation, indexing, constants and the training-domain
// ops; Slice is also checked on random cases against a step-by-step reference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "compiler/ir/op_table.h"
#include "compiler/ir/shape_rules.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;
using shape_test::I64;
using shape_test::T;
using ShapeRulesShapeTest = shape_test::ShapeRulesFixture;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// ---------------------------------------------------------------- reductions

TEST_F(ShapeRulesShapeTest, Reductions) {
  Value* x = In(F32({2, 3, 4}));
  EXPECT_EQ(One("ReduceSum", {x, Ints({1})}), F32({2, 1, 4}));
  EXPECT_EQ(One("ReduceMean", {x, Ints({-1, 0})}, {{"keepdims", 0}}), F32({3}));
  EXPECT_EQ(One("ReduceMax", {x}), F32({1, 1, 1}));
  EXPECT_EQ(One("ReduceL2", {x}, {{"keepdims", 0}}), F32({}));
  EXPECT_EQ(One("ReduceSum", {x, Ints({})}, {{"noop_with_empty_axes", 1}}), F32({2, 3, 4}));
  EXPECT_EQ(One("ReduceSum", {x, Ints({})}), F32({1, 1, 1}));
  // The pre-upgrade form (axes attribute) gives the same answer.
  EXPECT_EQ(One("ReduceLogSumExp", {x}, {{"axes", std::vector<int64_t>{1}}}, 13), F32({2, 1, 4}));
  EXPECT_EQ(One("ArgMax", {x}, {{"axis", -1}}), I64({2, 3, 1}));
  EXPECT_EQ(One("ArgMin", {x}, {{"axis", 1}, {"keepdims", 0}}), I64({2, 4}));
  EXPECT_EQ(One("CumSum", {x, IntScalar(-1)}), F32({2, 3, 4}));

  Status s = Error("ReduceSum", {x, In(I64({1}))});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(),
              ::testing::StartsWith("node 'n' (ReduceSum): input 'axes' must be a constant "
                                    "(a800c needs static shapes); freeze graph input 'x"));
  EXPECT_THAT(s.message(), ::testing::EndsWith("=FILE.npy"));
  s = Error("ReduceProd", {x, Ints({3})});
  EXPECT_EQ(s.message(),
            "node 'n' (ReduceProd): axes 3 is out of range for rank 3 (expected "
            "[-3, 2])");
  s = Error("ReduceMin", {x, Ints({1, -2})});
  EXPECT_NE(s.message().find("names axis 1 twice"), std::string::npos) << s.message();
  s = Error("ArgMax", {x}, {{"axis", 3}});
  EXPECT_NE(s.message().find("attribute 'axis' 3 is out of range"), std::string::npos)
      << s.message();
  s = Error("CumSum", {x, IntScalar(5)});
  EXPECT_NE(s.message().find("input 'axis' 5 is out of range"), std::string::npos) << s.message();
}

// ---------------------------------------------------------------- reshaping

TEST_F(ShapeRulesShapeTest, Reshape) {
  Value* x = In(F32({2, 3, 4}));
  EXPECT_EQ(One("Reshape", {x, Ints({6, -1})}), F32({6, 4}));
  EXPECT_EQ(One("Reshape", {x, Ints({0, -1})}), F32({2, 12}));
  EXPECT_EQ(One("Reshape", {x, Ints({0, 0, 2, 2})}), F32({2, 3, 2, 2}));
  EXPECT_EQ(One("Reshape", {x, Ints({-1})}), F32({24}));
  EXPECT_EQ(One("Reshape", {In(F32({0, 3})), Ints({3, 0})}, {{"allowzero", 1}}), F32({3, 0}));
  EXPECT_EQ(One("Reshape", {In(F32({1})), Ints({})}), F32({}));

  Status s = Error("Reshape", {x, Ints({5, -1})});
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "node 'n' (Reshape): cannot reshape f32[2,3,4] to [5,-1]");
  s = Error("Reshape", {x, Ints({-1, -1})});
  EXPECT_NE(s.message().find("more than one -1"), std::string::npos) << s.message();
  s = Error("Reshape", {x, Ints({4, 7})});
  EXPECT_NE(s.message().find("(24 elements)"), std::string::npos) << s.message();
  s = Error("Reshape", {x, In(I64({2}))});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  s = Error("Reshape", {x, Ints({0, 0, 0, 0})});
  EXPECT_NE(s.message().find("copies dimension 3"), std::string::npos) << s.message();
  s = Error("Reshape", {In(F32({0, 3})), Ints({0, -1})}, {{"allowzero", 1}});
  EXPECT_NE(s.message().find("both 0 and -1"), std::string::npos) << s.message();
  // Dims whose product overflows int64.
  s = Error("Reshape", {In(F32({4})), Ints({int64_t{1} << 62, 8})});
  EXPECT_FALSE(s.ok());
}

TEST_F(ShapeRulesShapeTest, FlattenTransposeConcat) {
  EXPECT_EQ(One("Flatten", {In(F32({2, 3, 4}))}), F32({2, 12}));
  EXPECT_EQ(One("Flatten", {In(F32({2, 3, 4}))}, {{"axis", 0}}), F32({1, 24}));
  EXPECT_EQ(One("Flatten", {In(F32({2, 3, 4}))}, {{"axis", 3}}), F32({24, 1}));
  EXPECT_EQ(One("Flatten", {In(F32({2, 3, 4}))}, {{"axis", -1}}), F32({6, 4}));
  EXPECT_FALSE(Error("Flatten", {In(F32({2, 3}))}, {{"axis", 3}}).ok());
  EXPECT_EQ(One("Transpose", {In(F32({2, 3, 4}))}), F32({4, 3, 2}));
  EXPECT_EQ(One("Transpose", {In(F32({2, 3, 4}))}, {{"perm", std::vector<int64_t>{1, 2, 0}}}),
            F32({3, 4, 2}));
  Status s = Error("Transpose", {In(F32({2, 3}))}, {{"perm", std::vector<int64_t>{0, 0}}});
  EXPECT_EQ(s.message(),
            "node 'n' (Transpose): attribute 'perm' [0,0] is not a permutation of [0, 2)");
  EXPECT_EQ(One("Concat", {In(F32({2, 3})), In(F32({2, 5})), In(F32({2, 0}))}, {{"axis", -1}}),
            F32({2, 8}));
  s = Error("Concat", {In(F32({2, 3})), In(F32({3, 3}))}, {{"axis", 1}});
  EXPECT_NE(s.message().find("differs from input 0 f32[2,3] in dim 0"), std::string::npos)
      << s.message();
}

TEST_F(ShapeRulesShapeTest, Split) {
  Value* x = In(F32({2, 10}));
  StatusOr<std::vector<TensorType>> r = Infer("Split", {x, Ints({3, 7})}, {{"axis", 1}}, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], F32({2, 3}));
  EXPECT_EQ((*r)[1], F32({2, 7}));
  r = Infer("Split", {x}, {{"axis", -1}, {"num_outputs", 4}}, 4);  // 3, 3, 3, 1
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[2], F32({2, 3}));
  EXPECT_EQ((*r)[3], F32({2, 1}));
  r = Infer("Split", {x}, {{"axis", 1}}, 5);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[4], F32({2, 2}));
  r = Infer("Split", {x}, {{"split", std::vector<int64_t>{1, 1}}}, 2, 11);  // Split-11 form
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], F32({1, 10}));

  EXPECT_NE(Error("Split", {x, Ints({3, 6})}, {{"axis", 1}}, 2).message().find("sums to 9"),
            std::string::npos);
  EXPECT_NE(Error("Split", {x}, {{"axis", 1}}, 3).message().find("does not split evenly"),
            std::string::npos);
  EXPECT_NE(Error("Split", {x}, {{"num_outputs", 3}}, 2).message().find("'num_outputs' is 3"),
            std::string::npos);
  EXPECT_NE(Error("Split", {x, Ints({1, 1, 8})}, {{"axis", 1}}, 2).message().find("3 sizes"),
            std::string::npos);
}

TEST_F(ShapeRulesShapeTest, Slice) {
  Value* x = In(F32({20, 10, 5}));
  // test_slice: starts [0,0], ends [3,10], axes [0,1], steps [1,1]
  EXPECT_EQ(One("Slice", {x, Ints({0, 0}), Ints({3, 10}), Ints({0, 1}), Ints({1, 1})}),
            F32({3, 10, 5}));
  // test_slice_neg_steps: starts [20,10,4], ends [0,0,1], axes [0,1,2], steps [-1,-3,-2]
  EXPECT_EQ(
      One("Slice", {x, Ints({20, 10, 4}), Ints({0, 0, 1}), Ints({0, 1, 2}), Ints({-1, -3, -2})}),
      F32({19, 3, 2}));
  // test_slice_end_out_of_bounds / start_out_of_bounds / default axes / negative axes
  EXPECT_EQ(One("Slice", {x, Ints({1}), Ints({1000}), Ints({1}), Ints({1})}), F32({20, 9, 5}));
  EXPECT_EQ(One("Slice", {x, Ints({1000}), Ints({1000}), Ints({1}), Ints({1})}), F32({20, 0, 5}));
  EXPECT_EQ(One("Slice", {x, Ints({0, 0, 3}), Ints({20, 10, 4})}), F32({20, 10, 1}));
  EXPECT_EQ(One("Slice", {x, Ints({0}), Ints({-1}), Ints({-2})}), F32({20, 9, 5}));
  // Reversing a whole axis with INT64 extremes.
  EXPECT_EQ(One("Slice", {x, Ints({-1}), Ints({kInt64Min}), Ints({0}), Ints({-1})}),
            F32({20, 10, 5}));
  EXPECT_EQ(One("Slice", {x, Ints({kInt64Min}), Ints({kInt64Max}), Ints({2}), Ints({2})}),
            F32({20, 10, 3}));
  // Slice-1: starts/ends/axes as attributes.
  EXPECT_EQ(One("Slice", {x},
                {{"starts", std::vector<int64_t>{2}},
                 {"ends", std::vector<int64_t>{5}},
                 {"axes", std::vector<int64_t>{0}}},
                1),
            F32({3, 10, 5}));

  Status s = Error("Slice", {x, Ints({0}), Ints({1}), Ints({0}), Ints({0})});
  EXPECT_EQ(s.message(), "node 'n' (Slice): 'steps' [0] has a 0");
  s = Error("Slice", {x, Ints({0, 0}), Ints({1})});
  EXPECT_NE(s.message().find("must have the same length"), std::string::npos) << s.message();
  s = Error("Slice", {x, Ints({0, 0}), Ints({1, 1}), Ints({1, -2})});
  EXPECT_NE(s.message().find("names axis 1 twice"), std::string::npos) << s.message();
  s = Error("Slice", {x, In(I64({1})), Ints({1})});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
}

// Python's slice semantics (which ONNX Slice follows), counted element by element.
int64_t ReferenceSliceLength(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto adjust = [&](int64_t v, int64_t lower, int64_t upper) {
    if (v < 0) v = std::max(v, -dim) + dim;  // avoids overflow for INT64_MIN
    return std::clamp(v, lower, upper);
  };
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? dim : dim - 1;
  const int64_t s = adjust(start, lower, upper);
  int64_t e = end < 0 && end < -dim ? lower : adjust(end, lower, upper);
  int64_t count = 0;
  for (__int128 i = s; step > 0 ? i < e : i > e; i += step) ++count;
  return count;
}

TEST_F(ShapeRulesShapeTest, RandomSliceMatchesReference) {
  std::mt19937 rng(2024);
  const std::vector<int64_t> extremes = {kInt64Min, kInt64Max, -1000, 1000};
  auto pick = [&](int64_t dim) {
    if (rng() % 8 == 0) return extremes[rng() % extremes.size()];
    return static_cast<int64_t>(rng() % (2 * dim + 7)) - dim - 3;
  };
  for (int iter = 0; iter < 1000; ++iter) {
    const int64_t dim = rng() % 9;
    const int64_t start = pick(dim), end = pick(dim);
    int64_t step = static_cast<int64_t>(rng() % 7) - 3;
    if (step == 0) step = rng() % 2 ? kInt64Max : kInt64Min + 1;
    const int64_t expected = ReferenceSliceLength(dim, start, end, step);
    SCOPED_TRACE(fmt::format("dim={} start={} end={} step={}", dim, start, end, step));
    EXPECT_EQ(
        One("Slice", {In(F32({3, dim})), Ints({start}), Ints({end}), Ints({1}), Ints({step})}),
        F32({3, expected}));
  }
}

// ---------------------------------------------------------------- indexing, squeeze, expand, pad

TEST_F(ShapeRulesShapeTest, GatherAndSqueeze) {
  EXPECT_EQ(One("Gather", {In(F32({5, 4, 3})), In(I64({2, 6}))}, {{"axis", 1}}), F32({5, 2, 6, 3}));
  EXPECT_EQ(One("Gather", {In(F32({5, 4, 3})), In(T(DType::kI32, {}))}, {{"axis", -1}}),
            F32({5, 4}));
  EXPECT_EQ(One("GatherElements", {In(F32({3, 3})), In(I64({2, 3}))}, {{"axis", -2}}), F32({2, 3}));
  Status s = Error("Gather", {In(F32({5, 4})), In(I64({2}))}, {{"axis", -3}});
  EXPECT_EQ(s.message(),
            "node 'n' (Gather): attribute 'axis' -3 is out of range for rank 2 "
            "(expected [-2, 1])");
  s = Error("Gather", {In(F32({5, 4})), In(F32({2}))});
  EXPECT_NE(s.message().find("input 'indices' must be i32 or i64"), std::string::npos);
  EXPECT_FALSE(Error("GatherElements", {In(F32({3, 3})), In(I64({3}))}).ok());

  EXPECT_EQ(One("Squeeze", {In(F32({1, 3, 1, 5})), Ints({0, -2})}), F32({3, 5}));
  EXPECT_EQ(One("Squeeze", {In(F32({1, 3, 1, 5}))}), F32({3, 5}));
  EXPECT_EQ(One("Squeeze", {In(F32({1, 3}))}, {{"axes", std::vector<int64_t>{0}}}, 11), F32({3}));
  s = Error("Squeeze", {In(F32({1, 3})), Ints({1})});
  EXPECT_EQ(s.message(),
            "node 'n' (Squeeze): cannot squeeze axis 1 of f32[1,3]: its size is 3, "
            "not 1");
  EXPECT_EQ(One("Unsqueeze", {In(F32({3, 4})), Ints({0, 3})}), F32({1, 3, 4, 1}));
  EXPECT_EQ(One("Unsqueeze", {In(F32({3, 4})), Ints({-1, 1})}), F32({3, 1, 4, 1}));
  EXPECT_EQ(One("Unsqueeze", {In(F32({}))}, {{"axes", std::vector<int64_t>{0}}}, 11), F32({1}));
  s = Error("Unsqueeze", {In(F32({3})), Ints({2})});
  EXPECT_NE(s.message().find("axes 2 is out of range for rank 2"), std::string::npos)
      << s.message();
}

TEST_F(ShapeRulesShapeTest, ExpandPadTile) {
  EXPECT_EQ(One("Expand", {In(F32({3, 1})), Ints({2, 1, 6})}), F32({2, 3, 6}));
  EXPECT_EQ(One("Expand", {In(F32({3, 4})), Ints({1})}), F32({3, 4}));  // bidirectional
  Status s = Error("Expand", {In(F32({3, 2})), Ints({4, 3})});
  EXPECT_NE(s.message().find("not broadcastable"), std::string::npos) << s.message();

  EXPECT_EQ(One("Pad", {In(F32({1, 3, 4, 5})), Ints({0, 0, 1, 3, 0, 0, 2, 4})}),
            F32({1, 3, 7, 12}));
  EXPECT_EQ(One("Pad", {In(F32({3, 4})), Ints({1, -1}), FloatScalar(2), Ints({-1})},
                {{"mode", "constant"}}),
            F32({3, 4}));
  EXPECT_EQ(One("Pad", {In(F32({3, 4})), Ints({0, 2, 0, 1})}, {{"mode", "reflect"}}), F32({3, 7}));
  EXPECT_EQ(One("Pad", {In(F32({3, 4}))}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, 2),
            F32({5, 6}));  // Pad-2
  EXPECT_EQ(One("Pad", {In(F32({3, 4})), Ints({0, 5, 2, 1})}, {{"mode", "wrap"}}), F32({5, 10}));
  s = Error("Pad", {In(F32({3, 4})), Ints({0, -1, 0, 1})}, {{"mode", "wrap"}});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("Pad mode 'wrap' with a negative pad"), std::string::npos)
      << s.message();
  s = Error("Pad", {In(F32({3, 4})), Ints({0, 4, 0, 0})}, {{"mode", "reflect"}});
  EXPECT_NE(s.message().find("must be smaller than dim 1"), std::string::npos) << s.message();
  s = Error("Pad", {In(F32({3, 4})), Ints({0, 0, 0})});
  EXPECT_NE(s.message().find("must have 4 values"), std::string::npos) << s.message();
  s = Error("Pad", {In(F32({3, 4})), Ints({-2, 0, -2, 0})});
  EXPECT_NE(s.message().find("remove more than dim 0"), std::string::npos) << s.message();

  EXPECT_EQ(One("Tile", {In(F32({2, 3})), Ints({3, 0})}), F32({6, 0}));
  s = Error("Tile", {In(F32({2, 3})), Ints({3})});
  EXPECT_NE(s.message().find("must have 2 values"), std::string::npos) << s.message();
  EXPECT_FALSE(Error("Tile", {In(F32({1 << 20, 3})), Ints({int64_t{1} << 50, 1})}).ok());
}

// ---------------------------------------------------------------- shapes and constants

TEST_F(ShapeRulesShapeTest, ShapeSizeConstants) {
  Value* x = In(F32({2, 3, 4, 5}));
  EXPECT_EQ(One("Shape", {x}), I64({4}));
  EXPECT_EQ(One("Shape", {x}, {{"start", -3}, {"end", -1}}), I64({2}));
  EXPECT_EQ(One("Shape", {x}, {{"start", 10}}), I64({0}));
  EXPECT_EQ(One("Size", {x}), I64({}));
  EXPECT_EQ(One("ConstantOfShape", {Ints({2, 3})}), F32({2, 3}));
  EXPECT_EQ(One("ConstantOfShape", {Ints({4})},
                {{"value", TensorDataPtr(TensorData::FromInt64s({7}, {1}))}}),
            I64({4}));
  EXPECT_EQ(One("Constant", {}, {{"value", TensorDataPtr(TensorData::FromFloats({1, 2}, {2}))}}),
            F32({2}));
  EXPECT_EQ(One("Constant", {}, {{"value_ints", std::vector<int64_t>{1, 2, 3}}}), I64({3}));
  EXPECT_EQ(One("Constant", {}, {{"value_float", 1.5f}}), F32({}));
  EXPECT_EQ(Error("Constant", {}, {{"value_string", "x"}}).code(), StatusCode::kUnsupported);
  EXPECT_FALSE(Error("Constant", {}, {{"value_int", 1}, {"value_float", 1.0f}}).ok());
  EXPECT_FALSE(Error("ConstantOfShape", {Ints({2, -1})}).ok());

  EXPECT_EQ(One("Range", {IntScalar(3), IntScalar(10), IntScalar(3)}), I64({3}));
  EXPECT_EQ(One("Range", {IntScalar(10), IntScalar(6), IntScalar(-3)}), I64({2}));
  EXPECT_EQ(One("Range", {IntScalar(10), IntScalar(3), IntScalar(1)}), I64({0}));
  EXPECT_EQ(One("Range", {FloatScalar(1), FloatScalar(2), FloatScalar(0.25f)}), F32({4}));
  Status s = Error("Range", {IntScalar(0), IntScalar(5), In(I64({}))});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("input 'delta' must be a constant"), std::string::npos);
  EXPECT_FALSE(Error("Range", {IntScalar(0), IntScalar(5), IntScalar(0)}).ok());

  EXPECT_EQ(One("Trilu", {In(F32({2, 4, 5})), IntScalar(-1)}, {{"upper", 0}}), F32({2, 4, 5}));
  EXPECT_FALSE(Error("Trilu", {In(F32({5}))}).ok());
  EXPECT_EQ(One("OneHot", {In(I64({2, 3})), IntScalar(10), In(F32({2}))}), F32({2, 3, 10}));
  EXPECT_EQ(One("OneHot", {In(I64({2, 3})), IntScalar(10), In(F32({2}))}, {{"axis", 0}}),
            F32({10, 2, 3}));
  s = Error("OneHot", {In(I64({2})), In(I64({})), In(F32({2}))});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_FALSE(Error("OneHot", {In(I64({2})), IntScalar(0), In(F32({2}))}).ok());
}

// ---------------------------------------------------------------- ai.onnx.preview.training

TEST_F(ShapeRulesShapeTest, TrainingOps) {
  const std::string domain = "ai.onnx.preview.training";
  Value* r = FloatScalar(0.1f);
  Value* t = IntScalar(0);
  Value* w1 = In(F32({3, 4}));
  Value* w2 = In(T(DType::kF64, {5}));
  // Adam: R, T, X1, X2, G1, G2, V1, V2, H1, H2 -> X1', X2', V1', V2', H1', H2'
  StatusOr<std::vector<TensorType>> out =
      Infer("Adam",
            {r, t, w1, w2, In(F32({3, 4})), In(T(DType::kF64, {5})), In(F32({3, 4})),
             In(T(DType::kF64, {5})), In(F32({3, 4})), In(T(DType::kF64, {5}))},
            {}, 6, 1, domain);
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ((*out)[i], i % 2 == 0 ? F32({3, 4}) : T(DType::kF64, {5})) << i;
  }
  out = Infer("Momentum", {r, t, w1, In(F32({3, 4})), In(F32({3, 4}))},
              {{"alpha", 0.9f}, {"beta", 1.0f}, {"mode", "nesterov"}, {"norm_coefficient", 0.f}}, 2,
              1, domain);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[1], F32({3, 4}));
  out = Infer("Adagrad", {r, t, w2, In(T(DType::kF64, {5})), In(T(DType::kF64, {5}))}, {}, 2, 1,
              domain);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0], T(DType::kF64, {5}));

  out = Infer("Adagrad", {r, t, w2, In(F32({5})), In(T(DType::kF64, {5}))}, {}, 2, 1, domain);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("must have the type of the tensor it updates"),
            std::string::npos)
      << out.status().message();
  out = Infer("Adam", {r, t, w1, In(F32({3, 4})), In(F32({3, 4}))}, {}, 3, 1, domain);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("4 groups"), std::string::npos);
  out = Infer("Momentum", {r, t, w1, In(F32({3, 4})), In(F32({3, 4}))},
              {{"alpha", 0.9f}, {"beta", 1.0f}, {"mode", "heavy"}, {"norm_coefficient", 0.f}}, 2, 1,
              domain);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("attribute 'mode' is 'heavy'"), std::string::npos);
  out = Infer("Momentum", {r, t, w1, In(F32({3, 4})), In(F32({3, 4}))}, {{"alpha", 0.9f}}, 2, 1,
              domain);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("required attribute 'beta' is missing"), std::string::npos)
      << out.status().message();

  // Gradient: inputs are the xs then the zs; outputs get the xs' types.
  out = Infer("Gradient", {w1, w2, In(I64({2}))},
              {{"xs", std::vector<std::string>{"w1", "w2"}},
               {"y", "loss"},
               {"zs", std::vector<std::string>{"labels"}}},
              2, 1, domain);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0], F32({3, 4}));
  EXPECT_EQ((*out)[1], T(DType::kF64, {5}));
  out = Infer("Gradient", {w1}, {{"xs", std::vector<std::string>{"w1", "w2"}}, {"y", "loss"}}, 2, 1,
              domain);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("expected 2 (one per name"), std::string::npos);
}

// ---------------------------------------------------------------- hostile input

TEST_F(ShapeRulesShapeTest, HostileValuesAreErrorsNotOverflows) {
  struct Case {
    Status status;
    const char* want;
  };
  const Case cases[] = {
      {Error("Conv", {In(F32({1, 4, 5})), In(F32({1, 4, 3}))}, {{"group", kInt64Max}}),
       "'W' f32[1,4,3] with group=9223372036854775807 expects W[1] * group"},
      {Error("Conv", {In(F32({1, 1, 5})), In(F32({1, 1, 3}))},
             {{"dilations", std::vector<int64_t>{kInt64Max}}}),
       "attribute 'dilations' value 9223372036854775807 is out of range (expected 1 to "
       "2147483648)"},
      {Error("MaxPool", {In(F32({1, 1, 5}))},
             {{"kernel_shape", std::vector<int64_t>{2}},
              {"pads", std::vector<int64_t>{kInt64Max, kInt64Max}}}),
       "attribute 'pads' value 9223372036854775807 is out of range (expected 0 to 2147483648)"},
      {Error("ConvTranspose", {In(F32({1, 1, int64_t{1} << 40})), In(F32({1, 1, 3}))},
             {{"strides", std::vector<int64_t>{int64_t{1} << 30}}}),
       "spatial dim 0 of the output would be -1073741821"},
      {Error("Pad", {In(F32({3})), Ints({kInt64Min, 0})}),
       "'pads' [-9223372036854775808,0] is out of range"},
      {Error("Range", {IntScalar(kInt64Min), IntScalar(kInt64Max), IntScalar(1)}),
       "Range has more than 2^63 elements"},
      {Error("Split", {In(F32({10})), Ints({kInt64Max, kInt64Max})}, {}, 2),
       "'split' [9223372036854775807,9223372036854775807] sums to more than dim 0 of f32[10] (10)"},
      {Error("Concat", {In(F32({int64_t{1} << 62, 0})), In(F32({int64_t{1} << 62, 0}))},
             {{"axis", 0}}),
       "the concatenated dim overflows int64"},
      {Error("ConstantOfShape", {Ints({int64_t{1} << 32, int64_t{1} << 32})}),
       "output shape [4294967296,4294967296] has more elements than int64 can count"},
      {Error("Expand", {In(F32({1})), Ints({int64_t{1} << 40, int64_t{1} << 40})}),
       "output shape [1099511627776,1099511627776] has more elements than int64 can count"},
      {Error("OneHot", {In(I64({2})), IntScalar(kInt64Max), In(F32({2}))}),
       "input 'depth' must be from 1 to 2147483648, got 9.223372036854776e+18"},
  };
  for (const Case& c : cases) {
    ASSERT_FALSE(c.status.ok()) << c.want;
    EXPECT_THAT(c.status.message(), ::testing::HasSubstr(c.want));
  }
}

// Every op on random shapes, random constant operands and random attribute values (including
// extremes): a rule either fails with a user error or returns well-formed types; it never
// crashes, and it never reports an internal error.
TEST_F(ShapeRulesShapeTest, RandomNodesNeverCrash) {
  std::mt19937 rng(31337);
  const std::vector<int64_t> interesting = {0, 1, 2, 3, -1, -2, 7, kInt64Max, kInt64Min, 1 << 20};
  auto value = [&]() { return interesting[rng() % interesting.size()]; };
  auto shape = [&]() {
    std::vector<int64_t> dims(rng() % 5);
    for (int64_t& d : dims) d = std::vector<int64_t>{0, 1, 2, 3, 4, 6}[rng() % 6];
    return dims;
  };
  int successes = 0;
  for (const OpDef& def : AllOps()) {
    for (int iter = 0; iter < 150; ++iter) {
      Graph g;
      const int max_in = def.max_inputs < 0 ? def.min_inputs + 4 : def.max_inputs;
      const int num_in = def.min_inputs + static_cast<int>(rng() % (max_in - def.min_inputs + 1));
      std::vector<Value*> inputs;
      for (int i = 0; i < num_in; ++i) {
        const int kind = static_cast<int>(rng() % 4);
        if (kind == 0 && i >= def.min_inputs) {
          inputs.push_back(nullptr);
        } else if (kind == 1) {
          std::vector<int64_t> v(rng() % 5);
          for (int64_t& x : v) x = value();
          inputs.push_back(g.AddConstant(
              g.UniqueName("c"), TensorData::FromInt64s(v, {static_cast<int64_t>(v.size())})));
        } else {
          const DType t =
              std::vector<DType>{DType::kF32, DType::kF16, DType::kI64, DType::kBool}[rng() % 4];
          inputs.push_back(g.AddInput(g.UniqueName("x"), T(t, shape())));
        }
      }
      std::map<std::string, Attribute> attrs;
      for (const AttrSpec& spec : def.attrs) {
        if (rng() % 3 == 0) continue;
        switch (spec.kind) {
          case AttrKind::kInt:
            attrs[spec.name] = value();
            break;
          case AttrKind::kFloat:
            attrs[spec.name] = 0.5f;
            break;
          case AttrKind::kString:
            attrs[spec.name] = rng() % 2 ? "SAME_UPPER" : "none";
            break;
          case AttrKind::kInts: {
            std::vector<int64_t> v(rng() % 5);
            for (int64_t& x : v) x = value();
            attrs[spec.name] = v;
            break;
          }
          default:
            if (spec.default_value.has_value()) attrs[spec.name] = *spec.default_value;
        }
      }
      const int max_out = def.max_outputs < 0 ? def.min_outputs + 4 : def.max_outputs;
      const int num_out =
          def.min_outputs + static_cast<int>(rng() % (max_out - def.min_outputs + 1));
      std::vector<std::pair<std::string, TensorType>> outs(num_out, {"y", F32({})});
      Node* n = g.AddNode(def.name, def.domain, inputs, outs, attrs, "n");
      std::vector<TensorType> types;
      Status s = CheckNodeAgainstOpDef(*n, def);
      if (s.ok()) s = def.infer(*n, &types);
      SCOPED_TRACE(def.name);
      EXPECT_NE(s.code(), StatusCode::kInternal) << s.message();
      if (!s.ok()) {
        EXPECT_EQ(s.message().rfind("node 'n' (", 0), 0u) << s.message();
        continue;
      }
      ++successes;
      for (const TensorType& t : types) {
        EXPECT_TRUE(t.NumElements().ok()) << t.ToString();
        for (int64_t d : t.dims) EXPECT_GE(d, 0) << t.ToString();
      }
    }
  }
  EXPECT_GT(successes, 1000);
}

}  // namespace
}  // namespace a8

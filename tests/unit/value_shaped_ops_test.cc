// NonZero, Unique and NonMaxSuppression (compiler/ir/op_table_value_shaped.cc): the host
// implementations that the shape rules and constant folding share, against onnx's documented
// examples and, on random data, against properties that define the results (Unique's outputs
// rebuild X; NonZero's indices are exactly the non-zero elements); the error that names the input
// to --bind; and the folding of a graph by canonicalize.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/op_table_value_shaped.h"
#include "passes/cleanup/canonicalize.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using Dims = std::vector<int64_t>;
using shape_test::F32;
using shape_test::I64;

class ValueShapedTest : public shape_test::ShapeRulesFixture {
 protected:
  Value* Floats(const std::vector<float>& v, Dims dims) {
    return g_.AddConstant(g_.UniqueName("c"), TensorData::FromFloats(v, std::move(dims)));
  }
  Value* Int64s(const std::vector<int64_t>& v, Dims dims) {
    return g_.AddConstant(g_.UniqueName("c"), TensorData::FromInt64s(v, std::move(dims)));
  }
  // The outputs that the op's fold rule computes (the node checked against its OpDef first).
  std::vector<TensorDataPtr> Fold(const std::string& op, std::vector<Value*> inputs,
                                  std::map<std::string, Attribute> attrs = {}, int outputs = 1) {
    std::vector<std::pair<std::string, TensorType>> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back({g_.UniqueName("y"), F32({})});
    Node* n = g_.AddNode(op, "", std::move(inputs), outs, std::move(attrs), g_.UniqueName("n"));
    const OpDef* def = FindOp("", op);
    EXPECT_TRUE(CheckNodeAgainstOpDef(*n, *def).ok());
    StatusOr<std::vector<TensorDataPtr>> r = FindFoldRule("", op)(*n);
    if (!r.ok()) {
      ADD_FAILURE() << r.status().message();
      return {};
    }
    return *r;
  }
};

std::vector<int64_t> IntsOf(const TensorDataPtr& t) { return t->ToInt64Vector(); }
std::vector<double> DoublesOf(const TensorDataPtr& t) {
  std::vector<double> v(t->num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t->GetDouble(i);
  return v;
}

TEST_F(ValueShapedTest, NonZeroMatchesOnnxExample) {
  auto out = Fold("NonZero", {Int64s({1, 0, 1, 1}, {2, 2})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->type, I64({2, 3}));
  EXPECT_EQ(IntsOf(out[0]), (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));
}

TEST_F(ValueShapedTest, NonZeroIndexesExactlyTheNonZeroElementsOfRandomData) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(-2, 2);
  const Dims dims = {3, 4, 5};
  std::vector<float> x(60);
  for (float& v : x) v = pick(rng) == 0 ? 0.0f : static_cast<float>(pick(rng)) + 0.5f;
  auto out = Fold("NonZero", {Floats(x, dims)});
  ASSERT_EQ(out[0]->type.rank(), 2);
  const int64_t count = out[0]->type.dims[1];
  std::vector<int64_t> idx = IntsOf(out[0]);
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 60; ++i) {
    if (x[i] != 0) want.push_back(i);
  }
  ASSERT_EQ(count, static_cast<int64_t>(want.size()));
  for (int64_t k = 0; k < count; ++k) {
    EXPECT_EQ(idx[k] * 20 + idx[count + k] * 5 + idx[2 * count + k], want[k]) << k;
  }
}

TEST_F(ValueShapedTest, UniqueMatchesOnnxExamples) {
  // onnx's Unique examples: sorted without axis, not sorted, and with axis 0.
  auto s = Fold("Unique", {Floats({2, 1, 1, 3, 4, 3}, {6})}, {}, 4);
  EXPECT_EQ(DoublesOf(s[0]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(IntsOf(s[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(IntsOf(s[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(IntsOf(s[3]), (std::vector<int64_t>{2, 1, 2, 1}));
  auto u = Fold("Unique", {Floats({2, 1, 1, 3, 4, 3}, {6})}, {{"sorted", Attribute(0)}}, 4);
  EXPECT_EQ(DoublesOf(u[0]), (std::vector<double>{2, 1, 3, 4}));
  EXPECT_EQ(IntsOf(u[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(IntsOf(u[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(IntsOf(u[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  auto a = Fold("Unique", {Floats({1, 0, 0, 1, 0, 0, 2, 3, 4}, {3, 3})},
                {{"axis", Attribute(0)}, {"sorted", Attribute(1)}}, 4);
  EXPECT_EQ(a[0]->type, F32({2, 3}));
  EXPECT_EQ(DoublesOf(a[0]), (std::vector<double>{1, 0, 0, 2, 3, 4}));
  EXPECT_EQ(IntsOf(a[1]), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(IntsOf(a[2]), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(IntsOf(a[3]), (std::vector<int64_t>{2, 1}));
}

// On random slices with repeats, along each axis and sorted or not: Y[inverse] rebuilds X,
// indices[g] is the first slice equal to Y[g], the counts count the inverse, and sorted Y is
// strictly increasing (lexicographically).
TEST_F(ValueShapedTest, UniqueOutputsRebuildRandomInput) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> pick(0, 2);
  const Dims dims = {4, 3, 2};
  std::vector<int64_t> x(24);
  for (int64_t& v : x) v = pick(rng);
  for (int64_t axis : {0, 1, -1}) {
    for (int sorted : {0, 1}) {
      auto out = Fold("Unique", {Int64s(x, dims)},
                      {{"axis", Attribute(axis)}, {"sorted", Attribute(sorted)}}, 4);
      const int64_t ax = axis < 0 ? axis + 3 : axis;
      const int64_t n = dims[ax], groups = out[1]->num_elements();
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < ax; ++d) outer *= dims[d];
      for (int64_t d = ax + 1; d < 3; ++d) inner *= dims[d];
      std::vector<int64_t> y = IntsOf(out[0]), first = IntsOf(out[1]), inv = IntsOf(out[2]),
                           counts = IntsOf(out[3]);
      auto x_at = [&](int64_t s, int64_t p) {
        return x[(p / inner) * n * inner + s * inner + p % inner];
      };
      auto y_at = [&](int64_t g, int64_t p) {
        return y[(p / inner) * groups * inner + g * inner + p % inner];
      };
      std::vector<int64_t> seen(groups, 0);
      for (int64_t s = 0; s < n; ++s) {
        ++seen[inv[s]];
        for (int64_t p = 0; p < outer * inner; ++p) ASSERT_EQ(x_at(s, p), y_at(inv[s], p));
      }
      EXPECT_EQ(seen, counts) << "axis " << axis;
      for (int64_t g = 0; g < groups; ++g) {
        EXPECT_EQ(inv[first[g]], g);
        for (int64_t s = 0; s < first[g]; ++s) EXPECT_NE(inv[s], g);
      }
      for (int64_t g = 1; g < groups; ++g) {
        if (sorted) {
          std::vector<int64_t> prev, cur;
          for (int64_t p = 0; p < outer * inner; ++p) {
            prev.push_back(y_at(g - 1, p));
            cur.push_back(y_at(g, p));
          }
          EXPECT_LT(prev, cur);
        } else {
          EXPECT_LT(first[g - 1], first[g]);
        }
      }
    }
  }
}

TEST_F(ValueShapedTest, NonMaxSuppressionMatchesOnnxExamples) {
  const std::vector<float> boxes = {0.0f, 0.0f,  1.0f, 1.0f,  0.0f, 0.1f,   1.0f, 1.1f,
                                    0.0f, -0.1f, 1.0f, 0.9f,  0.0f, 10.0f,  1.0f, 11.0f,
                                    0.0f, 10.1f, 1.0f, 11.1f, 0.0f, 100.0f, 1.0f, 101.0f};
  const std::vector<float> scores = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};
  // suppress_by_IOU: 3 boxes per class, IoU 0.5, score 0.
  auto out =
      Fold("NonMaxSuppression", {Floats(boxes, {1, 6, 4}), Floats(scores, {1, 1, 6}),
                                 Int64s({3}, {1}), Floats({0.5f}, {1}), Floats({0.0f}, {1})});
  EXPECT_EQ(out[0]->type, I64({3, 3}));
  EXPECT_EQ(IntsOf(out[0]), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  // suppress_by_IOU_and_scores: score threshold 0.4 drops box 5.
  out = Fold("NonMaxSuppression", {Floats(boxes, {1, 6, 4}), Floats(scores, {1, 1, 6}),
                                   Int64s({3}, {1}), Floats({0.5f}, {1}), Floats({0.4f}, {1})});
  EXPECT_EQ(IntsOf(out[0]), (std::vector<int64_t>{0, 0, 3, 0, 0, 0}));
  // center_point_box: the same boxes as centers and sizes.
  std::vector<float> centers;
  for (size_t i = 0; i < boxes.size(); i += 4) {
    centers.insert(centers.end(), {(boxes[i + 1] + boxes[i + 3]) / 2, (boxes[i] + boxes[i + 2]) / 2,
                                   boxes[i + 3] - boxes[i + 1], boxes[i + 2] - boxes[i]});
  }
  out = Fold("NonMaxSuppression",
             {Floats(centers, {1, 6, 4}), Floats(scores, {1, 1, 6}), Int64s({3}, {1}),
              Floats({0.5f}, {1}), Floats({0.0f}, {1})},
             {{"center_point_box", Attribute(1)}});
  EXPECT_EQ(IntsOf(out[0]), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  // Without max_output_boxes_per_class nothing is selected (its default is 0).
  out = Fold("NonMaxSuppression", {Floats(boxes, {1, 6, 4}), Floats(scores, {1, 1, 6})});
  EXPECT_EQ(out[0]->type, I64({0, 3}));
}

TEST_F(ValueShapedTest, BadInputsNameTheField) {
  auto err = [&](Status s, const std::string& want) {
    ASSERT_FALSE(s.ok()) << want;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  };
  // A graph input: the error says which input to freeze.
  err(Error("NonZero", {In(F32({2, 2}))}),
      "input 'X' must be a constant (a800c needs static shapes); freeze graph input");
  err(Error("NonMaxSuppression", {Floats({0, 0, 1, 1}, {1, 1, 4}), In(F32({1, 1, 1}))}),
      "input 'scores' must be a constant");
  err(Error("NonMaxSuppression", {Floats({0, 0, 1}, {1, 1, 3}), Floats({1}, {1, 1, 1})}),
      "input 'boxes' must be f32[num_batches, num_boxes, 4]");
  err(Error("NonMaxSuppression", {Floats({0, 0, 1, 1}, {1, 1, 4}), Floats({1, 2}, {1, 1, 2})}),
      "input 'scores' must be f32[1, num_classes, 1]");
  err(Error("NonMaxSuppression", {Floats({0, 0, 1, 1}, {1, 1, 4}), Floats({1}, {1, 1, 1})},
            {{"center_point_box", Attribute(2)}}),
      "attribute 'center_point_box' 2 must be 0 or 1");
  err(Error("Unique", {Floats({1, 2}, {2})}, {{"axis", Attribute(1)}}),
      "attribute 'axis' 1 is out of range for rank 1");
}

// canonicalize folds the node: its outputs become constants with the computed values.
TEST_F(ValueShapedTest, CanonicalizeFoldsTheNode) {
  Value* x = Floats({0, 3, 0, 4}, {4});
  Node* n = g_.AddNode("NonZero", "", {x}, {{"nz", I64({1, 2})}}, {}, "nz_node");
  n->set_version(13);
  g_.AddOutput(n->output(0));
  Canonicalize pass;
  ASSERT_TRUE(pass.Run(g_).ok());
  const Value* out = g_.FindValue("nz");
  ASSERT_NE(out, nullptr);
  ASSERT_TRUE(out->is_constant());
  EXPECT_EQ(IntsOf(out->data()), (std::vector<int64_t>{1, 3}));
}

}  // namespace
}  // namespace a8

// shape-inference: types from the op table's rules, shape subgraphs folded on the way (also
// through float arithmetic), float data left alone, errors that name the node or the output,
// and the check against the model's declared output types.
#include "passes/analysis/shape_inference.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "compiler/ir/verifier.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::T;
// Placeholder type for outputs the pass must fill in.
const TensorType kUnknown = T(DType::kF32, {});

std::shared_ptr<TensorData> I64(const std::vector<int64_t>& v, std::vector<int64_t> dims) {
  return TensorData::FromInt64s(v, std::move(dims));
}

// x : f32[4,6,8];  y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0), [0]), [-1]))
Value* BuildShapeChain(Graph& g) {
  Value* x = g.AddInput("x", T(DType::kF32, {4, 6, 8}));
  Node* shape = g.AddNode("Shape", "", {x}, {{"shape", kUnknown}}, {}, "shape");
  Node* gather = g.AddNode("Gather", "", {shape->output(0), g.AddConstant("zero", I64({0}, {}))},
                           {{"batch", kUnknown}}, {{"axis", 0}}, "gather");
  Node* unsq = g.AddNode("Unsqueeze", "", {gather->output(0), g.AddConstant("axes", I64({0}, {1}))},
                         {{"batch1", kUnknown}}, {}, "unsqueeze");
  Node* concat = g.AddNode("Concat", "", {unsq->output(0), g.AddConstant("minus1", I64({-1}, {1}))},
                           {{"new_shape", kUnknown}}, {{"axis", 0}}, "concat");
  Node* reshape =
      g.AddNode("Reshape", "", {x, concat->output(0)}, {{"y", kUnknown}}, {}, "reshape");
  g.AddOutput(reshape->output(0));
  return reshape->output(0);
}

TEST(ShapeInferenceTest, FoldsAShapeChainAndTypesTheReshape) {
  Graph g;
  Value* y = BuildShapeChain(g);
  ShapeInference pass;
  auto changed = pass.Run(g);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(y->type(), T(DType::kF32, {4, 48}));
  ASSERT_EQ(g.num_nodes(), 1u);
  Node* reshape = *g.nodes().begin();
  ASSERT_TRUE(reshape->input(1)->is_constant());
  EXPECT_EQ(reshape->input(1)->name(), "new_shape");
  EXPECT_EQ(reshape->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(pass.stats()["nodes-folded"], 4);
  EXPECT_TRUE(Verify(g).ok()) << Verify(g).message();
  // A second run changes nothing.
  ShapeInference again;
  auto second = again.Run(g);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(*second);
}

TEST(ShapeInferenceTest, FoldsFloatArithmeticThatOnlyComputesAShape) {
  // new_shape = Cast<i64>(Cast<f32>(Shape(x)) * [2, 0.5, 1]): an exporter's upsample-style shape.
  Graph g;
  Value* x = g.AddInput("x", T(DType::kF32, {4, 6, 8}));
  Node* shape = g.AddNode("Shape", "", {x}, {{"shape", kUnknown}}, {}, "shape");
  Node* to_f = g.AddNode("Cast", "", {shape->output(0)}, {{"shape_f", kUnknown}},
                         {{"to", DTypeToOnnx(DType::kF32)}}, "to_f");
  Node* mul = g.AddNode(
      "Mul", "",
      {to_f->output(0), g.AddConstant("scale", TensorData::FromFloats({2, 0.5f, 1}, {3}))},
      {{"scaled", kUnknown}}, {}, "mul");
  Node* to_i = g.AddNode("Cast", "", {mul->output(0)}, {{"new_shape", kUnknown}},
                         {{"to", DTypeToOnnx(DType::kI64)}}, "to_i");
  Node* reshape = g.AddNode("Reshape", "", {x, to_i->output(0)}, {{"y", kUnknown}}, {}, "reshape");
  g.AddOutput(reshape->output(0));
  auto changed = ShapeInference().Run(g);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_EQ(reshape->output(0)->type(), T(DType::kF32, {8, 3, 8}));
  EXPECT_EQ(g.num_nodes(), 1u);
}

TEST(ShapeInferenceTest, LeavesFloatDataSubgraphsToCanonicalize) {
  Graph g;
  Value* x = g.AddInput("x", T(DType::kF32, {2, 3}));
  Node* fill = g.AddNode(
      "ConstantOfShape", "", {g.AddConstant("wshape", I64({3, 4}, {2}))}, {{"fill", kUnknown}},
      {{"value", Attribute(TensorDataPtr(TensorData::FromFloats({0.5f}, {1})))}}, "fill");
  Node* add = g.AddNode(
      "Add", "", {fill->output(0), g.AddConstant("b", TensorData::FromFloats({1, 2, 3, 4}, {4}))},
      {{"w", kUnknown}}, {}, "add");
  Node* mm = g.AddNode("MatMul", "", {x, add->output(0)}, {{"y", kUnknown}}, {}, "mm");
  g.AddOutput(mm->output(0));
  auto changed = ShapeInference().Run(g);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_EQ(g.num_nodes(), 3u);
  EXPECT_EQ(fill->output(0)->type(), T(DType::kF32, {3, 4}));
  EXPECT_EQ(add->output(0)->type(), T(DType::kF32, {3, 4}));
  EXPECT_EQ(mm->output(0)->type(), T(DType::kF32, {2, 4}));
  EXPECT_TRUE(Verify(g).ok()) << Verify(g).message();
}

TEST(ShapeInferenceTest, PropagatesRandomShapesThroughBroadcasting) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int64_t> a, b, want;
    const int rank = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < rank; ++d) {
      const int64_t n = 1 + rng() % 5;
      const int pick = rng() % 3;
      a.push_back(pick == 1 ? 1 : n);
      b.push_back(pick == 2 ? 1 : n);
      want.push_back(n);
    }
    b.erase(b.begin(), b.begin() + (rng() % 2) * (a[0] == want[0] ? 1 : 0));
    Graph g;
    Value* va = g.AddInput("a", T(DType::kF32, a));
    Value* vb = g.AddInput("b", T(DType::kF32, b));
    Node* add = g.AddNode("Add", "", {va, vb}, {{"s", kUnknown}}, {}, "add");
    Node* relu = g.AddNode("Relu", "", {add->output(0)}, {{"r", kUnknown}}, {}, "relu");
    g.AddOutput(relu->output(0));
    auto changed = ShapeInference().Run(g);
    ASSERT_TRUE(changed.ok()) << changed.status().message();
    EXPECT_EQ(relu->output(0)->type(), T(DType::kF32, want));
  }
}

TEST(ShapeInferenceTest, ErrorsNameTheNode) {
  Graph g;
  Value* a = g.AddInput("a", T(DType::kF32, {2, 3}));
  Value* b = g.AddInput("b", T(DType::kF32, {4}));
  Node* add = g.AddNode("Add", "", {a, b}, {{"s", kUnknown}}, {}, "bad_add");
  g.AddOutput(add->output(0));
  auto r = ShapeInference().Run(g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(r.status().message().rfind("node 'bad_add' (Add): ", 0), 0u) << r.status().message();

  Graph g2;
  Value* x = g2.AddInput("x", T(DType::kF32, {2}));
  Node* odd = g2.AddNode("NoSuchOp", "", {x}, {{"o", kUnknown}}, {}, "odd");
  g2.AddOutput(odd->output(0));
  auto r2 = ShapeInference().Run(g2);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("node 'odd' (NoSuchOp)"), std::string::npos);

  // Reshape whose shape is computed from data cannot have a static type.
  Graph g3;
  Value* data = g3.AddInput("data", T(DType::kF32, {6}));
  Value* dyn = g3.AddInput("dyn_shape", T(DType::kI64, {2}));
  Node* rs = g3.AddNode("Reshape", "", {data, dyn}, {{"o", kUnknown}}, {}, "dyn_reshape");
  g3.AddOutput(rs->output(0));
  auto r3 = ShapeInference().Run(g3);
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.status().message().find("node 'dyn_reshape' (Reshape)"), std::string::npos);
}

TEST(ShapeInferenceTest, ChecksDeclaredOutputTypes) {
  {
    Graph g;
    BuildShapeChain(g);
    g.declared_output_types["y"] = T(DType::kF32, {-1, 48});
    auto r = ShapeInference().Run(g);
    EXPECT_TRUE(r.ok()) << r.status().message();
  }
  for (const TensorType& wrong :
       {T(DType::kF32, {4, 47}), T(DType::kF16, {4, 48}), T(DType::kF32, {4, 48, 1})}) {
    Graph g;
    BuildShapeChain(g);
    g.declared_output_types["y"] = wrong;
    auto r = ShapeInference().Run(g);
    ASSERT_FALSE(r.ok()) << wrong.ToString();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(r.status().message().find("graph output 'y'"), std::string::npos);
    EXPECT_NE(r.status().message().find(wrong.ToString()), std::string::npos);
  }
}

}  // namespace
}  // namespace a8

// canonicalize (and the dce/cse passes it is made of): shape chains fold to constants, a folded
// weight subgraph becomes a parameter with the right values, identities go without renaming
// graph outputs, CSE merges pure duplicates but never random ops, DCE keeps the interface.
#include "passes/cleanup/canonicalize.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/ir/verifier.h"
#include "kernels/common/float16.h"
#include "passes/analysis/shape_inference.h"
#include "passes/cleanup/cse.h"
#include "passes/cleanup/dce.h"
#include "tests/unit/ir_test_util.h"
#include "tests/unit/random_util.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::Ops;
using ::a8::testing::RunPass;
using shape_test::T;
using shape_test::F32;

std::shared_ptr<TensorData> I64(const std::vector<int64_t>& v, std::vector<int64_t> dims) {
  return TensorData::FromInt64s(v, std::move(dims));
}
std::shared_ptr<TensorData> Bool(bool b) {
  auto t = TensorData::Make(T(DType::kBool, {}));
  t->bytes[0] = b ? 1 : 0;
  return t;
}
std::vector<float> UniformFloats(int64_t n, uint32_t seed) {
  return testing::RandomFloats(static_cast<size_t>(n), seed,
                               std::uniform_real_distribution<float>(-2.0f, 2.0f));
}

void ExpectVerifies(const Graph& g) {
  Status s = Verify(g);
  EXPECT_TRUE(s.ok()) << s.message();
}

// Shape inference then canonicalize, both must succeed; returns canonicalize's stats.
std::map<std::string, int64_t> Cleanup(Graph& g) {
  RunPass(ShapeInference(), g);
  Canonicalize pass;
  RunPass(pass, g);
  ExpectVerifies(g);
  return pass.stats();
}

TEST(CanonicalizeTest, ShapeChainFoldsToAReshapeWithAConstantShape) {
  // Typed by hand, so canonicalize folds the chain itself (without shape-inference).
  Graph g;
  Value* x = g.AddInput("x", F32({4, 6, 8}));
  Node* shape = g.AddNode("Shape", "", {x}, {{"shape", T(DType::kI64, {3})}}, {}, "shape");
  Node* gather = g.AddNode("Gather", "", {shape->output(0), g.AddConstant("zero", I64({0}, {}))},
                           {{"batch", T(DType::kI64, {})}}, {{"axis", 0}}, "gather");
  Node* unsq = g.AddNode("Unsqueeze", "", {gather->output(0), g.AddConstant("axes", I64({0}, {1}))},
                         {{"batch1", T(DType::kI64, {1})}}, {}, "unsqueeze");
  Node* concat = g.AddNode("Concat", "", {unsq->output(0), g.AddConstant("minus1", I64({-1}, {1}))},
                           {{"new_shape", T(DType::kI64, {2})}}, {{"axis", 0}}, "concat");
  Node* reshape =
      g.AddNode("Reshape", "", {x, concat->output(0)}, {{"y", F32({4, 48})}}, {}, "reshape");
  g.AddOutput(reshape->output(0));
  // Reshape's type cannot be checked while its shape is computed; everything else can.
  Status before = Verify(g, VerifyOptions{.check_types = false});
  EXPECT_TRUE(before.ok()) << before.message();
  Canonicalize pass;
  EXPECT_TRUE(RunPass(pass, g));
  EXPECT_EQ(Ops(g), std::vector<std::string>{"Reshape"});
  Value* s = reshape->input(1);
  ASSERT_TRUE(s->is_constant());
  EXPECT_EQ(s->name(), "new_shape");
  EXPECT_EQ(s->data()->ToInt64Vector(), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(pass.stats()["nodes-folded"], 4);
  // The chain's leftover constants are gone; only the shape remains.
  int constants = 0;
  for (const Value* v : g.graph_values()) constants += v->role() == ValueRole::kConstant;
  EXPECT_EQ(constants, 1);
  ExpectVerifies(g);
  EXPECT_FALSE(RunPass(Canonicalize(), g));
}

TEST(CanonicalizeTest, FoldedWeightSubgraphBecomesAParameter) {
  // w = ConstantOfShape([3, 4], 0.5) + b;  y = MatMul(x, w) * 2.0 + mask
  const auto b = UniformFloats(4, 21);
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Node* fill = g.AddNode(
      "ConstantOfShape", "", {g.AddConstant("wshape", I64({3, 4}, {2}))}, {{"fill", F32({})}},
      {{"value", Attribute(TensorDataPtr(TensorData::FromFloats({0.5f}, {1})))}}, "fill");
  Node* add =
      g.AddNode("Add", "", {fill->output(0), g.AddConstant("b", TensorData::FromFloats(b, {4}))},
                {{"w", F32({})}}, {}, "add_w");
  Node* mm = g.AddNode("MatMul", "", {x, add->output(0)}, {{"h", F32({})}}, {}, "mm");
  Node* scale =
      g.AddNode("Mul", "", {mm->output(0), g.AddConstant("two", TensorData::FromFloats({2}, {}))},
                {{"hs", F32({})}}, {}, "scale");
  // A mask computed from constants: -inf where j > i. Not a weight.
  Node* less = g.AddNode(
      "Less", "",
      {g.AddConstant("i", I64({0, 1}, {2, 1})), g.AddConstant("j", I64({0, 1, 2, 3}, {4}))},
      {{"keep", F32({})}}, {}, "less");
  Node* mask =
      g.AddNode("Where", "",
                {less->output(0), g.AddConstant("ninf", TensorData::FromFloats({-INFINITY}, {})),
                 g.AddConstant("zerof", TensorData::FromFloats({0}, {}))},
                {{"mask", F32({})}}, {}, "mask");
  Node* out =
      g.AddNode("Add", "", {scale->output(0), mask->output(0)}, {{"y", F32({})}}, {}, "out");
  g.AddOutput(out->output(0));
  auto stats = Cleanup(g);

  EXPECT_EQ(Ops(g), (std::vector<std::string>{"MatMul", "Mul", "Add"}));
  Value* w = g.FindValue("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->role(), ValueRole::kParameter);
  EXPECT_EQ(w->type(), F32({3, 4}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(w->data()->data<float>()[i * 4 + j], 0.5f + b[j]);
  EXPECT_EQ(g.parameters(), std::vector<Value*>{w});
  EXPECT_EQ(g.FindValue("two")->role(), ValueRole::kConstant);  // a scalar stays a constant
  Value* m = g.FindValue("mask");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->role(), ValueRole::kConstant);
  EXPECT_EQ(m->data()->GetDouble(1), -INFINITY);  // [0][1]: j > i
  EXPECT_EQ(m->data()->GetDouble(4), 0.0);        // [1][0]
  EXPECT_EQ(stats["weights-promoted"], 1);
}

TEST(CanonicalizeTest, NoPromotionBesideInitializerWeights) {
  // The dynamo exporter's BERT: weights are initializers, and the extended attention mask of an
  // all-ones mask folds to a finite float tensor (zeros) that an Add reads as data.
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Value* w = g.AddParameter("w", TensorData::FromFloats(UniformFloats(12, 31), {3, 4}));
  Node* fill = g.AddNode(
      "ConstantOfShape", "", {g.AddConstant("mshape", I64({2, 4}, {2}))}, {{"mask", F32({2, 4})}},
      {{"value", Attribute(TensorDataPtr(TensorData::FromFloats({0.0f}, {1})))}}, "fill");
  Node* mm = g.AddNode("MatMul", "", {x, w}, {{"h", F32({2, 4})}}, {}, "mm");
  Node* add =
      g.AddNode("Add", "", {mm->output(0), fill->output(0)}, {{"y", F32({2, 4})}}, {}, "add");
  g.AddOutput(add->output(0));
  auto stats = Cleanup(g);
  EXPECT_EQ(g.parameters(), std::vector<Value*>{w});
  Value* mask = g.FindValue("mask");
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(mask->role(), ValueRole::kConstant);
  EXPECT_EQ(stats["weights-promoted"], 0);
}

TEST(CanonicalizeTest, PromotionCanBeTurnedOff) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Node* fill = g.AddNode(
      "ConstantOfShape", "", {g.AddConstant("wshape", I64({3, 4}, {2}))}, {{"w", F32({3, 4})}},
      {{"value", Attribute(TensorDataPtr(TensorData::FromFloats({0.25f}, {1})))}}, "fill");
  Node* mm = g.AddNode("MatMul", "", {x, fill->output(0)}, {{"y", F32({2, 4})}}, {}, "mm");
  g.AddOutput(mm->output(0));
  EXPECT_TRUE(RunPass(Canonicalize(CanonicalizeOptions{.promote_folded_weights = false}), g));
  ASSERT_TRUE(mm->input(1)->is_constant());
  EXPECT_EQ(mm->input(1)->data()->GetDouble(11), 0.25);
  EXPECT_TRUE(g.parameters().empty());
}

TEST(CanonicalizeTest, CastToHalfOfAConstantIsBitExact) {
  const auto v = UniformFloats(16, 22);
  Graph g;
  Value* x = g.AddInput("x", T(DType::kF16, {16}));
  Node* cast =
      g.AddNode("Cast", "", {g.AddConstant("c", TensorData::FromFloats(v, {16}))},
                {{"c16", T(DType::kF16, {16})}}, {{"to", DTypeToOnnx(DType::kF16)}}, "cast");
  Node* mul = g.AddNode("Mul", "", {x, cast->output(0)}, {{"y", T(DType::kF16, {16})}}, {}, "mul");
  g.AddOutput(mul->output(0));
  Cleanup(g);
  Value* c16 = g.FindValue("c16");
  ASSERT_NE(c16, nullptr);
  ASSERT_EQ(c16->dtype(), DType::kF16);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(c16->data()->data<uint16_t>()[i], FloatToHalfBits(v[i]));
  }
}

TEST(CanonicalizeTest, CseMergesIdenticalMatMulsButNotDropouts) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Value* w = g.AddParameter("w", TensorData::FromFloats(UniformFloats(12, 23), {3, 4}));
  Node* m1 = g.AddNode("MatMul", "", {x, w}, {{"m1", F32({})}}, {}, "first");
  Node* m2 = g.AddNode("MatMul", "", {x, w}, {{"m2", F32({})}}, {}, "second");
  Value* ratio = g.AddConstant("ratio", TensorData::FromFloats({0.1f}, {}));
  Value* train = g.AddConstant("train", Bool(true));
  Node* d1 =
      g.AddNode("Dropout", "", {m1->output(0), ratio, train}, {{"d1", F32({})}}, {}, "drop1");
  Node* d2 =
      g.AddNode("Dropout", "", {m2->output(0), ratio, train}, {{"d2", F32({})}}, {}, "drop2");
  Node* sum = g.AddNode("Add", "", {d1->output(0), d2->output(0)}, {{"y", F32({})}}, {}, "sum");
  g.AddOutput(sum->output(0));
  auto stats = Cleanup(g);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"MatMul", "Dropout", "Dropout", "Add"}));
  EXPECT_EQ(stats["nodes-merged"], 1);
  EXPECT_EQ(d1->input(0), d2->input(0));
  EXPECT_EQ(d1->input(0)->name(), "m1");
  EXPECT_NE(sum->input(0), sum->input(1));

  // The standalone pass: different attributes do not merge, equal ones do.
  Graph h;
  Value* a = h.AddInput("a", F32({2, 3}));
  Node* t1 = h.AddNode("Transpose", "", {a}, {{"t1", F32({3, 2})}},
                       {{"perm", std::vector<int64_t>{1, 0}}});
  Node* t2 = h.AddNode("Transpose", "", {a}, {{"t2", F32({3, 2})}},
                       {{"perm", std::vector<int64_t>{1, 0}}});
  Node* s1 = h.AddNode("Softmax", "", {a}, {{"s1", F32({2, 3})}}, {{"axis", 0}});
  Node* s2 = h.AddNode("Softmax", "", {a}, {{"s2", F32({2, 3})}}, {{"axis", 1}});
  Node* j = h.AddNode("Add", "", {t1->output(0), t2->output(0)}, {{"j", F32({3, 2})}});
  Node* k = h.AddNode("Add", "", {s1->output(0), s2->output(0)}, {{"k", F32({2, 3})}});
  h.AddOutput(j->output(0));
  h.AddOutput(k->output(0));
  CommonSubexpressionElimination cse;
  auto r = cse.Run(h);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_EQ(j->input(0), j->input(1));
  EXPECT_NE(k->input(0), k->input(1));
  EXPECT_EQ(h.num_nodes(), 5u);
  ExpectVerifies(h);
}

TEST(CanonicalizeTest, DceRemovesDeadChainsButKeepsTheInterface) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Value* unused_in = g.AddInput("unused_in", F32({4}));
  Value* p = g.AddParameter("p", TensorData::FromFloats(UniformFloats(4, 24), {4}));
  Value* unused_p = g.AddParameter("unused_p", TensorData::FromFloats(UniformFloats(4, 25), {4}));
  g.AddConstant("unused_c", TensorData::FromFloats(UniformFloats(4, 26), {4}));
  Node* a = g.AddNode("Mul", "", {x, p}, {{"a", F32({4})}}, {}, "live");
  Node* d1 = g.AddNode("Relu", "", {a->output(0)}, {{"d1", F32({4})}}, {}, "dead1");
  Node* d2 = g.AddNode("Neg", "", {d1->output(0)}, {{"d2", F32({4})}}, {}, "dead2");
  g.AddNode("Exp", "", {d2->output(0)}, {{"d3", F32({4})}}, {}, "dead3");
  g.AddOutput(a->output(0));
  DeadCodeElimination dce;
  EXPECT_TRUE(RunPass(dce, g));
  EXPECT_EQ(Ops(g), std::vector<std::string>{"Mul"});
  EXPECT_EQ(dce.stats()["nodes-removed"], 3);
  EXPECT_EQ(dce.stats()["constants-removed"], 1);
  EXPECT_EQ(g.FindValue("unused_c"), nullptr);
  EXPECT_EQ(g.FindValue("unused_in"), unused_in);
  EXPECT_EQ(g.FindValue("unused_p"), unused_p);
  EXPECT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.parameters().size(), 2u);
  ExpectVerifies(g);
  EXPECT_FALSE(RunPass(DeadCodeElimination(), g));
}

TEST(CanonicalizeTest, IdentitiesGoButGraphOutputsKeepTheirNames) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Node* id1 = g.AddNode("Identity", "", {x}, {{"x_copy", F32({2, 3})}}, {}, "id1");
  Node* cast = g.AddNode("Cast", "", {id1->output(0)}, {{"x_f32", F32({2, 3})}},
                         {{"to", DTypeToOnnx(DType::kF32)}}, "cast_same");
  Node* rs = g.AddNode("Reshape", "", {cast->output(0), g.AddConstant("same", I64({2, 3}, {2}))},
                       {{"x_rs", F32({2, 3})}}, {}, "reshape_same");
  Node* drop =
      g.AddNode("Dropout", "", {rs->output(0)}, {{"x_drop", F32({2, 3})}}, {}, "drop_inference");
  Node* drop_f = g.AddNode("Dropout", "",
                           {drop->output(0), g.AddConstant("r", TensorData::FromFloats({0.5f}, {})),
                            g.AddConstant("off", Bool(false))},
                           {{"x_drop2", F32({2, 3})}}, {}, "drop_false");
  Node* relu = g.AddNode("Relu", "", {drop_f->output(0)}, {{"r1", F32({2, 3})}}, {}, "relu");
  Node* out_id = g.AddNode("Identity", "", {relu->output(0)}, {{"y", F32({2, 3})}}, {}, "out_id");
  Node* tail = g.AddNode("Neg", "", {out_id->output(0)}, {{"z", F32({2, 3})}}, {}, "tail");
  // Dropouts that are not identities: the mask is used / training is on.
  Node* masked =
      g.AddNode("Dropout", "", {x}, {{"m_out", F32({2, 3})}, {"mask", T(DType::kBool, {2, 3})}}, {},
                "drop_mask");
  Node* training = g.AddNode("Dropout", "", {x, nullptr, g.AddConstant("on", Bool(true))},
                             {{"t_out", F32({2, 3})}}, {}, "drop_train");
  g.SetOutputs({out_id->output(0), tail->output(0), masked->output(1), training->output(0)});
  auto stats = Cleanup(g);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Relu", "Identity", "Neg", "Dropout", "Dropout"}));
  EXPECT_EQ(relu->input(0), x);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->producer(), out_id);
  EXPECT_EQ(tail->input(0), relu->output(0));  // reads past the kept identity
  EXPECT_EQ(stats["identities-removed"], 6);
  EXPECT_EQ(g.FindValue("same"), nullptr);
  EXPECT_FALSE(RunPass(Canonicalize(), g));
}

TEST(CanonicalizeTest, ExpandToTheSameShapeIsRemovedAndOtherExpandsStay) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Node* same = g.AddNode("Expand", "", {x, g.AddConstant("s1", I64({1, 3}, {2}))},
                         {{"e1", F32({2, 3})}}, {}, "expand_same");
  Node* grow = g.AddNode("Expand", "", {same->output(0), g.AddConstant("s2", I64({4, 2, 3}, {3}))},
                         {{"e2", F32({4, 2, 3})}}, {}, "expand_grow");
  g.AddOutput(grow->output(0));
  Cleanup(g);
  EXPECT_EQ(Ops(g), std::vector<std::string>{"Expand"});
  EXPECT_EQ(grow->input(0), x);
}

}  // namespace
}  // namespace a8

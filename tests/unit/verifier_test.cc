// The verifier accepts valid graphs (hand-built, parsed, random) and reports each kind of broken
// invariant with a message that names the node and the operand, attribute or value.
#include "compiler/ir/verifier.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/ir/graph.h"
#include "compiler/ir/parser.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;

std::shared_ptr<TensorData> RandomFloats(std::vector<int64_t> dims, std::mt19937* rng) {
  std::normal_distribution<float> normal;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(n);
  for (float& x : v) x = normal(*rng);
  return TensorData::FromFloats(v, std::move(dims));
}

// x[2,3] @ w[3,4] + b[4] -> relu -> y
struct Mlp {
  Graph g;
  Value* x;
  Value* w;
  Value* b;
  Node* mm;
  Node* add;
  Node* relu;
  Mlp() {
    std::mt19937 rng(1);
    x = g.AddInput("x", F32({2, 3}));
    w = g.AddParameter("w", RandomFloats({3, 4}, &rng));
    b = g.AddParameter("b", RandomFloats({4}, &rng));
    mm = g.AddNode("MatMul", "", {x, w}, {{"h", F32({2, 4})}}, {}, "mm");
    add = g.AddNode("Add", "", {mm->output(0), b}, {{"hb", F32({2, 4})}}, {}, "add");
    relu = g.AddNode("Relu", "", {add->output(0)}, {{"y", F32({2, 4})}}, {}, "relu");
    g.AddOutput(relu->output(0));
  }
};

// The error of Verify(g) contains every one of `parts`.
void ExpectError(const Graph& g, std::vector<std::string> parts, VerifyOptions opts = {}) {
  Status s = Verify(g, opts);
  ASSERT_FALSE(s.ok()) << "expected an error containing '" << parts[0] << "'";
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << s.message();
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos)
        << "message: " << s.message() << "\nmissing: " << p;
  }
}

TEST(VerifierTest, AcceptsAValidGraph) {
  Mlp m;
  Status s = Verify(m.g);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(VerifierTest, AcceptsParsedMultiOutputAndOptionalInputs) {
  auto g = ParseIr(R"(graph @g opsets {"" = 18} {
  input %x : f32[4,6]
  const %lo : f32[] = [-1.0]
  %a, %b = Split(%x) {axis=1, num_outputs=2} : f32[4,3], f32[4,3] loc("split")
  %c = Clip(%a, %lo, _) : f32[4,3]
  %d = Add(%c, %b) : f32[4,3]
  output %d
})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  Status s = Verify(**g);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(VerifierTest, DanglingUse) {
  Mlp m;
  Graph other;
  Value* foreign = other.AddInput("elsewhere", F32({2, 4}));
  m.relu->SetInput(0, foreign);
  ExpectError(m.g, {"node 'relu' (Relu)", "input 0 '%elsewhere' is not defined"});
  m.relu->SetInput(0, m.add->output(0));  // leave `other` without uses from a dead graph
}

TEST(VerifierTest, CycleIsAUseBeforeDefinition) {
  Mlp m;
  // mm now reads relu's output, and relu depends on mm: a cycle.
  m.mm->SetInput(0, m.relu->output(0));
  ExpectError(
      m.g, {"node 'mm' (MatMul)", "input 0 '%y'", "before its definition", "node 'relu' (Relu)"});
}

TEST(VerifierTest, ParsedCycleIsReported) {
  auto g = ParseIr(R"(graph @g {
  input %x : f32[2]
  %a = Add(%x, %b) : f32[2] loc("first")
  %b = Relu(%a) : f32[2] loc("second")
  output %b
})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ExpectError(**g, {"node 'first' (Add)", "input 1 '%b'", "before its definition"});
}

TEST(VerifierTest, WrongOrderIsReported) {
  Mlp m;
  m.g.Reorder({m.add, m.mm, m.relu});
  ExpectError(m.g,
              {"node 'add' (Add)", "input 0 '%h'", "before its definition", "node 'mm' (MatMul)"});
  m.g.Reorder({m.mm, m.add, m.relu});
  EXPECT_TRUE(Verify(m.g).ok());
}

TEST(VerifierTest, UnknownOp) {
  Mlp m;
  m.g.AddNode("Frobnicate", "", {m.x}, {{"f", F32({2, 3})}}, {}, "frob");
  ExpectError(m.g, {"node 'frob' (Frobnicate)", "unknown op 'Frobnicate'"});
  Mlp m2;
  m2.g.AddNode("Relu", "a8", {m2.x}, {{"f", F32({2, 3})}}, {}, "r");
  ExpectError(m2.g, {"unknown op 'a8.Relu'"});
}

TEST(VerifierTest, Arity) {
  Mlp m;
  m.relu->AddInput(m.x);
  ExpectError(m.g, {"node 'relu' (Relu)", "2 inputs"});
  Mlp m2;
  m2.mm->RemoveTrailingInputs(1);
  ExpectError(m2.g, {"node 'mm' (MatMul)", "1 inputs"});
}

TEST(VerifierTest, Attributes) {
  Mlp m;
  m.relu->SetAttr("bogus", Attribute(1));
  ExpectError(m.g, {"node 'relu' (Relu)", "bogus"});
  Mlp m2;
  Node* leaky = m2.g.AddNode("LeakyRelu", "", {m2.x}, {{"l", F32({2, 3})}},
                             {{"alpha", Attribute(int64_t{2})}}, "leaky");
  ExpectError(m2.g, {"node 'leaky' (LeakyRelu)", "alpha"});
  leaky->SetAttr("alpha", Attribute(0.5f));
  EXPECT_TRUE(Verify(m2.g).ok()) << Verify(m2.g).message();
  // a800c's own annotations ride along on any op.
  leaky->SetAttr("a8.why", Attribute("deny"));
  EXPECT_TRUE(Verify(m2.g).ok()) << Verify(m2.g).message();
}

TEST(VerifierTest, OutputTypeMustMatchTheShapeRule) {
  Mlp m;
  m.g.FindValue("hb")->set_type(F32({4, 2}));
  // relu's input changed too, so `add` is the first node whose type disagrees.
  ExpectError(m.g, {"node 'add' (Add)", "output 0 '%hb'", "f32[4,2]", "f32[2,4]"});
  VerifyOptions no_types;
  no_types.check_types = false;
  EXPECT_TRUE(Verify(m.g, no_types).ok());

  Mlp m2;
  m2.g.FindValue("y")->set_type(TensorType{DType::kF16, {2, 4}});
  ExpectError(m2.g, {"node 'relu' (Relu)", "f16[2,4]", "f32[2,4]"});
}

TEST(VerifierTest, ShapeRuleErrorsSurface) {
  Mlp m;
  m.b->set_type(F32({3}));
  // b's data no longer matches its type, which is reported first ...
  ExpectError(m.g, {"param '%b'", "data of type f32[4] for a value of type f32[3]"});
  // ... and with matching data, Add's broadcast fails.
  std::mt19937 rng(2);
  Mlp m2;
  Value* b3 = m2.g.AddParameter("b3", RandomFloats({3}, &rng));
  m2.add->SetInput(1, b3);
  ExpectError(m2.g, {"node 'add' (Add)"});
}

TEST(VerifierTest, DataSizeMustMatchType) {
  Mlp m;
  auto bad = std::make_shared<TensorData>();
  bad->type = F32({5});
  bad->bytes.assign(12, 0);
  m.g.AddGraphValue("short", ValueRole::kConstant, F32({5}), bad);
  ExpectError(m.g, {"const '%short'", "12 bytes", "f32[5] needs 20"});
}

TEST(VerifierTest, InputsHaveNoData) {
  Mlp m;
  std::mt19937 rng(3);
  m.g.AddGraphValue("in", ValueRole::kInput, F32({2}), RandomFloats({2}, &rng));
  ExpectError(m.g, {"input '%in'", "has data"});
}

TEST(VerifierTest, GraphOutputsMustBeDefined) {
  Mlp m;
  Graph other;
  Value* foreign = other.AddInput("elsewhere", F32({1}));
  m.g.AddOutput(foreign);
  ExpectError(m.g, {"graph output 1 '%elsewhere' is not defined"});
  m.g.SetOutputs({m.relu->output(0)});
}

TEST(VerifierTest, RandomValidGraphsPass) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    Graph g;
    std::vector<Value*> pool = {g.AddInput("x", F32({3, 5})),
                                g.AddParameter("p", RandomFloats({5}, &rng))};
    const char* unary[] = {"Relu", "Neg", "Abs", "Sigmoid", "Tanh"};
    const char* binary[] = {"Add", "Sub", "Mul", "Max"};
    for (int i = 0; i < 30; ++i) {
      std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
      Value* a = pool[pick(rng)];
      Value* b = pool[pick(rng)];
      TensorType t = a->type().rank() >= b->type().rank() ? a->type() : b->type();
      Node* n = rng() % 2 ? g.AddNode(unary[rng() % 5], "", {a}, {{"u", a->type()}})
                          : g.AddNode(binary[rng() % 4], "", {a, b}, {{"b", t}});
      pool.push_back(n->output(0));
    }
    g.AddOutput(pool.back());
    Status s = Verify(g);
    EXPECT_TRUE(s.ok()) << s.message();
  }
}

}  // namespace
}  // namespace a8

// The autodiff engine (passes/autodiff/autodiff.h), build-training and the IR's state updates.
#include "passes/autodiff/autodiff.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "passes/autodiff/build_training.h"
#include "passes/autodiff/expand_gradient.h"
#include "passes/autodiff/grad_rule.h"
#include "tests/unit/ir_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::RunPass;

std::unique_ptr<Graph> Parse(const std::string& text) {
  auto g = ParseIr(text, "t.a8ir");
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return std::make_unique<Graph>();
  return std::move(g).value();
}

int CountOp(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->qualified_op() == op;
  return n;
}

TEST(AutodiffTest, FanOutIsSummedOnceAndUnreachedInputsArePruned) {
  // x feeds two branches; `dead` never reaches the loss; `k` (an input not in wrt) gets no
  // gradient work at all.
  auto g = Parse(R"(graph @t {
  input %x : f64[3]
  input %k : f64[3]
  %a = Mul(%x, %k) : f64[3]
  %b = Exp(%x) : f64[3]
  %c = Add(%a, %b) : f64[3]
  %dead = Neg(%x) : f64[3]
  %l = ReduceSum(%c) {keepdims=0} : f64[]
  output %l
  output %dead
})");
  Value* x = g->FindValue("x");
  auto grads = BuildGradients(*g, g->FindValue("l"), {x});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  ASSERT_EQ(grads->size(), 1u);
  EXPECT_EQ((*grads)[0]->type(), x->type());
  EXPECT_EQ((*grads)[0]->name(), "x.grad");
  EXPECT_EQ(CountOp(*g, "Sum"), 1);  // the two contributions to x
  // Neg is off the path: no gradient node is named after it.
  for (const Node* n : g->nodes()) EXPECT_NE(n->name(), "Neg_5.grad") << PrintIrToString(*g);
  EXPECT_TRUE(Verify(*g).ok());
}

TEST(AutodiffTest, UnreachedWrtGetsZeros) {
  auto g = Parse(R"(graph @t {
  input %x : f32[2]
  param %w : f32[2] = [1.0, 2.0]
  %l = ReduceSum(%x) {keepdims=0} : f32[]
  output %l
})");
  auto grads = BuildGradients(*g, g->FindValue("l"), {g->FindValue("w")});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  const Value* zero = (*grads)[0];
  ASSERT_TRUE(zero->is_constant());
  EXPECT_EQ(zero->data()->GetDouble(0), 0.0);
  EXPECT_EQ(zero->data()->GetDouble(1), 0.0);
}

TEST(AutodiffTest, IntegerPathsCarryNoGradient) {
  // ArgMax and a Cast from an integer carry no gradient: x still gets its gradient through Mul.
  auto g = Parse(R"(graph @t {
  input %x : f32[2]
  %y = ArgMax(%x) {axis=0, keepdims=1} : i64[1]
  %z = Cast(%y) {to=1} : f32[1]
  %w = Mul(%x, %z) : f32[2]
  %l = ReduceSum(%w) {keepdims=0} : f32[]
  output %l
})");
  auto grads = BuildGradients(*g, g->FindValue("l"), {g->FindValue("x")});
  EXPECT_TRUE(grads.ok()) << grads.status().message();
}

TEST(AutodiffTest, OpWithoutRuleIsAnErrorNamingTheNode) {
  // GatherElements has no gradient rule: a loss that depends on x through it is an error that
  // names the node, the op and the input, never a silently zero gradient.
  auto g = Parse(R"(graph @t {
  input %x : f32[2,3]
  input %i : i64[2,1]
  %y = GatherElements(%x, %i) {axis=1} : f32[2,1]
  %l = ReduceSum(%y) {keepdims=0} : f32[]
  output %l
})");
  auto grads = BuildGradients(*g, g->FindValue("l"), {g->FindValue("x")});
  ASSERT_FALSE(grads.ok());
  const std::string& msg = grads.status().message();
  EXPECT_NE(msg.find("no gradient rule for GatherElements"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(GatherElements)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input 'x'"), std::string::npos) << msg;
}

TEST(AutodiffTest, NonFloatLossIsRejected) {
  auto g = Parse(R"(graph @t {
  input %x : i64[2]
  %l = ReduceSum(%x) {keepdims=0} : i64[]
  output %l
})");
  auto grads = BuildGradients(*g, g->FindValue("l"), {});
  ASSERT_FALSE(grads.ok());
  EXPECT_NE(grads.status().message().find("must be a float tensor"), std::string::npos);
}

TEST(AutodiffTest, RuleRegistryKnowsTheExampleModelsOps) {
  for (const char* op : {"Gemm",
                         "MatMul",
                         "Relu",
                         "Add",
                         "Mul",
                         "Div",
                         "Erf",
                         "Conv",
                         "BatchNormalization",
                         "LayerNormalization",
                         "Softmax",
                         "MaxPool",
                         "GlobalAveragePool",
                         "Flatten",
                         "Reshape",
                         "Transpose",
                         "Gather",
                         "Where",
                         "ReduceMean",
                         "Concat",
                         "Unsqueeze",
                         "Cast",
                         "SoftmaxCrossEntropyLoss",
                         "a8.MseLoss",
                         "a8.L1Loss",
                         "a8.BceWithLogitsLoss"}) {
    EXPECT_TRUE(HasGradient(op)) << op;
  }
  for (const char* op : {"Shape", "ArgMax", "Equal"}) {
    EXPECT_EQ(FindGradRule(op), kNoGradient) << op;
  }
}

TEST(StateUpdateTest, PrintParseRoundTripAndVerify) {
  const std::string text = R"(graph @t opsets {"" = 17} {
  input %x : f32[2]
  param %w : f32[2] = [1.0, 2.0]
  %y = Mul(%x, %w) : f32[2]
  %w.next = Sub(%w, %y) : f32[2]
  output %y
  update %w = %w.next
}
)";
  auto g = Parse(text);
  ASSERT_EQ(g->updates().size(), 1u);
  EXPECT_TRUE(g->FindValue("w.next")->is_graph_output());
  EXPECT_TRUE(Verify(*g).ok());
  EXPECT_EQ(PrintIrToString(*g), text);
}

TEST(StateUpdateTest, VerifierRejectsBadUpdates) {
  auto bad_target = Parse(R"(graph @t {
  input %x : f32[2]
  %y = Neg(%x) : f32[2]
  output %y
  update %x = %y
})");
  Status s = Verify(*bad_target);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a param or state"), std::string::npos) << s.message();

  auto bad_type = Parse(R"(graph @t {
  input %x : f32[3]
  param %w : f32[2] = [1.0, 2.0]
  %y = Neg(%x) : f32[3]
  output %y
  update %w = %y
})");
  s = Verify(*bad_type);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has type f32[3], the target f32[2]"), std::string::npos)
      << s.message();
}

TEST(BuildTrainingTest, WithoutConfigNothingChanges) {
  auto g = Parse(R"(graph @t {
  input %x : f32[2]
  param %w : f32[2] = [1.0, 2.0]
  %y = Mul(%x, %w) : f32[2]
  output %y
})");
  const std::string before = PrintIrToString(*g);
  EXPECT_FALSE(RunPass(BuildTraining(), *g));
  EXPECT_EQ(PrintIrToString(*g), before);
}

TEST(BuildTrainingTest, BatchNormBecomesTrainingModeWithStateUpdates) {
  auto g = Parse(R"(graph @t opsets {"" = 17} {
  input %x : f32[2,3,2,2]
  param %s : f32[3] = [1.0, 1.0, 1.0]
  param %b : f32[3] = [0.0, 0.0, 0.0]
  param %m : f32[3] = [0.0, 0.0, 0.0]
  param %v : f32[3] = [1.0, 1.0, 1.0]
  %y = BatchNormalization(%x, %s, %b, %m, %v) : f32[2,3,2,2] loc("bn")
  %f = Flatten(%y) : f32[2,12] loc("flat")
  output %f
})");
  for (Node* n : g->nodes()) n->set_version(n->op() == "BatchNormalization" ? 15 : 13);
  TrainingConfig cfg;
  cfg.loss = "cross_entropy";
  cfg.optimizer = "sgd";
  CompileConfig config;
  config.training = cfg;
  auto changed = BuildTraining().SetConfig(&config).Run(*g);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_EQ(g->FindValue("m")->role(), ValueRole::kState);
  EXPECT_EQ(g->FindValue("v")->role(), ValueRole::kState);
  int running = 0;
  for (const Graph::StateUpdate& u : g->updates()) {
    running += u.target->name() == "m" || u.target->name() == "v";
  }
  EXPECT_EQ(running, 2);
  // s and b are trained; the running statistics are not parameters any more.
  EXPECT_EQ(g->train_step->trainable, (std::vector<std::string>{"s", "b"}));
  Status v = Verify(*g);
  EXPECT_TRUE(v.ok()) << v.message() << PrintIrToString(*g);
}

TEST(ExpandGradientTest, GradientNodeOfAnOrdinaryGraph) {
  auto g = Parse(R"(graph @t opsets {"" = 17, "ai.onnx.preview.training" = 1} {
  input %a : f32[]
  input %b : f32[]
  %c = Add(%a, %b) : f32[]
  %d = Mul(%c, %a) : f32[]
  %da, %db = ai.onnx.preview.training.Gradient(%a, %b) {xs=["a", "b"], y="d"} : f32[], f32[]
  %s = Add(%da, %db) : f32[]
  output %s
})");
  EXPECT_TRUE(RunPass(ExpandGradient(), *g));
  EXPECT_EQ(CountOp(*g, "ai.onnx.preview.training.Gradient"), 0);
  Status v = Verify(*g);
  EXPECT_TRUE(v.ok()) << v.message() << PrintIrToString(*g);
}

TEST(ExpandGradientTest, UnknownYIsAnError) {
  auto g = Parse(R"(graph @t opsets {"" = 17, "ai.onnx.preview.training" = 1} {
  input %a : f32[]
  %da = ai.onnx.preview.training.Gradient(%a) {xs=["a"], y="nope"} : f32[]
  output %da
})");
  auto changed = ExpandGradient().Run(*g);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find("'nope', which is not a value"), std::string::npos);
}

}  // namespace
}  // namespace a8

// Mixed precision: the policy's lists and overrides (PrecisionPolicyTest), painting
// (AssignPrecisionTest), cast insertion (InsertCastsTest) and folding (FoldCastsTest) on small
// IR graphs. fp32 leaves every graph unchanged.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "passes/lowering/lower.h"
#include "passes/memory/plan_memory.h"
#include "passes/memory/schedule.h"
#include "passes/mixed_precision/assign_precision.h"
#include "passes/mixed_precision/fold_casts.h"
#include "passes/mixed_precision/insert_casts.h"
#include "passes/mixed_precision/policy.h"
#include "tests/unit/ir_test_util.h"
#include "tests/unit/temp_path_util.h"

namespace a8 {
namespace {

using ::a8::testing::RunPass;

PrecisionConfig Mode(PrecisionMode m) {
  PrecisionConfig c;
  c.mode = m;
  return c;
}

// The compile configuration the passes of a test read: the test sets its precision first
// (SetPrecision) and runs the passes through Configured (or MixedPrecisionPasses). A test that
// sets none runs its passes unconfigured (fp32).
CompileConfig& TestConfig() {
  static CompileConfig config;
  return config;
}
void SetPrecision(const PrecisionConfig& precision) { TestConfig().precision = precision; }
template <typename P>
P Configured() {
  P pass;
  pass.SetConfig(&TestConfig());
  return pass;
}

std::unique_ptr<Graph> Parse(const std::string& text) {
  auto g = ParseIr(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(*g) : nullptr;
}

const Node* NodeNamed(const Graph& g, const std::string& name) {
  for (const Node* n : g.nodes()) {
    if (n->name() == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  return nullptr;
}

std::string Precision(const Graph& g, const std::string& node) {
  const Node* n = NodeNamed(g, node);
  return n == nullptr ? "" : n->GetString("a8.precision", "") + "/" + n->GetString("a8.why", "");
}

std::vector<std::unique_ptr<Pass>> MixedPrecisionPasses() {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(std::make_unique<AssignPrecision>());
  passes.push_back(std::make_unique<InsertCasts>());
  passes.push_back(std::make_unique<FoldCasts>());
  for (std::unique_ptr<Pass>& p : passes) p->SetConfig(&TestConfig());
  return passes;
}

int CountOp(const Graph& g, const std::string& op) {
  int count = 0;
  for (const Node* n : g.nodes()) count += n->op() == op ? 1 : 0;
  return count;
}

// MatMul -> Add(bias) -> Relu -> MatMul -> Tanh -> Softmax, with a weight read twice.
constexpr const char* kChain = R"(graph @chain opsets {"" = 17} {
  input %x : f32[2,3]
  param %w : f32[3,3] = [0.5, -0.25, 0.125, 1.0, -0.75, 0.375, 0.25, -0.5, 1.5]
  param %b : f32[3] = [0.1, -0.1, 0.2]
  %h = MatMul(%x, %w) : f32[2,3] loc("mm0")
  %a = Add(%h, %b) : f32[2,3] loc("add")
  %r = Relu(%a) : f32[2,3] loc("relu")
  %h2 = MatMul(%r, %w) : f32[2,3] loc("mm1")
  %t = Tanh(%h2) : f32[2,3] loc("tanh")
  %y = Softmax(%t) {axis=1} : f32[2,3] loc("softmax")
  output %y
})";

// Every op has a class: OpRegistryTest.EveryOpHasAPrecisionClass (op_registry_test.cc).

TEST(PrecisionPolicyTest, DefaultListsFollowPrecisionMd) {
  EXPECT_EQ(DefaultOpClass("MatMul"), OpPrecisionClass::kAllow);
  EXPECT_EQ(DefaultOpClass("Conv"), OpPrecisionClass::kAllow);
  EXPECT_EQ(DefaultOpClass("LayerNormalization"), OpPrecisionClass::kDeny);
  EXPECT_EQ(DefaultOpClass("BatchNormalization"), OpPrecisionClass::kDeny);
  EXPECT_EQ(DefaultOpClass("ReduceMean"), OpPrecisionClass::kDeny);
  EXPECT_EQ(DefaultOpClass("Exp"), OpPrecisionClass::kDeny);
  EXPECT_EQ(DefaultOpClass("Relu"), OpPrecisionClass::kFollow);
  EXPECT_EQ(DefaultOpClass("Reshape"), OpPrecisionClass::kFollow);
  EXPECT_EQ(DefaultOpClass("a8.AdamUpdate"), OpPrecisionClass::kPinned);
  // An internal op that neither its entry nor a list classes is FP32 (the loss scaler's
  // a8.UpdateScale); an op the table does not know has no class.
  EXPECT_EQ(DefaultOpClass("a8.UpdateScale"), OpPrecisionClass::kPinned);
  EXPECT_FALSE(DefaultOpClass("a8.SomethingNew").has_value());
  EXPECT_FALSE(DefaultOpClass("Frobnicate").has_value());
}

TEST(PrecisionPolicyTest, OverridesAreCheckedAndWinInOrder) {
  using O = PrecisionOverride;
  PrecisionConfig c = Mode(PrecisionMode::kAmp);
  c.overrides = {O::Fp32Ops({"Nope"})};
  EXPECT_FALSE(PrecisionPolicy::Create(c).ok());
  c.overrides = {O::Fp32Nodes("(")};
  EXPECT_FALSE(PrecisionPolicy::Create(c).ok());
  c.overrides = {O::PolicyFile(a8::testing::UniqueTempPath("missing.json"))};
  EXPECT_FALSE(PrecisionPolicy::Create(c).ok());

  const std::string path = a8::testing::UniqueTempPath("policy.json");
  std::ofstream(path) << R"({"fp32_ops": ["MatMul"], "fp16_ops": ["Softmax", "Relu"],
                             "fp32_nodes": "^mm1$"})";
  auto decide = [&](std::vector<O> overrides) {
    auto g = Parse(kChain);
    PrecisionConfig cfg = Mode(PrecisionMode::kAmp);
    cfg.overrides = std::move(overrides);
    SetPrecision(cfg);
    EXPECT_TRUE(Configured<AssignPrecision>().Run(*g).ok());
    return g;
  };
  // The file alone.
  auto g = decide({O::PolicyFile(path)});
  EXPECT_EQ(Precision(*g, "mm0"), "f32/policy-file");
  EXPECT_EQ(Precision(*g, "mm1"), "f32/policy-file");
  EXPECT_EQ(Precision(*g, "softmax"), "f16/policy-file");
  EXPECT_EQ(Precision(*g, "relu"), "f16/policy-file");
  // A later --fp32-ops beats the file's fp16_ops; an earlier one does not.
  g = decide({O::PolicyFile(path), O::Fp32Ops({"Relu"})});
  EXPECT_EQ(Precision(*g, "relu"), "f32/user-op");
  g = decide({O::Fp32Ops({"Relu"}), O::PolicyFile(path)});
  EXPECT_EQ(Precision(*g, "relu"), "f16/policy-file");
  // The same op in both lists: the later flag wins, either way round.
  g = decide({O::Fp32Ops({"Relu"}), O::Fp16Ops({"Relu"})});
  EXPECT_EQ(Precision(*g, "relu"), "f16/user-op");
  g = decide({O::Fp16Ops({"Relu"}), O::Fp32Ops({"Relu"})});
  EXPECT_EQ(Precision(*g, "relu"), "f32/user-op");
  // A node pattern and an op type that both match: the later wins.
  g = decide({O::Fp32Nodes("^mm0$"), O::Fp16Ops({"MatMul"})});
  EXPECT_EQ(Precision(*g, "mm0"), "f16/user-op");
  g = decide({O::Fp16Ops({"MatMul"}), O::Fp32Nodes("^mm0$")});
  EXPECT_EQ(Precision(*g, "mm0"), "f32/user-node");
  EXPECT_EQ(Precision(*g, "mm1"), "f16/user-op");
  std::remove(path.c_str());
}

TEST(AssignPrecisionTest, Fp32AndTf32ChangeNothing) {
  for (PrecisionMode m : {PrecisionMode::kFp32, PrecisionMode::kTf32}) {
    auto g = Parse(kChain);
    const std::string before = PrintIrToString(*g);
    SetPrecision(Mode(m));
    for (std::unique_ptr<Pass>& p : MixedPrecisionPasses()) {
      auto changed = p->Run(*g);
      ASSERT_TRUE(changed.ok());
      EXPECT_FALSE(*changed);
    }
    EXPECT_EQ(PrintIrToString(*g), before);
  }
}

// Integers are never cast (PRECISION.md), the 16-, 32- and 64-bit ones included, in every low
// mode: a graph of integer ops comes out of the passes with no Cast and its dtypes unchanged.
TEST(AssignPrecisionTest, IntegersOfEveryWidthAreNeverCast) {
  for (PrecisionMode m : {PrecisionMode::kAmp, PrecisionMode::kFp16, PrecisionMode::kBf16}) {
    auto g = Parse(R"(graph @g opsets {"" = 17} {
  input %a : u16[4]
  input %b : i16[4]
  input %c : u64[4]
  input %d : u32[4]
  %s = Add(%a, %a) : u16[4] loc("add")
  %p = Mul(%b, %b) : i16[4] loc("mul")
  %m = Max(%c, %c) : u64[4] loc("max")
  %q = BitShift(%d, %d) {direction="LEFT"} : u32[4] loc("shift")
  output %s
  output %p
  output %m
  output %q
})");
    ASSERT_NE(g, nullptr);
    SetPrecision(Mode(m));
    for (std::unique_ptr<Pass>& p : MixedPrecisionPasses()) ASSERT_TRUE(p->Run(*g).ok());
    EXPECT_EQ(CountOp(*g, "Cast"), 0) << PrintIrToString(*g);
    EXPECT_EQ(g->FindValue("s")->dtype(), DType::kU16);
    EXPECT_EQ(g->FindValue("p")->dtype(), DType::kI16);
    EXPECT_EQ(g->FindValue("m")->dtype(), DType::kU64);
    EXPECT_EQ(g->FindValue("q")->dtype(), DType::kU32);
  }
}

TEST(AssignPrecisionTest, AmpPaintsFollowOpsBetweenLowOpsAndKeepsDenyFeedersFp32) {
  auto g = Parse(kChain);
  SetPrecision(Mode(PrecisionMode::kAmp));
  EXPECT_TRUE(RunPass(Configured<AssignPrecision>(), *g));
  EXPECT_EQ(Precision(*g, "mm0"), "f16/allow");
  EXPECT_EQ(Precision(*g, "add"), "f16/follow");
  EXPECT_EQ(Precision(*g, "relu"), "f16/follow");
  EXPECT_EQ(Precision(*g, "mm1"), "f16/allow");
  EXPECT_EQ(Precision(*g, "tanh"), "f32/follow");
  EXPECT_EQ(Precision(*g, "softmax"), "f32/deny");
}

TEST(AssignPrecisionTest, Bf16AndPureFp16) {
  auto g = Parse(kChain);
  SetPrecision(Mode(PrecisionMode::kBf16));
  ASSERT_TRUE(Configured<AssignPrecision>().Run(*g).ok());
  EXPECT_EQ(Precision(*g, "relu"), "bf16/follow");
  auto h = Parse(kChain);
  SetPrecision(Mode(PrecisionMode::kFp16));
  ASSERT_TRUE(Configured<AssignPrecision>().Run(*h).ok());
  EXPECT_EQ(Precision(*h, "tanh"), "f16/mode");
  EXPECT_EQ(Precision(*h, "softmax"), "f32/pinned");
}

TEST(AssignPrecisionTest, GradientNodesFollowTheirForwardNode) {
  auto g = Parse(R"(graph @g opsets {"" = 17} {
  input %x : f32[2,3]
  param %w : f32[3,3] = [0.5, -0.25, 0.125, 1.0, -0.75, 0.375, 0.25, -0.5, 1.5]
  const %axes : i64[1] = [0]
  %h = MatMul(%x, %w) : f32[2,3] loc("mm0")
  %r = Relu(%h) : f32[2,3] loc("relu")
  %y = MatMul(%r, %w) : f32[2,3] loc("mm1")
  %dr = a8.ReluGrad(%y, %r) : f32[2,3] loc("relu.grad")
  %s = ReduceSum(%dr, %axes) {keepdims=0} : f32[3] loc("relu.grad.1")
  output %y
  output %s
})");
  PrecisionConfig c = Mode(PrecisionMode::kAmp);
  c.overrides = {PrecisionOverride::Fp32Nodes("^mm1$")};
  SetPrecision(c);
  ASSERT_TRUE(Configured<AssignPrecision>().Run(*g).ok());
  // relu feeds an FP32 MatMul only, so it is FP32, and so is its gradient; the reduction of a
  // gradient stays FP32 (deny) in any case.
  EXPECT_EQ(Precision(*g, "relu"), "f32/follow");
  EXPECT_EQ(Precision(*g, "relu.grad"), "f32/follow");
  EXPECT_EQ(Precision(*g, "relu.grad.1"), "f32/deny");
  c.overrides.clear();
  g = Parse(PrintIrToString(*g));
  for (Node* n : g->NodeList()) {
    n->RemoveAttr("a8.precision");
    n->RemoveAttr("a8.why");
  }
  SetPrecision(c);
  ASSERT_TRUE(Configured<AssignPrecision>().Run(*g).ok());
  EXPECT_EQ(Precision(*g, "relu"), "f16/follow");
  EXPECT_EQ(Precision(*g, "relu.grad"), "f16/follow");
}

TEST(AssignPrecisionTest, F64GraphsAreLeftAlone) {
  auto g = Parse(R"(graph @g opsets {"" = 17} {
  input %x : f64[2,3]
  input %w : f64[3,3]
  %y = MatMul(%x, %w) : f64[2,3] loc("mm")
  output %y
})");
  SetPrecision(Mode(PrecisionMode::kAmp));
  EXPECT_FALSE(RunPass(Configured<AssignPrecision>(), *g));
}

TEST(InsertCastsTest, OneCastPerValueAndTypeAndOutputsKeepTheirTypes) {
  auto g = Parse(kChain);
  SetPrecision(Mode(PrecisionMode::kFp16));
  ASSERT_TRUE(Configured<AssignPrecision>().Run(*g).ok());
  InsertCasts pass;
  EXPECT_TRUE(RunPass(pass.SetConfig(&TestConfig()), *g));
  Status v = Verify(*g);
  ASSERT_TRUE(v.ok()) << v.message() << "\n" << PrintIrToString(*g);
  // x, w (read twice, cast once), b to f16; tanh's result to f32 for the pinned softmax. Then,
  // fp16 mode without training: the parameters only read in f16 become f16 parameters.
  EXPECT_EQ(pass.stats()["casts-inserted"], 4);
  EXPECT_EQ(pass.stats()["params-lowered"], 2);
  EXPECT_EQ(CountOp(*g, "Cast"), 2);
  EXPECT_EQ(g->FindValue("w"), nullptr);
  const Value* w16 = g->FindValue("w.f16");
  ASSERT_NE(w16, nullptr);
  EXPECT_EQ(w16->role(), ValueRole::kParameter);
  EXPECT_EQ(w16->dtype(), DType::kF16);
  EXPECT_EQ(w16->uses().size(), 2u);
  EXPECT_EQ(g->FindValue("h")->dtype(), DType::kF16);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  EXPECT_EQ(g->outputs()[0]->dtype(), DType::kF32);
  EXPECT_EQ(g->FindValue("x")->dtype(), DType::kF32);
}

TEST(InsertCastsTest, ALowGraphOutputIsCastBackUnderItsName) {
  auto g = Parse(R"(graph @g opsets {"" = 17} {
  input %x : f32[2,3]
  param %w : f32[3,3] = [0.5, -0.25, 0.125, 1.0, -0.75, 0.375, 0.25, -0.5, 1.5]
  %y = MatMul(%x, %w) {a8.precision="f16", a8.why="allow"} : f32[2,3] loc("mm")
  %z = Relu(%y) {a8.precision="f16", a8.why="follow"} : f32[2,3] loc("relu")
  output %y
  output %z
})");
  ASSERT_TRUE(InsertCasts().Run(*g).ok());
  ASSERT_TRUE(Verify(*g).ok()) << PrintIrToString(*g);
  ASSERT_EQ(g->outputs().size(), 2u);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  EXPECT_EQ(g->outputs()[0]->dtype(), DType::kF32);
  EXPECT_EQ(g->outputs()[0]->producer()->op(), "Cast");
  EXPECT_EQ(g->outputs()[1]->name(), "z");
  EXPECT_EQ(g->outputs()[1]->dtype(), DType::kF32);
  // relu reads the f16 result, not the cast back.
  EXPECT_EQ(NodeNamed(*g, "relu")->input(0)->name(), "y.f16");
}

TEST(InsertCastsTest, TheOptimizerReadsLowGradientsDirectly) {
  auto g = Parse(R"(graph @g opsets {"" = 17} {
  param %b : f32[3] = [0.1, -0.1, 0.2]
  state %ctl : f32[5] = [0.1, 1.0, 1.0, 0.0, 0.0]
  %g = Mul(%b, %b) {a8.precision="f16", a8.why="mode"} : f32[3] loc("grad")
  %b.next = a8.SgdUpdate(%b, %g, %ctl) {a8.precision="f32", a8.why="pinned", dampening=0.0, momentum=0.0, nesterov=0, weight_decay=0.0} : f32[3] loc("b.update")
  update %b = %b.next
})");
  ASSERT_TRUE(InsertCasts().Run(*g).ok());
  ASSERT_TRUE(Verify(*g).ok()) << PrintIrToString(*g);
  const Node* update = NodeNamed(*g, "b.update");
  EXPECT_EQ(update->input(1)->dtype(), DType::kF16);
  EXPECT_EQ(update->input(0)->dtype(), DType::kF32);
  EXPECT_EQ(update->output(0)->dtype(), DType::kF32);
}

TEST(InsertCastsTest, EachCastSitsBeforeItsFirstReaderInProgramOrder) {
  auto g = Parse(R"(graph @g opsets {"" = 17} {
  input %x : f32[2,3]
  input %d : f64[2,3]
  param %w : f32[3,3] = [0.5, -0.25, 0.125, 1.0, -0.75, 0.375, 0.25, -0.5, 1.5]
  %h = MatMul(%x, %w) {a8.precision="f16", a8.why="allow"} : f32[2,3] loc("mm")
  %c1 = CastLike(%d, %h) : f32[2,3] loc("early")
  %s = Softmax(%h) {a8.precision="f32", a8.why="deny", axis=1} : f32[2,3] loc("softmax")
  %c2 = CastLike(%d, %h) : f32[2,3] loc("late")
  %y = Relu(%h) {a8.precision="f16", a8.why="follow"} : f32[2,3] loc("relu")
  %e = CastLike(%d, %y) : f32[2,3] loc("reader")
  %t = Tanh(%y) {a8.precision="f32", a8.why="deny"} : f32[2,3] loc("tanh")
  output %c1
  output %s
  output %c2
  output %y
  output %e
  output %t
})");
  // Program order tanh, reader; the uses of %y are in the other order.
  g->MoveNode(const_cast<Node*>(NodeNamed(*g, "tanh")), const_cast<Node*>(NodeNamed(*g, "reader")));
  InsertCasts pass;
  ASSERT_TRUE(pass.Run(*g).ok());
  ASSERT_TRUE(Verify(*g).ok()) << PrintIrToString(*g);
  // The graph-level operands are cast at the start (the later one first); %h's one f32 cast,
  // made for the softmax, moves up to the earlier CastLike and stays there for the later one;
  // the output %y is cast back under its name before its first reader in program order.
  std::vector<std::string> order;
  for (const Node* n : g->nodes()) order.push_back(n->op() + ":" + n->output(0)->name());
  EXPECT_EQ(order, (std::vector<std::string>{"Cast:w.f16", "Cast:x.f16", "MatMul:h", "Cast:h.f32",
                                             "CastLike:c1", "Softmax:s", "CastLike:c2",
                                             "Relu:y.f16", "Cast:y", "Tanh:t", "CastLike:e"}))
      << PrintIrToString(*g);
  EXPECT_EQ(NodeNamed(*g, "early")->input(1)->name(), "h.f32");
  EXPECT_EQ(NodeNamed(*g, "late")->input(1)->name(), "h.f32");
  EXPECT_EQ(NodeNamed(*g, "tanh")->input(0)->name(), "y");
  EXPECT_EQ(NodeNamed(*g, "reader")->input(1)->name(), "y");
  EXPECT_EQ(pass.stats()["casts-inserted"], 4);
}

TEST(FoldCastsTest, WideningRoundTripsFoldNarrowingOnesStay) {
  EXPECT_TRUE(FloatWidens(DType::kF16, DType::kF32));
  EXPECT_TRUE(FloatWidens(DType::kBF16, DType::kF64));
  EXPECT_FALSE(FloatWidens(DType::kF32, DType::kF16));
  EXPECT_FALSE(FloatWidens(DType::kF16, DType::kBF16));
  auto g = Parse(R"(graph @g opsets {"" = 17} {
  input %x : f32[4]
  input %p : f16[4]
  %n = Cast(%x) {to=10} : f16[4] loc("narrow")
  %nb = Cast(%n) {to=1} : f32[4] loc("narrow_back")
  %w = Cast(%p) {to=1} : f32[4] loc("widen")
  %wb = Cast(%w) {to=10} : f16[4] loc("widen_back")
  %a = Neg(%nb) : f32[4] loc("neg_a")
  %b = Neg(%wb) : f16[4] loc("neg_b")
  output %a
  output %b
})");
  SetPrecision(Mode(PrecisionMode::kAmp));
  FoldCasts pass;
  EXPECT_TRUE(RunPass(pass.SetConfig(&TestConfig()), *g));
  ASSERT_TRUE(Verify(*g).ok()) << PrintIrToString(*g);
  EXPECT_EQ(NodeNamed(*g, "neg_a")->input(0)->name(), "nb");
  EXPECT_EQ(NodeNamed(*g, "neg_b")->input(0)->name(), "p");
  EXPECT_EQ(CountOp(*g, "Cast"), 2);
}

TEST(AssignPrecisionTest, ThePlanRecordsTheModeAndEachKernelsReason) {
  auto g = Parse(kChain);
  SetPrecision(Mode(PrecisionMode::kAmp));
  std::vector<std::unique_ptr<Pass>> passes = MixedPrecisionPasses();
  passes.push_back(std::make_unique<Schedule>());
  passes.push_back(std::make_unique<PlanMemory>());
  for (std::unique_ptr<Pass>& p : passes) {
    auto r = p->Run(*g);
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  LowerOptions lower;
  lower.config = &TestConfig();
  auto plan = LowerToPlan(*g, lower);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->plan.precision(), "amp");
  std::map<std::string, std::string> why;
  for (const auto& k : plan->plan.kernels()) why[k.op()] += k.why() + ";";
  EXPECT_EQ(why["MatMul"], "allow;allow;");
  EXPECT_EQ(why["Softmax"], "deny;");
  EXPECT_EQ(why["Cast"], ";;;;");
  // a8.* attributes are dropped by lowering.
  for (const auto& k : plan->plan.kernels()) {
    for (const auto& a : k.attrs()) EXPECT_NE(a.name().rfind("a8.", 0), 0u) << a.name();
  }
}

}  // namespace
}  // namespace a8

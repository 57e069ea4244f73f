// The fuse pass (passes/fusion/fuse.h) on IR text: what fuses, what does not, provenance, names,
// a second run changing nothing; and the example models' training plans containing the fused
// kernels with their ONNX nodes (numerical parity: tests/e2e/fuse_parity.py).
#include "passes/fusion/fuse.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "tests/unit/compile_test_util.h"

namespace a8 {
namespace {

// Parses, fuses (checking the verifier after), and returns the printed graph.
std::string FuseIr(const std::string& text, bool* changed = nullptr, Fuse* pass = nullptr) {
  auto g = ParseIr(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return "";
  Fuse local;
  Fuse& fuse = pass != nullptr ? *pass : local;
  auto r = fuse.Run(**g);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (changed != nullptr) *changed = r.ok() && *r;
  Status v = Verify(**g);
  EXPECT_TRUE(v.ok()) << v.message();
  return PrintIrToString(**g);
}

constexpr const char* kMlp = R"(graph @mlp opsets {"" = 20} {
  input %x : f32[6,4]
  param %w1 : f32[3,4] = <elided>
  param %b1 : f32[3] = <elided>
  param %w2 : f32[3,2] = <elided>
  param %b2 : f32[2] = <elided>
  %h = Gemm(%x, %w1, %b1) {transB=1} : f32[6,3] loc("fc1")
  %r = Relu(%h) : f32[6,3] loc("relu1")
  %m = MatMul(%r, %w2) : f32[6,2] loc("fc2")
  %y = Add(%b2, %m) : f32[6,2] loc("fc2_bias")
  output %y
})";

TEST(FuseTest, GemmReluAndMatMulBias) {
  Fuse pass;
  bool changed = false;
  const std::string out = FuseIr(kMlp, &changed, &pass);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find(R"(%r = a8.FusedMatMul(%x, %w1, %b1) {a8.onnx_nodes=["fc1", "relu1"], )"
                     R"(epilogue="bias_relu", trans_b=1} : f32[6,3] loc("fc1"))"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"(%y = a8.FusedMatMul(%r, %w2, %b2) {a8.onnx_nodes=["fc2", "fc2_bias"], )"
                     R"(epilogue="bias"} : f32[6,2])"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("Relu("), std::string::npos) << out;
  EXPECT_EQ(pass.stats()["gemm-epilogues-fused"], 2);
  // A second run finds nothing more.
  bool again = true;
  FuseIr(out, &again);
  EXPECT_FALSE(again);
}

TEST(FuseTest, CastBetweenProductAndBiasBlocks) {
  const std::string out = FuseIr(R"(graph @g opsets {"" = 20} {
  input %x : f16[2,4]
  param %w : f16[4,3] = <elided>
  param %b : f32[3] = <elided>
  %m = MatMul(%x, %w) : f16[2,3]
  %m.f32 = Cast(%m) {to=1} : f32[2,3]
  %y = Add(%m.f32, %b) : f32[2,3]
  output %y
})");
  EXPECT_EQ(out.find("FusedMatMul"), std::string::npos) << out;
}

TEST(FuseTest, IntermediateGraphOutputBecomesOutput1) {
  // %h is an output: the Relu may still fuse (the pre-activation comes out as output 1).
  const std::string out = FuseIr(R"(graph @g opsets {"" = 20} {
  input %x : f32[2,4]
  param %w : f32[4,3] = <elided>
  %h = MatMul(%x, %w) : f32[2,3] loc("mm")
  %y = Relu(%h) : f32[2,3] loc("relu")
  output %y
  output %h
})");
  EXPECT_NE(out.find(R"(%y, %h = a8.FusedMatMul(%x, %w) {a8.onnx_nodes=["mm", "relu"], )"
                     R"(epilogue="relu"} : f32[2,3], f32[2,3])"),
            std::string::npos)
      << out;
}

TEST(FuseTest, BackwardDReluWithBiasGradient) {
  const std::string out = FuseIr(R"(graph @g opsets {"" = 20} {
  input %dy : f32[5,2]
  input %r : f32[5,3]
  param %w : f32[3,2] = <elided>
  const %axes : i64[1] = [0]
  %d = Gemm(%dy, %w) {transB=1} : f32[5,3] loc("fc2.grad")
  %dr = a8.ReluGrad(%d, %r) : f32[5,3] loc("relu.grad")
  %db = ReduceSum(%dr, %axes) {keepdims=0} : f32[3] loc("bias.grad")
  output %dr
  output %db
})");
  EXPECT_NE(out.find(R"(%dr, %db = a8.FusedMatMul(%dy, %w, _, %r) {a8.onnx_nodes=["fc2.grad", )"
                     R"("relu.grad", "bias.grad"], epilogue="drelu_bgrad", trans_b=1} : )"
                     R"(f32[5,3], f32[3])"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("%axes"), std::string::npos) << "the unused axes constant is erased\n" << out;
}

TEST(FuseTest, ElementwiseChainWithConstantsAndCast) {
  Fuse pass;
  const std::string out = FuseIr(R"(graph @g opsets {"" = 20} {
  input %x : f32[2,3]
  input %s : f32[]
  const %half : f32[] = [0.5]
  %a = Mul(%x, %half) : f32[2,3] loc("a")
  %b = Add(%a, %s) : f32[2,3] loc("b")
  %c = Sigmoid(%b) : f32[2,3] loc("c")
  %d = Cast(%c) {to=10} : f16[2,3] loc("d")
  output %d
})",
                                 nullptr, &pass);
  EXPECT_NE(out.find(R"(%d = a8.FusedElementwise(%x, %s) {a8.onnx_nodes=["a", "b", "c", "d"], )"
                     R"(constants=[0.5], program=[0, 2, 0, 0, 18, 3, 0, 2, 16, 4, 3, 1, 4, 5, 4, )"
                     R"(0, 13, 6, 5, 0], to=10} : f16[2,3] loc("d"))"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("%half"), std::string::npos) << out;
  EXPECT_EQ(pass.stats()["elementwise-nodes-fused"], 4);
}

// A Sum is its chain of Adds in input order (the Sum kernel's order): alone (the gradient sums of
// the backward), and with a narrowing Cast after it.
TEST(FuseTest, SumIsAChainOfAddsAloneOrWithACast) {
  Fuse pass;
  const std::string out = FuseIr(R"(graph @g opsets {"" = 20} {
  input %a : f32[2,3]
  input %b : f32[2,3]
  input %c : f32[2,3]
  input %d : f32[2,3]
  %s = Sum(%a, %b, %c, %d) : f32[2,3] loc("s")
  %t = Sum(%a, %b) : f32[2,3] loc("t")
  %t16 = Cast(%t) {to=10} : f16[2,3] loc("t16")
  output %s
  output %t16
})",
                                 nullptr, &pass);
  // Opcode 16 is Add: registers 4 = 0 + 1, 5 = 4 + 2, 6 = 5 + 3.
  EXPECT_NE(out.find(R"(%s = a8.FusedElementwise(%a, %b, %c, %d) {a8.onnx_nodes=["s"], )"
                     R"(program=[16, 4, 0, 1, 16, 5, 4, 2, 16, 6, 5, 3]} : f32[2,3] loc("s"))"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"(%t16 = a8.FusedElementwise(%a, %b) {a8.onnx_nodes=["t", "t16"], )"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("Sum("), std::string::npos) << out;
  EXPECT_EQ(pass.stats()["elementwise-chains-fused"], 2);
}

TEST(FuseTest, ChainStopsAtSharedValuesOutputsAndBroadcasts) {
  const std::string out = FuseIr(R"(graph @g opsets {"" = 20} {
  input %x : f32[2,3]
  input %row : f32[3]
  %a = Exp(%x) : f32[2,3] loc("a")
  %b = Neg(%a) : f32[2,3] loc("b")
  %c = Add(%b, %a) : f32[2,3] loc("c")
  %e = Tanh(%x) : f32[2,3] loc("e")
  %f = Abs(%e) : f32[2,3] loc("f")
  %g = Add(%x, %row) : f32[2,3] loc("g")
  %h = Relu(%g) : f32[2,3] loc("h")
  output %c
  output %e
  output %f
  output %h
})");
  // %a is read twice: it stays; %b + %c fuse.
  EXPECT_NE(out.find(R"(%a = Exp(%x))"), std::string::npos) << out;
  EXPECT_NE(out.find(R"(%c = a8.FusedElementwise(%a) {a8.onnx_nodes=["b", "c"])"),
            std::string::npos)
      << out;
  // %e is a graph output: Tanh and Abs stay apart.
  EXPECT_NE(out.find(R"(%f = Abs(%e))"), std::string::npos) << out;
  // A row broadcast is not an elementwise operand of the fused kind: Add and Relu stay.
  EXPECT_NE(out.find(R"(%h = Relu(%g))"), std::string::npos) << out;
}

// A residual block: Conv + Relu, and Conv + Add(residual) + Relu without a bias (input 2
// absent) become a8.FusedConv; a Conv read twice, an Add that broadcasts and a lone Conv do not.
TEST(FuseTest, ConvEpilogues) {
  Fuse pass;
  bool changed = false;
  const std::string out = FuseIr(R"(graph @g opsets {"" = 20} {
  input %x : f32[2,4,6,6]
  param %w1 : f32[4,4,3,3] = <elided>
  param %b1 : f32[4] = <elided>
  param %w2 : f32[4,4,3,3] = <elided>
  param %s : f32[4,1,1] = <elided>
  %c1 = Conv(%x, %w1, %b1) {pads=[1,1,1,1]} : f32[2,4,6,6] loc("conv1")
  %r1 = Relu(%c1) : f32[2,4,6,6] loc("relu1")
  %c2 = Conv(%r1, %w2) {pads=[1,1,1,1]} : f32[2,4,6,6] loc("conv2")
  %a = Add(%x, %c2) : f32[2,4,6,6] loc("add")
  %y = Relu(%a) : f32[2,4,6,6] loc("relu2")
  %c3 = Conv(%y, %w2) {pads=[1,1,1,1]} : f32[2,4,6,6] loc("conv3")
  %r3 = Relu(%c3) : f32[2,4,6,6] loc("relu3")
  %c4 = Conv(%y, %w2) {pads=[1,1,1,1]} : f32[2,4,6,6] loc("conv4")
  %a4 = Add(%c4, %s) : f32[2,4,6,6] loc("add4")
  %c5 = Conv(%y, %w1, %b1) {pads=[1,1,1,1]} : f32[2,4,6,6] loc("conv5")
  output %r3
  output %c3
  output %a4
  output %c5
})",
                                 &changed, &pass);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find(R"(%r1 = a8.FusedConv(%x, %w1, %b1) {a8.onnx_nodes=["conv1", "relu1"], )"
                     R"(activation="relu", pads=[1, 1, 1, 1]} : f32[2,4,6,6] loc("conv1"))"),
            std::string::npos)
      << out;
  EXPECT_NE(
      out.find(R"(%y = a8.FusedConv(%r1, %w2, _, %x) {a8.onnx_nodes=["conv2", "add", )"
               R"("relu2"], activation="relu", pads=[1, 1, 1, 1]} : f32[2,4,6,6] loc("conv2"))"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find(R"(%c3 = Conv(%y, %w2))"), std::string::npos) << out;  // also an output
  EXPECT_NE(out.find(R"(%a4 = Add(%c4, %s))"), std::string::npos) << out;   // broadcasts
  EXPECT_NE(out.find(R"(%c5 = Conv(%y, %w1, %b1))"), std::string::npos) << out;
  EXPECT_EQ(pass.stats()["conv-epilogues-fused"], 2);
  bool again = true;
  FuseIr(out, &again);
  EXPECT_FALSE(again);
}

TEST(FuseTest, ExampleTrainingPlansCarryFusedKernelsAndProvenance) {
  TrainingConfig training;
  training.loss = "cross_entropy";
  PlanFile pf = testing::CompileTrainingPlan("mlp", 8, training);
  int forward = 0, backward = 0;
  for (const plan::Kernel& k : pf.plan.kernels()) {
    if (k.op() != "a8.FusedMatMul") continue;
    EXPECT_GE(k.onnx_nodes_size(), 2) << k.name();
    for (const plan::Attribute& a : k.attrs()) {
      EXPECT_NE(a.name().rfind("a8.", 0), 0u) << "annotations stay out of kernel attrs";
      if (a.name() != "epilogue") continue;
      if (a.s() == "bias_relu") ++forward;
      if (a.s() == "drelu_bgrad") ++backward;
    }
  }
  EXPECT_EQ(forward, 2);
  EXPECT_EQ(backward, 2);
}

}  // namespace
}  // namespace a8

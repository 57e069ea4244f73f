// dce (DeadCodeElimination): a dead chain of any length goes in one run; the model's interface
// (inputs, parameters, state) stays even when unused; unused constants go; nodes that exist for
// an effect (no outputs) stay; a second run changes nothing.
#include "passes/cleanup/dce.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/verifier.h"
#include "tests/unit/ir_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::ParseOrFail;
using ::a8::testing::RunPass;

std::vector<std::string> NodeNames(const Graph& g) {
  std::vector<std::string> names;
  for (const Node* n : g.nodes()) names.push_back(n->output(0)->name());
  return names;
}

TEST(DeadCodeEliminationTest, RemovesADeadChainInOneRunAndKeepsTheInterface) {
  auto g = ParseOrFail(R"(graph @t {
  input %x : f32[3]
  input %unused_input : f32[3]
  param %w : f32[3] = [1, 2, 3]
  param %unused_param : f32[3] = [4, 5, 6]
  const %k : f32[3] = [7, 8, 9]
  const %used_k : f32[3] = [1, 1, 1]
  %a = Neg(%x) : f32[3]
  %b = Abs(%a) : f32[3]
  %c = Mul(%b, %k) : f32[3]
  %d = Exp(%c) : f32[3]
  %y = Mul(%x, %w) : f32[3]
  %z = Add(%y, %used_k) : f32[3]
  output %z
})");
  ASSERT_NE(g, nullptr);
  DeadCodeElimination pass;
  EXPECT_TRUE(RunPass(pass, *g));
  EXPECT_EQ(NodeNames(*g), (std::vector<std::string>{"y", "z"}));
  // The interface stays; the unused constant goes, the used one stays.
  EXPECT_NE(g->FindValue("unused_input"), nullptr);
  EXPECT_NE(g->FindValue("unused_param"), nullptr);
  EXPECT_EQ(g->FindValue("k"), nullptr);
  EXPECT_NE(g->FindValue("used_k"), nullptr);
  EXPECT_TRUE(Verify(*g).ok());

  auto again = pass.Run(*g);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(DeadCodeEliminationTest, KeepsGraphOutputsAndNodesUsedOnlyByThem) {
  auto g = ParseOrFail(R"(graph @t {
  input %x : f32[2]
  %a = Relu(%x) : f32[2]
  %b = Neg(%a) : f32[2]
  %dead = Sigmoid(%x) : f32[2]
  output %a
  output %b
})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(RunPass(DeadCodeElimination(), *g));
  EXPECT_EQ(NodeNames(*g), (std::vector<std::string>{"a", "b"}));
}

TEST(DeadCodeEliminationTest, RemoveDeadCodeCountsNodesAndConstants) {
  auto g = ParseOrFail(R"(graph @t {
  input %x : f32[2]
  const %c : f32[2] = [1, 2]
  %a = Add(%x, %c) : f32[2]
  %b = Tanh(%a) : f32[2]
  %y = Relu(%x) : f32[2]
  output %y
})");
  ASSERT_NE(g, nullptr);
  DeadCodeCounts counts = RemoveDeadCode(*g);
  EXPECT_EQ(counts.nodes, 2);
  EXPECT_EQ(counts.constants, 1);
}

}  // namespace
}  // namespace a8

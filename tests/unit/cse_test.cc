// cse (CommonSubexpressionElimination): equal computations merge whatever their node names;
// different attributes, input order or types do not; random ops and ops outside the default
// domain never merge; a duplicate that is a graph output keeps its name.
#include "passes/cleanup/cse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/verifier.h"
#include "passes/cleanup/dce.h"
#include "tests/unit/ir_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::CountOp;
using ::a8::testing::ParseOrFail;

// Runs CSE then DCE (CSE moves uses; the dead duplicates go with DCE); returns CSE's verdict.
bool RunCse(Graph& g) {
  auto changed = CommonSubexpressionElimination().Run(g);
  EXPECT_TRUE(changed.ok()) << changed.status().message();
  RemoveDeadCode(g);
  EXPECT_TRUE(Verify(g).ok());
  return changed.ok() && *changed;
}

TEST(CommonSubexpressionEliminationTest, MergesEqualComputationsWhateverTheirNames) {
  auto g = ParseOrFail(R"(graph @t {
  input %x : f32[2,3]
  %a = Softmax(%x) {axis=1} : f32[2,3] loc("first")
  %b = Softmax(%x) {axis=1} : f32[2,3] loc("second")
  %y = Add(%a, %b) : f32[2,3]
  output %y
})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(RunCse(*g));
  EXPECT_EQ(CountOp(*g, "Softmax"), 1);
  const Node* add = g->FindValue("y")->producer();
  EXPECT_EQ(add->input(0), add->input(1));
  // Nothing left to merge.
  EXPECT_FALSE(*CommonSubexpressionElimination().Run(*g));
}

TEST(CommonSubexpressionEliminationTest, DifferentAttributesOrInputOrderStaySeparate) {
  auto g = ParseOrFail(R"(graph @t {
  input %x : f32[2,3]
  input %z : f32[2,3]
  %a = Softmax(%x) {axis=1} : f32[2,3]
  %b = Softmax(%x) {axis=0} : f32[2,3]
  %c = Sub(%x, %z) : f32[2,3]
  %d = Sub(%z, %x) : f32[2,3]
  %s1 = Add(%a, %b) : f32[2,3]
  %s2 = Add(%c, %d) : f32[2,3]
  %y = Add(%s1, %s2) : f32[2,3]
  output %y
})");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(RunCse(*g));
  EXPECT_EQ(CountOp(*g, "Softmax"), 2);
  EXPECT_EQ(CountOp(*g, "Sub"), 2);
}

TEST(CommonSubexpressionEliminationTest, RandomOpsNeverMerge) {
  auto g = ParseOrFail(R"(graph @t {
  input %x : f32[4]
  const %ratio : f32[] = [0.5]
  const %train : bool[] = [1]
  %a = Dropout(%x, %ratio, %train) : f32[4]
  %b = Dropout(%x, %ratio, %train) : f32[4]
  %y = Add(%a, %b) : f32[4]
  output %y
})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(IsRandomOp(*g->FindValue("a")->producer()));
  EXPECT_FALSE(IsRandomOp(*g->FindValue("y")->producer()));
  EXPECT_FALSE(RunCse(*g));
  EXPECT_EQ(CountOp(*g, "Dropout"), 2);
}

TEST(CommonSubexpressionEliminationTest, ADuplicateGraphOutputKeepsItsName) {
  auto g = ParseOrFail(R"(graph @t {
  input %x : f32[2]
  %a = Relu(%x) : f32[2]
  %b = Relu(%x) : f32[2]
  %c = Neg(%b) : f32[2]
  output %b
  output %c
})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(RunCse(*g));
  // b stays (a graph output), but its other use, c, now reads a.
  ASSERT_NE(g->FindValue("b"), nullptr);
  EXPECT_EQ(g->FindValue("c")->producer()->input(0), g->FindValue("a"));
}

}  // namespace
}  // namespace a8

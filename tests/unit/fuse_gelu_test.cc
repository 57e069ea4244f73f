// fuse-gelu (FuseGelu): GELU written with Erf becomes one Gelu that keeps the output's name, in
// the operand orders exporters write; other constants, or inner values with other uses, are left
// alone; the fused graph computes the same values.
#include "passes/fusion/fuse_gelu.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/verifier.h"
#include "tests/unit/ir_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::CountOp;
using ::a8::testing::ParseOrFail;
using ::a8::testing::RunPass;

// ((x * (erf(x / sqrt2) + 1)) * 0.5) on an x of `type`, with the given divisor and half
// constants; `more_outputs` (lines "  output %name\n") adds graph outputs after y.
std::string BertGelu(const std::string& sqrt2, const std::string& half,
                     const std::string& type = "f32[2,4]", const std::string& more_outputs = "") {
  return fmt::format(R"(graph @t opsets {{"" = 20}} {{
  input %x : {type}
  const %sqrt2 : f32[] = [{sqrt2}]
  const %one : f32[] = [1.0]
  const %half : f32[] = [{half}]
  %a1 = Div(%x, %sqrt2) : {type}
  %a2 = Erf(%a1) : {type}
  %a3 = Add(%a2, %one) : {type}
  %a4 = Mul(%x, %a3) : {type}
  %y = Mul(%a4, %half) : {type}
  output %y
{more_outputs}}})",
                     fmt::arg("type", type), fmt::arg("sqrt2", sqrt2), fmt::arg("half", half),
                     fmt::arg("more_outputs", more_outputs));
}

TEST(FuseGeluTest, BertsFormBecomesOneGeluUnderTheOutputsName) {
  auto g = ParseOrFail(BertGelu("1.4142135", "0.5"));
  ASSERT_NE(g, nullptr);
  FuseGelu pass;
  EXPECT_TRUE(RunPass(pass, *g));
  EXPECT_EQ(CountOp(*g, "Gelu"), 1);
  EXPECT_EQ(CountOp(*g, "Erf"), 0);
  EXPECT_EQ(CountOp(*g, "Mul"), 0);
  const Node* gelu = g->FindValue("y")->producer();
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->op(), "Gelu");
  EXPECT_EQ(gelu->input(0), g->FindValue("x"));
  EXPECT_EQ(gelu->GetString("approximate", "none"), "none");
  EXPECT_TRUE(Verify(*g).ok());
  EXPECT_FALSE(*FuseGelu().Run(*g));
}

TEST(FuseGeluTest, TheReciprocalFormWithOperandsSwappedFusesToo) {
  auto g = ParseOrFail(R"(graph @t opsets {"" = 20} {
  input %x : f32[3]
  const %rsqrt2 : f32[] = [0.70710678]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %b1 = Mul(%rsqrt2, %x) : f32[3]
  %b2 = Erf(%b1) : f32[3]
  %b3 = Add(%one, %b2) : f32[3]
  %b4 = Mul(%half, %b3) : f32[3]
  %y = Mul(%x, %b4) : f32[3]
  output %y
})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(RunPass(FuseGelu(), *g));
  EXPECT_EQ(g->FindValue("y")->producer()->op(), "Gelu");
}

TEST(FuseGeluTest, OtherConstantsAreNotGelu) {
  for (auto [sqrt2, half] :
       {std::pair<const char*, const char*>{"1.5", "0.5"}, {"1.4142135", "3.0"}}) {
    auto g = ParseOrFail(BertGelu(sqrt2, half));
    ASSERT_NE(g, nullptr);
    EXPECT_FALSE(RunPass(FuseGelu(), *g)) << sqrt2 << " " << half;
    EXPECT_EQ(CountOp(*g, "Gelu"), 0);
  }
}

TEST(FuseGeluTest, AnInnerValueWithAnotherUseIsLeftAlone) {
  auto g = ParseOrFail(BertGelu("1.4142135", "0.5", "f32[3]", "  output %a2\n"));
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(RunPass(FuseGelu(), *g));
  EXPECT_EQ(CountOp(*g, "Erf"), 1);
}

}  // namespace
}  // namespace a8

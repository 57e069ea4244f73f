// ScatterND, ScatterElements and TopK (compiler/ir/op_table_scatter.cc): the shape rules and the
// gradient rules (passes/autodiff/grad_rules_scatter.cc) against central finite differences. The
// kernels are tested in device_scatter_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "passes/autodiff/autodiff.h"
#include "tests/unit/grad_check_util.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8::shape_test {
namespace {

using Dims = std::vector<int64_t>;

class ScatterShapeTest : public ShapeRulesFixture {};

TEST_F(ScatterShapeTest, OutputDims) {
  EXPECT_EQ(One("ScatterND", {In(F32({4, 4, 4})), In(I64({2, 1})), In(F32({2, 4, 4}))}),
            F32({4, 4, 4}));
  EXPECT_EQ(One("ScatterND", {In(F32({8})), In(I64({4, 1})), In(F32({4}))},
                {{"reduction", Attribute("mul")}}),
            F32({8}));
  EXPECT_EQ(One("ScatterElements", {In(F32({3, 3})), In(I64({2, 3})), In(F32({2, 3}))},
                {{"axis", Attribute(int64_t{-2})}}),
            F32({3, 3}));
  auto r = Infer("TopK", {In(F32({3, 4})), Ints({2})}, {{"axis", Attribute(int64_t{1})}}, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], F32({3, 2}));
  EXPECT_EQ((*r)[1], I64({3, 2}));
}

TEST_F(ScatterShapeTest, BadShapesNameTheField) {
  auto err = [&](Status s, const std::string& want) {
    ASSERT_FALSE(s.ok()) << want;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  };
  err(Error("ScatterND", {In(F32({4, 4})), In(I64({2, 1})), In(F32({2, 3}))}),
      "input 'updates' f32[2,3] must have dims [2,4]");
  err(Error("ScatterND", {In(F32({4})), In(I64({2, 2})), In(F32({2}))}),
      "the last dim of 'indices' [2,2] must be in [1, 1]");
  err(Error("ScatterND", {In(F32({4})), In(I64({2, 1})), In(F32({2}))},
            {{"reduction", Attribute("sum")}}),
      "attribute 'reduction' 'sum' must be none, add, mul, max or min");
  err(Error("ScatterElements", {In(F32({3, 3})), In(I64({2, 4})), In(F32({2, 4}))}),
      "input 'indices' [2,4] exceeds data [3,3] in dim 1");
  err(Error("ScatterElements", {In(F32({3, 3})), In(F32({2, 3})), In(F32({2, 3}))}),
      "input 'indices' must be i64 or i32");
  err(Error("TopK", {In(F32({3, 4})), Ints({5})}, {}, 2), "input 'K' 5 must be in [0, 4]");
  err(Error("TopK", {In(F32({3, 4})), In(I64({1}))}, {}, 2), "input 'K'");
  err(Error("TopK", {In(F32({3, 4})), Ints({2})}, {{"k", Attribute(int64_t{2})}}, 2),
      "attribute 'k' belongs to TopK-1");
}

testing::GradCheckInput Fixed(Dims dims, std::vector<double> v) {
  testing::GradCheckInput in;
  in.type = {DType::kI64, std::move(dims)};
  in.values = std::move(v);
  in.differentiable = false;
  return in;
}
testing::GradCheckInput X(Dims dims) {
  testing::GradCheckInput in;
  in.type = {DType::kF64, std::move(dims)};
  return in;
}

TEST(ScatterGradCheckTest, ScatterNDFiniteDifferences) {
  testing::GradCheckCase c;
  c.op = "ScatterND";
  // Distinct tuples (one negative) for 'none'; repeats are exact for 'add'.
  c.inputs = {X({4, 3}), Fixed({2, 1}, {-1, 1}), X({2, 3})};
  testing::ExpectGradientsMatch(c);
  c.inputs = {X({3, 4}), Fixed({3, 2}, {0, 1, 2, -1, 1, 1}), X({3})};
  testing::ExpectGradientsMatch(c);
  c.attrs = {{"reduction", Attribute("add")}};
  c.inputs = {X({3, 4}), Fixed({4, 2}, {0, 1, 2, -1, 0, 1, 1, 1}), X({4})};
  testing::ExpectGradientsMatch(c);
}

TEST(ScatterGradCheckTest, ScatterElementsFiniteDifferences) {
  testing::GradCheckCase c;
  c.op = "ScatterElements";
  c.attrs = {{"axis", Attribute(int64_t{1})}};
  c.inputs = {X({3, 4}), Fixed({2, 2}, {3, 0, -1, 2}), X({2, 2})};
  testing::ExpectGradientsMatch(c);
  c.attrs = {{"axis", Attribute(int64_t{0})}, {"reduction", Attribute("add")}};
  c.inputs = {X({3, 4}), Fixed({4, 2}, {0, 1, 0, 2, -1, 1, 2, 2}), X({4, 2})};
  testing::ExpectGradientsMatch(c);
}

TEST(ScatterGradCheckTest, TopKFiniteDifferences) {
  testing::GradCheckCase c;
  c.op = "TopK";
  c.num_outputs = 2;
  testing::GradCheckInput k;
  k.type = {DType::kI64, {1}};
  k.values = {2};
  k.constant = true;
  c.inputs = {X({3, 5}), k};
  testing::ExpectGradientsMatch(c);
  c.attrs = {{"axis", Attribute(int64_t{0})}, {"largest", Attribute(int64_t{0})}};
  testing::ExpectGradientsMatch(c);
}

// Reductions mul/max/min have no rule: a loss that depends on data or updates through them is an
// error naming the node and the reduction.
TEST(ScatterGradCheckTest, OtherReductionsAreNotDifferentiable) {
  for (const char* red : {"mul", "max", "min"}) {
    for (const char* op : {"ScatterND", "ScatterElements"}) {
      const std::string idx = std::string(op) == "ScatterND" ? "i64[2,1]" : "i64[2,3]";
      auto g = ParseIr(fmt::format(R"(graph @t {{
  input %x : f32[4,3]
  input %i : {}
  input %u : {}
  %y = {}(%x, %i, %u) {{reduction="{}"}} : f32[4,3]
  %l = ReduceSum(%y) {{keepdims=0}} : f32[]
  output %l
}})",
                                   idx, "f32[2,3]", op, red),
                       "t.a8ir");
      ASSERT_TRUE(g.ok()) << g.status().message();
      auto grads = BuildGradients(**g, (*g)->FindValue("l"), {(*g)->FindValue("u")});
      ASSERT_FALSE(grads.ok()) << op << " " << red;
      const std::string& msg = grads.status().message();
      EXPECT_NE(msg.find(fmt::format("{} with reduction '{}' is not differentiable", op, red)),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find(fmt::format("({})", op)), std::string::npos) << msg;  // node.Where()
    }
  }
}

}  // namespace
}  // namespace a8::shape_test

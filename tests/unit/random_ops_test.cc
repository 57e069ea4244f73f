// The random ops in the op table (compiler/ir/op_table_random.cc): their shape rules with ONNX's
// dtype and shape attributes, errors naming the field, and their traits (random, not
// differentiable: their inputs get no gradient, their dtype kept in every precision mode). Their
// kernel: device_random_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "passes/autodiff/grad_rule.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;
using shape_test::T;

class RandomShapeTest : public shape_test::ShapeRulesFixture {};

TEST_F(RandomShapeTest, OutputTypes) {
  const Attribute shape = std::vector<int64_t>{2, 0, 3};
  EXPECT_EQ(One("RandomUniform", {}, {{"shape", shape}}), F32({2, 0, 3}));
  EXPECT_EQ(One("RandomNormal", {}, {{"shape", shape}, {"dtype", 11}}), T(DType::kF64, {2, 0, 3}));
  EXPECT_EQ(One("RandomUniformLike", {In(T(DType::kF16, {4, 5}))}), T(DType::kF16, {4, 5}));
  EXPECT_EQ(One("RandomNormalLike", {In(T(DType::kI64, {4}))}, {{"dtype", 16}}),
            T(DType::kBF16, {4}));
  EXPECT_EQ(One("Bernoulli", {In(T(DType::kF64, {7}))}), T(DType::kF64, {7}));
  EXPECT_EQ(One("Bernoulli", {In(F32({7}))}, {{"dtype", 9}}), T(DType::kBool, {7}));
  EXPECT_EQ(One("Bernoulli", {In(F32({7}))}, {{"dtype", 6}}), T(DType::kI32, {7}));
}

TEST_F(RandomShapeTest, BadNodesNameTheField) {
  auto expect = [](const Status& s, const std::string& what) {
    ASSERT_FALSE(s.ok()) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  };
  expect(Error("RandomUniform", {}, {{"shape", std::vector<int64_t>{2, -1}}}),
         "attribute 'shape' [2,-1] has a negative dim");
  expect(Error("RandomUniform", {}, {{"shape", std::vector<int64_t>{2}}, {"dtype", 7}}),
         "the output dtype i64 must be a float type (attribute 'dtype')");
  expect(Error("RandomNormal", {}, {}), "shape");
  expect(Error("RandomUniform", {}, {{"shape", std::vector<int64_t>{2}}, {"low", 1.0f}}),
         "attribute 'low' 1 must be below attribute 'high' 1");
  expect(Error("RandomUniformLike", {In(F32({3}))}, {{"low", 2.0f}, {"high", -1.0f}}),
         "attribute 'low' 2 must be below attribute 'high' -1");
  expect(Error("RandomUniformLike", {In(T(DType::kI32, {3}))}), "give attribute 'dtype'");
  expect(Error("Bernoulli", {In(T(DType::kI32, {3}))}), "input 'input'");
  expect(Error("Bernoulli", {In(F32({3}))}, {{"dtype", 12345}}), "attribute 'dtype'");
}

TEST(RandomOpTableTest, RandomNotDifferentiableAndKeepTheirDType) {
  for (const char* op :
       {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli"}) {
    const OpDef* def = FindOp("", op);
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(def->random) << op;
    EXPECT_EQ(def->gradient, GradDecision::kNone) << op;
    EXPECT_EQ(def->precision, OpPrecisionClass::kNone) << op;
    // Autodiff knows them as not differentiable (a loss may depend on them).
    EXPECT_EQ(FindGradRule(op), kNoGradient) << op;
  }
}

}  // namespace
}  // namespace a8

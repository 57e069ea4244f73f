// Det (compiler/ir/op_table_linalg.cc): the shape rules and their errors, and Det's gradient
// rule (passes/autodiff/grad_rules_linalg.cc, a8.DetGrad) against central finite differences.
// The kernels are tested in device_linalg_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/grad_check_util.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;
using shape_test::I64;

class DetShapeTest : public shape_test::ShapeRulesFixture {};

TEST_F(DetShapeTest, OutputDims) {
  EXPECT_EQ(One("Det", {In(F32({3, 3}))}), F32({}));
  EXPECT_EQ(One("Det", {In(F32({2, 5, 4, 4}))}), F32({2, 5}));
  auto grad = Infer("DetGrad", {In(F32({2})), In(F32({2, 3, 3}))}, {}, 1, 1, "a8");
  ASSERT_TRUE(grad.ok()) << grad.status().message();
  EXPECT_EQ((*grad)[0], F32({2, 3, 3}));
  EXPECT_FALSE(Infer("DetGrad", {In(F32({3})), In(F32({2, 3, 3}))}, {}, 1, 1, "a8").ok());
}

TEST_F(DetShapeTest, BadInputsNameTheField) {
  auto err = [&](Status s, const std::string& want) {
    ASSERT_FALSE(s.ok()) << want;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  };
  err(Error("Det", {In(F32({2, 3, 4}))}),
      "input 'X' must be [..., n, n] with n >= 1, got f32[2,3,4]");
  err(Error("Det", {In(F32({3}))}), "input 'X' must be [..., n, n]");
  err(Error("Det", {In(I64({3, 3}))}), "'X'");
}

TEST(DetGradCheckTest, FiniteDifferences) {
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{1, 1}, {2, 2}, {3, 3, 3}, {2, 1, 4, 4}, {5, 5}}) {
    SCOPED_TRACE(dims.back());
    testing::GradCheckCase c;
    c.op = "Det";
    c.inputs = {testing::Input(DType::kF64, dims)};
    c.rtol = 1e-6;
    c.atol = 1e-8;
    testing::ExpectGradientsMatch(c);
  }
}

// At a singular matrix the gradient is the cofactor matrix, still the derivative (det is a
// polynomial): finite differences agree there too.
TEST(DetGradCheckTest, FiniteDifferencesAtASingularMatrix) {
  testing::GradCheckCase c;
  c.op = "Det";
  c.inputs = {testing::Input(DType::kF64, {3, 3}, {1, 2, 3, 4, 5, 6, 5, 7, 9})};
  c.rtol = 1e-6;
  c.atol = 1e-8;
  testing::ExpectGradientsMatch(c);
}

}  // namespace
}  // namespace a8

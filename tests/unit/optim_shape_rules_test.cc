// The shape rules of the optimizer ops (compiler/ir/op_table_optim.cc): their output types and
// their errors.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;
using shape_test::I64;
using shape_test::T;

class OptimShapeRulesTest : public shape_test::ShapeRulesFixture {
 protected:
  StatusOr<std::vector<TensorType>> A8(const std::string& op, std::vector<Value*> inputs,
                                       std::map<std::string, Attribute> attrs, int outputs) {
    return Infer(op, std::move(inputs), std::move(attrs), outputs, 1, "a8");
  }
};

TEST_F(OptimShapeRulesTest, TrainControl) {
  Value* step = In(I64({}));
  Value* updates = In(F32({}));
  auto out = A8("TrainControl", {step, updates, In(F32({}))}, {{"lr", Attribute(0.1f)}}, 3);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0], F32({5}));
  EXPECT_EQ((*out)[1], I64({}));
  EXPECT_EQ((*out)[2], F32({}));
  EXPECT_FALSE(A8("TrainControl", {step, updates},
                  {{"lr", Attribute(0.1f)}, {"schedule", Attribute("linear")}}, 3)
                   .ok());
  EXPECT_FALSE(A8("TrainControl", {step, updates},
                  {{"lr", Attribute(0.1f)}, {"accumulate", Attribute(0)}}, 3)
                   .ok());
  EXPECT_FALSE(A8("TrainControl", {updates, updates}, {{"lr", Attribute(0.1f)}}, 3).ok());
  EXPECT_FALSE(A8("TrainControl", {step, updates}, {}, 3).ok());  // lr is required
}

TEST_F(OptimShapeRulesTest, GlobalNormSqAndGradAccumulate) {
  auto out = A8("GlobalNormSq", {In(F32({3, 4})), In(F32({7}))}, {}, 1);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0], F32({}));
  EXPECT_FALSE(A8("GlobalNormSq", {In(F32({3})), In(T(DType::kF16, {3}))}, {}, 1).ok());
  EXPECT_FALSE(A8("GlobalNormSq", {In(I64({3}))}, {}, 1).ok());

  out = A8("GradAccumulate", {In(F32({2, 3})), In(T(DType::kF16, {2, 3})), In(I64({}))},
           {{"accumulate", Attribute(4)}}, 1);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0], F32({2, 3}));
  EXPECT_FALSE(A8("GradAccumulate", {In(F32({2, 3})), In(F32({3, 2})), In(I64({}))}, {}, 1).ok());
}

TEST_F(OptimShapeRulesTest, Updates) {
  Value* p = In(F32({4, 5}));
  Value* g = In(T(DType::kBF16, {4, 5}));
  Value* ctl = In(F32({5}));
  auto out = A8("SgdUpdate", {p, g, ctl}, {}, 1);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0], F32({4, 5}));
  out = A8("SgdUpdate", {p, g, ctl, In(F32({4, 5}))}, {{"momentum", Attribute(0.9f)}}, 2);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[1], F32({4, 5}));
  EXPECT_FALSE(A8("SgdUpdate", {p, g, ctl}, {{"momentum", Attribute(0.9f)}}, 1).ok());
  EXPECT_FALSE(A8("SgdUpdate", {p, g, ctl, In(F32({4, 5}))}, {}, 1).ok());
  EXPECT_FALSE(A8("SgdUpdate", {p, g, In(F32({4}))}, {}, 1).ok());

  out = A8("AdamUpdate", {p, g, ctl, In(F32({4, 5})), In(F32({4, 5}))}, {}, 3);
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (const TensorType& t : *out) EXPECT_EQ(t, F32({4, 5}));
  EXPECT_FALSE(A8("AdamUpdate", {p, g, ctl, In(F32({4, 5})), In(F32({5, 4}))}, {}, 3).ok());
  EXPECT_FALSE(A8("AdamUpdate", {p, In(F32({4})), ctl, In(F32({4, 5})), p}, {}, 3).ok());
}

}  // namespace
}  // namespace a8

// MaxUnpool and RoiAlign (compiler/ir/op_table_roi_pool.cc): the shape rules and their errors,
// and the gradient rules (passes/autodiff/grad_rules_roi_pool.cc, a8.MaxUnpoolGrad and
// a8.RoiAlignGrad) against central finite differences; RoiAlign's mode max is an error naming
// the node. The kernels are tested in device_roi_pool_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "passes/autodiff/autodiff.h"
#include "tests/unit/grad_check_util.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8::shape_test {
namespace {

using Dims = std::vector<int64_t>;

class RoiPoolShapeTest : public ShapeRulesFixture {};

TEST_F(RoiPoolShapeTest, OutputDims) {
  const std::map<std::string, Attribute> k2s2 = {{"kernel_shape", Attribute(Dims{2, 2})},
                                                 {"strides", Attribute(Dims{2, 2})}};
  EXPECT_EQ(One("MaxUnpool", {In(F32({1, 3, 2, 3})), In(I64({1, 3, 2, 3}))}, k2s2),
            F32({1, 3, 4, 6}));
  EXPECT_EQ(
      One("MaxUnpool", {In(F32({1, 3, 2, 3})), In(I64({1, 3, 2, 3})), Ints({1, 3, 5, 7})}, k2s2),
      F32({1, 3, 5, 7}));
  EXPECT_EQ(One("MaxUnpool", {In(F32({2, 1, 4})), In(I64({2, 1, 4}))},
                {{"kernel_shape", Attribute(Dims{3})}, {"pads", Attribute(Dims{1, 0})}}),
            F32({2, 1, 5}));
  EXPECT_EQ(One("RoiAlign", {In(F32({2, 3, 8, 8})), In(F32({5, 4})), In(I64({5}))},
                {{"output_height", Attribute(2)}, {"output_width", Attribute(3)}}),
            F32({5, 3, 2, 3}));
}

TEST_F(RoiPoolShapeTest, BadInputsNameTheField) {
  auto err = [&](Status s, const std::string& want) {
    ASSERT_FALSE(s.ok()) << want;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  };
  const std::map<std::string, Attribute> k2 = {{"kernel_shape", Attribute(Dims{2, 2})}};
  err(Error("MaxUnpool", {In(F32({1, 3, 2, 3})), In(I64({1, 3, 2, 2}))}, k2),
      "input 'I' must be i64[1,3,2,3]");
  err(Error("MaxUnpool", {In(F32({1, 3, 2, 3})), In(I64({1, 3, 2, 3})), Ints({1, 3, 2, 2})}, k2),
      "input 'output_shape' [1,3,2,2] must be [N, C, ...] at least the inferred [1,3,3,4]");
  err(Error("MaxUnpool", {In(F32({1, 3, 2, 3})), In(I64({1, 3, 2, 3})), In(I64({4}))}, k2),
      "input 'output_shape' must be a constant (a800c needs static shapes); freeze graph input");
  err(Error("MaxUnpool", {In(F32({1, 3, 2, 3})), In(I64({1, 3, 2, 3}))},
            {{"kernel_shape", Attribute(Dims{2})}}),
      "attribute 'kernel_shape' [2] must have 2 dims");
  err(Error("RoiAlign", {In(F32({2, 3, 8, 8})), In(F32({5, 3})), In(I64({5}))}),
      "input 'rois' must be f32[num_rois, 4]");
  err(Error("RoiAlign", {In(F32({2, 3, 8, 8})), In(F32({5, 4})), In(I64({4}))}),
      "input 'batch_indices' must be i64[5]");
  err(Error("RoiAlign", {In(F32({2, 3, 8, 8})), In(F32({5, 4})), In(I64({5}))},
            {{"mode", Attribute("min")}}),
      "attribute 'mode' 'min' must be avg or max");
  err(Error("RoiAlign", {In(F32({2, 3, 8, 8})), In(F32({5, 4})), In(I64({5}))},
            {{"coordinate_transformation_mode", Attribute("asymmetric")}}),
      "attribute 'coordinate_transformation_mode' 'asymmetric'");
}

TEST(MaxUnpoolGradCheckTest, FiniteDifferences) {
  // 2x2 stride-2 windows of a 4 x 6 plane, one tap each; channel 1's second index repeats its
  // first (that element is overwritten: its gradient is 0).
  testing::GradCheckCase c;
  c.op = "MaxUnpool";
  c.attrs = {{"kernel_shape", Attribute(Dims{2, 2})}, {"strides", Attribute(Dims{2, 2})}};
  c.inputs = {
      testing::Input(DType::kF64, {1, 2, 2, 3}),
      testing::Fixed(DType::kI64, {1, 2, 2, 3}, {0, 3, 4, 13, 14, 23, 24, 24, 28, 43, 38, 47}),
      testing::Const(DType::kI64, {4}, {1, 2, 5, 7})};
  testing::ExpectGradientsMatch(c);
}

TEST(RoiAlignGradCheckTest, FiniteDifferences) {
  for (const char* ctm : {"half_pixel", "output_half_pixel"}) {
    for (int64_t ratio : {0, 2}) {
      SCOPED_TRACE(std::string(ctm) + " " + std::to_string(ratio));
      testing::GradCheckCase c;
      c.op = "RoiAlign";
      c.attrs = {{"coordinate_transformation_mode", Attribute(ctm)},
                 {"output_height", Attribute(2)},
                 {"output_width", Attribute(3)},
                 {"sampling_ratio", Attribute(ratio)},
                 {"spatial_scale", Attribute(0.5f)}};
      c.inputs = {testing::Input(DType::kF64, {2, 2, 5, 6}),
                  testing::Fixed(DType::kF64, {3, 4},
                                 {1.1, 0.7, 8.3, 6.9, -1.5, 2.2, 4.4, 11.3, 3.3, 3.1, 12.9, 9.7}),
                  testing::Fixed(DType::kI64, {3}, {1, 0, 1})};
      c.rtol = 1e-6;
      c.atol = 1e-8;
      testing::ExpectGradientsMatch(c);
    }
  }
}

TEST(RoiAlignGradCheckTest, ModeMaxIsAnErrorNamingTheNode) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 1, 4, 4}));
  Value* rois = g.AddInput("rois", F32({1, 4}));
  Value* bi = g.AddInput("bi", I64({1}));
  Node* n = g.AddNode("RoiAlign", "", {x, rois, bi}, {{"y", F32({1, 1, 1, 1})}},
                      {{"mode", Attribute("max")}}, "roi_max");
  n->set_version(16);
  StatusOr<std::vector<Value*>> r = BuildGradients(g, n->output(0), {x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("roi_max"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("mode 'max' is not differentiable"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace a8::shape_test

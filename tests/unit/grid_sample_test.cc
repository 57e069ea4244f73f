// GridSample, Col2Im and DeformConv (compiler/ir/op_table_grid_sample.cc): the shape rules, and
// GridSample's gradient rule (passes/autodiff/grad_rules_grid_sample.cc, a8.GridSampleGrad)
// against central finite differences in every mode and padding. The kernels are tested in
// device_grid_sample_test.cc.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/unit/grad_check_util.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using Dims = std::vector<int64_t>;
using shape_test::F32;

class GridSampleShapeTest : public shape_test::ShapeRulesFixture {};

TEST_F(GridSampleShapeTest, OutputDims) {
  EXPECT_EQ(One("GridSample", {In(F32({2, 3, 5, 6})), In(F32({2, 4, 7, 2}))}), F32({2, 3, 4, 7}));
  EXPECT_EQ(One("GridSample", {In(F32({1, 2, 3, 4, 5})), In(F32({1, 6, 7, 8, 3}))},
                {{"mode", Attribute("nearest")}}),
            F32({1, 2, 6, 7, 8}));
  EXPECT_EQ(One("Col2Im", {In(F32({1, 5, 5})), Ints({5, 5}), Ints({1, 5})}), F32({1, 1, 5, 5}));
  EXPECT_EQ(One("Col2Im", {In(F32({1, 4, 6})), Ints({4, 5}), Ints({2, 2})},
                {{"strides", Attribute(Dims{2, 2})}, {"pads", Attribute(Dims{0, 1, 0, 0})}}),
            F32({1, 1, 4, 5}));
  EXPECT_EQ(
      One("DeformConv", {In(F32({1, 2, 5, 5})), In(F32({4, 2, 3, 3})), In(F32({1, 18, 3, 3}))}),
      F32({1, 4, 3, 3}));
}

TEST_F(GridSampleShapeTest, BadInputsNameTheField) {
  auto err = [&](Status s, const std::string& want) {
    ASSERT_FALSE(s.ok()) << want;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  };
  err(Error("GridSample", {In(F32({2, 3, 5, 6})), In(F32({2, 4, 7, 3}))}), "input 'grid'");
  err(Error("GridSample", {In(F32({2, 3, 5, 6})), In(F32({2, 4, 7, 2}))},
            {{"mode", Attribute("bilinear")}}),
      "attribute 'mode' 'bilinear' must be linear, nearest or cubic");
  err(Error("GridSample", {In(F32({2, 3, 5, 6})), In(F32({2, 4, 7, 2}))},
            {{"padding_mode", Attribute("wrap")}}),
      "attribute 'padding_mode' 'wrap'");
  err(Error("GridSample", {In(F32({2, 3, 1, 2, 3, 4})), In(F32({2, 1, 1, 1, 1, 4}))}),
      "spatial dims");
  err(Error("Col2Im", {In(F32({1, 5, 24})), Ints({5, 5}), Ints({1, 5})}),
      "input 'input' f32[1,5,24] must be [N, C * 5, 5]");
  err(Error("Col2Im", {In(F32({1, 5, 5})), Ints({5, 5}), Ints({1})}), "one length");
  err(Error("DeformConv", {In(F32({1, 2, 5, 5})), In(F32({4, 2, 3, 3})), In(F32({1, 9, 3, 3}))}),
      "input 'offset' f32[1,9,3,3] must be [1,18,3,3]");
  err(Error("DeformConv", {In(F32({1, 3, 5, 5})), In(F32({4, 2, 3, 3})), In(F32({1, 18, 3, 3}))}),
      "do not match group 1");
}

// f64 inputs: X in [-1, 1], the grid in [-lim, lim] (beyond 1: points outside the image, where
// border clamps and reflection folds).
testing::GradCheckInput Uniform(Dims dims, double lim, uint64_t seed) {
  testing::GradCheckInput in = testing::Input(DType::kF64, dims);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(-lim, lim);
  int64_t n = 1;
  for (int64_t v : dims) n *= v;
  in.values.resize(static_cast<size_t>(n));
  for (double& v : in.values) v = d(rng);
  return in;
}

TEST(GridSampleGradCheckTest, EveryModeAndPaddingFiniteDifferences) {
  for (const char* mode : {"linear", "cubic", "nearest"}) {
    for (const char* pad : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) {
        SCOPED_TRACE(std::string(mode) + " " + pad + " align " + std::to_string(align));
        testing::GradCheckCase c;
        c.op = "GridSample";
        c.attrs = {{"mode", Attribute(mode)},
                   {"padding_mode", Attribute(pad)},
                   {"align_corners", Attribute(align)}};
        c.inputs = {Uniform({2, 2, 3, 4}, 1, 3), Uniform({2, 3, 2, 2}, 1.4, 4)};
        c.rtol = 1e-5;
        c.atol = 1e-6;
        testing::ExpectGradientsMatch(c);
      }
    }
  }
}

TEST(GridSampleGradCheckTest, VolumetricFiniteDifferences) {
  for (const char* mode : {"linear", "cubic"}) {
    SCOPED_TRACE(mode);
    testing::GradCheckCase c;
    c.op = "GridSample";
    c.attrs = {{"mode", Attribute(mode)}, {"padding_mode", Attribute("border")}};
    c.inputs = {Uniform({1, 2, 3, 3, 4}, 1, 5), Uniform({1, 2, 2, 2, 3}, 1.2, 6)};
    c.rtol = 1e-5;
    c.atol = 1e-6;
    testing::ExpectGradientsMatch(c);
  }
}

TEST(Col2ImGradCheckTest, FiniteDifferences) {
  testing::GradCheckCase c;
  c.op = "Col2Im";
  // Overlapping blocks (stride 1, dilation 2 along H) and padding, 2-D; then 1-D strided.
  c.attrs = {{"dilations", Attribute(Dims{2, 1})},
             {"pads", Attribute(Dims{1, 0, 0, 1})},
             {"strides", Attribute(Dims{1, 2})}};
  // image 4x5, block 2x2: H (4 + 1 - 3) / 1 + 1 = 3, W (5 + 1 - 2) / 2 + 1 = 3 positions.
  c.inputs = {Uniform({2, 3 * 4, 9}, 1, 7), testing::Const(DType::kI64, {2}, {4, 5}),
              testing::Const(DType::kI64, {2}, {2, 2})};
  testing::ExpectGradientsMatch(c);
  c.attrs = {{"strides", Attribute(Dims{2})}};
  c.inputs = {Uniform({1, 2 * 3, 3}, 1, 8), testing::Const(DType::kI64, {1}, {7}),
              testing::Const(DType::kI64, {1}, {3})};
  testing::ExpectGradientsMatch(c);
}

TEST(DeformConvGradCheckTest, FiniteDifferences) {
  testing::GradCheckCase c;
  c.op = "DeformConv";
  // Two groups, two offset groups, stride, padding and dilation; offsets within +-1.5 pixels
  // (some taps outside the image), a mask and a bias; then no mask and no bias.
  c.attrs = {{"group", Attribute(int64_t{2})},
             {"offset_group", Attribute(int64_t{2})},
             {"strides", Attribute(Dims{1, 2})},
             {"pads", Attribute(Dims{1, 0, 1, 0})},
             {"dilations", Attribute(Dims{2, 1})}};
  // X [1, 4, 4, 5], W [2, 2, 2, 2]: oH (4 + 2 - 3) / 1 + 1 = 4, oW (5 - 2) / 2 + 1 = 2.
  c.inputs = {Uniform({1, 4, 4, 5}, 1, 11), Uniform({2, 2, 2, 2}, 1, 12),
              Uniform({1, 16, 4, 2}, 1.5, 13), Uniform({2}, 1, 14), Uniform({1, 8, 4, 2}, 1, 15)};
  c.rtol = 1e-5;
  c.atol = 1e-6;
  testing::ExpectGradientsMatch(c);
  c.attrs = {};
  c.inputs = {Uniform({2, 2, 3, 3}, 1, 16), Uniform({3, 2, 2, 2}, 1, 17),
              Uniform({2, 8, 2, 2}, 1.5, 18)};
  testing::ExpectGradientsMatch(c);
}

}  // namespace
}  // namespace a8

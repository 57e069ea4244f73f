// GatherND and a8.GatherNDGrad (compiler/ir/op_table_gather_nd.cc, kernels/device/gather_nd.h):
// the shape rules, the forward kernel against a direct reference on the CPU backend (which runs
// the shared body through its host launch), cuda-emu against the CPU bit for bit, and the
// gradient rule against central finite differences.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"  // cpu::Cast, used by device_test_util.h
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/device_test_util.h"
#include "tests/unit/grad_check_util.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using B = plan::Buffer;
using testing::Bytes;
using Dims = std::vector<int64_t>;
using shape_test::F32;
using shape_test::I64;
using testing::PlanBuilder;

class GatherNDShapeTest : public shape_test::ShapeRulesFixture {};

TEST_F(GatherNDShapeTest, OutputDims) {
  // ONNX's examples: full tuples, slices, batch_dims = 1.
  EXPECT_EQ(One("GatherND", {In(F32({2, 2})), In(I64({2, 2}))}), F32({2}));
  EXPECT_EQ(One("GatherND", {In(F32({2, 2})), In(I64({2, 1}))}), F32({2, 2}));
  EXPECT_EQ(One("GatherND", {In(F32({2, 2, 2})), In(I64({2, 1, 2}))}), F32({2, 1, 2}));
  EXPECT_EQ(One("GatherND", {In(F32({2, 2, 2})), In(I64({2, 1}))}, {{"batch_dims", 1}}),
            F32({2, 2}));
  EXPECT_EQ(One("GatherND", {In(F32({2, 3, 4, 5})), In(I64({2, 6, 2}))}, {{"batch_dims", 1}}),
            F32({2, 6, 5}));
}

TEST_F(GatherNDShapeTest, BadShapesNameTheField) {
  auto r = Infer("GatherND", {In(F32({2, 2})), In(I64({2, 3}))});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the last dim of 'indices' [2,3] must be in [1, 2]"),
            std::string::npos)
      << r.status().message();
  r = Infer("GatherND", {In(F32({2, 2})), In(I64({3, 1}))}, {{"batch_dims", 1}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("batch dim 0 differs"), std::string::npos);
  r = Infer("GatherND", {In(F32({2, 2})), In(F32({2, 1}))});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'indices' must be i64 or i32"), std::string::npos);
  r = Infer("GatherND", {In(F32({2, 2})), In(I64({2, 1}))}, {{"batch_dims", 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("attribute 'batch_dims' 2 must be in [0, 2)"),
            std::string::npos);
  // The gradient: dy must be the forward output's dims.
  r = Infer("GatherNDGrad", {In(F32({2, 5})), In(I64({2, 6, 2}))},
            {{"batch_dims", 1}, {"shape", std::vector<int64_t>{2, 3, 4, 5}}}, 1, 1, "a8");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must have GatherND's output dims [2,6,5]"),
            std::string::npos)
      << r.status().message();
}

// data [2, 3, 4, 2] (values 0..47) at batch_dims 1, index tuples [2, 5, 2] (negative ones
// count from the end): y [2, 5, 2], computed directly.
TEST(GatherNDKernelTest, MatchesReferenceOnCpuAndEmuBitForBit) {
  std::vector<float> data(48);
  for (int i = 0; i < 48; ++i) data[i] = static_cast<float>(i) * 0.5f - 3.0f;
  const std::vector<int64_t> idx = {0, 0, 2,  3, -1, -1, 1, 2, 0, 3,    // batch 0
                                    1, 1, -3, 0, 2,  2,  0, 0, 1, -4};  // batch 1
  std::vector<float> want;
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t < 5; ++t) {
      int64_t i0 = idx[(b * 5 + t) * 2], i1 = idx[(b * 5 + t) * 2 + 1];
      if (i0 < 0) i0 += 3;
      if (i1 < 0) i1 += 4;
      for (int s = 0; s < 2; ++s) want.push_back(data[((b * 3 + i0) * 4 + i1) * 2 + s]);
    }
  }
  for (DType it : {DType::kI64, DType::kI32}) {
    PlanBuilder pb;
    const int x = pb.Buffer("x", DType::kF32, {2, 3, 4, 2}, B::INPUT);
    const int i = pb.Buffer("i", it, {2, 5, 2}, B::INPUT);
    const int y = pb.Buffer("y", DType::kF32, {2, 5, 2}, B::OUTPUT);
    PlanBuilder::Int(pb.Kernel("GatherND", {x, i}, {y}), "batch_dims", 1);
    std::map<std::string, std::vector<uint8_t>> in = {
        {"x", Bytes(data)},
        {"i",
         it == DType::kI64 ? Bytes(idx) : Bytes(std::vector<int32_t>(idx.begin(), idx.end()))}};
    PlanFile f = pb.Finish();
    auto got = testing::RunOn(f, MakeCpuBackend(), in);
    ASSERT_EQ(got["y"], Bytes(want));
    testing::ExpectEmuMatchesCpu(f, in, 0, 0);
  }
}

TEST(GatherNDKernelTest, GradientIsBitForBitOnEmu) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    PlanBuilder pb;
    const int dy = pb.Buffer("dy", t, {2, 7, 3}, B::INPUT);
    const int i = pb.Buffer("i", DType::kI64, {2, 7, 1}, B::INPUT);
    const int dx = pb.Buffer("dx", t, {2, 4, 3}, B::OUTPUT);
    plan::Kernel* k = pb.Kernel("a8.GatherNDGrad", {dy, i}, {dx});
    PlanBuilder::Int(k, "batch_dims", 1);
    PlanBuilder::Ints(k, "shape", {2, 4, 3});
    // Repeats and negative indices: several tuples add into one slice.
    const std::vector<int64_t> idx = {0, 3, -1, 0, 2, 2, -4, 1, 1, 1, 3, -2, 0, 2};
    testing::ExpectEmuMatchesCpu(pb.Finish(), {{"i", Bytes(idx)}}, 0, 0);
  }
}

TEST(GatherNDGradCheckTest, FiniteDifferences) {
  auto fixed = [](Dims dims, std::vector<double> v) {
    testing::GradCheckInput in;
    in.type = {DType::kI64, std::move(dims)};
    in.values = std::move(v);
    in.differentiable = false;
    return in;
  };
  auto x = [](Dims dims) {
    testing::GradCheckInput in;
    in.type = {DType::kF64, std::move(dims)};
    return in;
  };
  testing::GradCheckCase c;
  c.op = "GatherND";
  // Full tuples with a repeat and a negative index.
  c.inputs = {x({3, 4}), fixed({4, 2}, {0, 1, 2, -1, 0, 1, -3, 3})};
  testing::ExpectGradientsMatch(c);
  // Slices, batch_dims = 1.
  c.inputs = {x({2, 3, 4}), fixed({2, 3, 1}, {2, 0, 2, -1, 1, 1})};
  c.attrs = {{"batch_dims", Attribute(1)}};
  testing::ExpectGradientsMatch(c);
}

}  // namespace
}  // namespace a8

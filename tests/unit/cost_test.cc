// a800c-inspect --cost (runtime/inspect/cost.h): every catalog op has a cost rule, the FLOP counts
// of the matrix products and convolutions are exact, views cost nothing, and the roofline picks
// the bound that wins.
#include "runtime/inspect/cost.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/plan/kernel_catalog.h"
#include "kernels/common/unary_math.h"

namespace a8 {
namespace {

// A one-kernel plan: buffers 0..n-1 with the given dtypes and dims, kernel `op`(inputs) ->
// outputs.
struct CostPlanBuilder {
  plan::Plan plan;
  int Buffer(plan::DType dtype, std::vector<int64_t> dims) {
    plan::Buffer* b = plan.add_buffers();
    b->set_id(plan.buffers_size() - 1);
    b->set_name("b" + std::to_string(b->id()));
    b->mutable_type()->set_dtype(dtype);
    int64_t n = 1;
    for (int64_t d : dims) {
      b->mutable_type()->add_dims(d);
      n *= d;
    }
    b->set_bytes(static_cast<uint64_t>(n) * (dtype == plan::F16 ? 2 : 4));
    b->set_offset(static_cast<uint64_t>(b->id()) * 4096);
    b->set_alias_of(-1);
    return b->id();
  }
  plan::Kernel* Kernel(const std::string& op, std::vector<int> in, std::vector<int> out) {
    plan::Kernel* k = plan.add_kernels();
    k->set_op(op);
    k->set_name(op + ":sig");
    k->set_node("n" + std::to_string(plan.kernels_size()));
    for (int i : in) k->add_inputs(i);
    for (int o : out) k->add_outputs(o);
    return k;
  }
  // Kernel `op` on new buffers of `dtype`: an input for each of `in_dims`, then the output.
  plan::Kernel* KernelOnNewBuffers(const std::string& op, plan::DType dtype,
                                   const std::vector<std::vector<int64_t>>& in_dims,
                                   std::vector<int64_t> out_dims) {
    std::vector<int> in;
    for (const std::vector<int64_t>& dims : in_dims) in.push_back(Buffer(dtype, dims));
    const int out = Buffer(dtype, std::move(out_dims));
    return Kernel(op, std::move(in), {out});
  }
};

TEST(CostTest, EveryCatalogOpHasACostRule) {
  int ops = 0;
  for (const KernelPattern& row : AllKernelPatterns()) {
    EXPECT_TRUE(CostFamilyOf(row.op).has_value()) << "no cost rule for catalog op " << row.op;
    ++ops;
  }
  EXPECT_GT(ops, 100);
  EXPECT_FALSE(CostFamilyOf("NoSuchOp").has_value());
}

TEST(CostTest, UnaryFamiliesComeFromTheUnaryMathLists) {
  // A libm call (Cost 16 in unary_math.h) is transcendental unless the elementwise list claims
  // it; a few instructions (Cost 1) never are, whatever the op's name suggests.
  int transcendental = 0;
#define A8_X(Name, Types, Cost, Fused)                                 \
  if (Cost <= 1) {                                                     \
    EXPECT_EQ(CostFamilyOf(#Name), CostFamily::kElementwise) << #Name; \
  }                                                                    \
  transcendental += CostFamilyOf(#Name) == CostFamily::kTranscendental;
  A8_UNARY_OPS(A8_X)
#undef A8_X
#define A8_X(Name, Reads, Cost, Fused)                                              \
  if (Cost <= 1) {                                                                  \
    EXPECT_EQ(CostFamilyOf("a8." #Name "Grad"), CostFamily::kElementwise) << #Name; \
  }
  A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
  EXPECT_GT(transcendental, 20);
  for (const char* op :
       {"Exp", "Softplus", "Mish", "Atanh", "a8.SoftplusGrad", "a8.GeluGrad", "Pow"})
    EXPECT_EQ(CostFamilyOf(op), CostFamily::kTranscendental) << op;
  for (const char* op : {"a8.SigmoidGrad", "a8.TanhGrad", "Sqrt", "Relu"})
    EXPECT_EQ(CostFamilyOf(op), CostFamily::kElementwise) << op;
}

TEST(CostTest, MatMulIsTwiceTheMultiplyAdds) {
  CostPlanBuilder b;
  b.KernelOnNewBuffers("MatMul", plan::F16, {{3, 4, 8}, {8, 16}}, {3, 4, 16});
  auto c = EstimateKernelCost(b.plan, 0);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->family, CostFamily::kMatMul);
  EXPECT_EQ(c->dtype, DType::kF16);
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 3 * 4 * 16 * 8);
  EXPECT_DOUBLE_EQ(c->bytes, 2.0 * (96 + 128 + 192));
}

TEST(CostTest, GemmTransposedAReadsKFromTheFirstDim) {
  CostPlanBuilder b;
  plan::Attribute* attr =
      b.KernelOnNewBuffers("Gemm", plan::F32, {{5, 3}, {5, 7}}, {3, 7})->add_attrs();
  attr->set_name("transA");
  attr->set_i(1);
  auto c = EstimateKernelCost(b.plan, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 3 * 7 * 5);
}

TEST(CostTest, ConvCountsEveryOutputsDotProduct) {
  CostPlanBuilder b;
  b.KernelOnNewBuffers("Conv", plan::F32, {{2, 3, 8, 8}, {4, 3, 3, 3}}, {2, 4, 6, 6});
  auto c = EstimateKernelCost(b.plan, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * (2 * 4 * 6 * 6) * (3 * 3 * 3));
  // The filter gradient: each of dW's elements sums over N x OH x OW positions.
  CostPlanBuilder g;
  g.KernelOnNewBuffers("a8.ConvGradFilter", plan::F32, {{2, 4, 6, 6}, {2, 3, 8, 8}}, {4, 3, 3, 3});
  auto cg = EstimateKernelCost(g.plan, 0);
  ASSERT_TRUE(cg.ok());
  EXPECT_DOUBLE_EQ(cg->flops, c->flops);
  // a8.FusedConv: the Conv's, plus one operation per output for the residual Z and one for Relu
  // (input 2, the bias, absent).
  CostPlanBuilder f;
  int fx = f.Buffer(plan::F32, {2, 3, 8, 8}), fw = f.Buffer(plan::F32, {4, 3, 3, 3}),
      fz = f.Buffer(plan::F32, {2, 4, 6, 6}), fy = f.Buffer(plan::F32, {2, 4, 6, 6});
  plan::Kernel* k = f.Kernel("a8.FusedConv", {fx, fw, -1, fz}, {fy});
  plan::Attribute* act = k->add_attrs();
  act->set_name("activation");
  act->set_s("relu");
  auto cf = EstimateKernelCost(f.plan, 0);
  ASSERT_TRUE(cf.ok()) << cf.status().message();
  EXPECT_DOUBLE_EQ(cf->epilogue_flops, 2.0 * (2 * 4 * 6 * 6));
  EXPECT_DOUBLE_EQ(cf->flops, c->flops + cf->epilogue_flops);
}

TEST(CostTest, AViewOfItsInputMovesNoBytes) {
  CostPlanBuilder b;
  int x = b.Buffer(plan::F32, {4, 6}), y = b.Buffer(plan::F32, {24}), z = b.Buffer(plan::F32, {24});
  b.plan.mutable_buffers(y)->set_alias_of(x);
  b.Kernel("Reshape", {x}, {y});
  b.Kernel("Reshape", {x}, {z});  // a copy: its own bytes
  auto view = EstimateKernelCost(b.plan, 0);
  auto copy = EstimateKernelCost(b.plan, 1);
  ASSERT_TRUE(view.ok() && copy.ok());
  EXPECT_EQ(view->bytes, 0);
  EXPECT_EQ(copy->bytes, 2 * 96);
  EXPECT_EQ(view->flops, 0);
}

TEST(CostTest, UnknownOpIsAnErrorNamingTheKernel) {
  CostPlanBuilder b;
  int x = b.Buffer(plan::F32, {4});
  b.Kernel("Frobnicate", {x}, {x});
  auto c = EstimateKernelCost(b.plan, 0);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no cost rule for op 'Frobnicate'"), std::string::npos);
}

TEST(CostTest, RooflinePicksTheBoundThatWinsAndSumsTheStep) {
  CostPlanBuilder b;
  int a = b.Buffer(plan::F16, {4096, 4096}), w = b.Buffer(plan::F16, {4096, 4096}),
      y = b.Buffer(plan::F16, {4096, 4096}), z = b.Buffer(plan::F16, {4096, 4096});
  b.Kernel("MatMul", {a, w}, {y});
  b.Kernel("Add", {y, a}, {z});
  b.plan.set_arena_bytes(1000);
  b.plan.set_persistent_bytes(24);
  auto device = CostDevice("h200");
  ASSERT_TRUE(device.ok());
  auto p = PredictPlan(b.plan, *device);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_TRUE(p->kernels[0].compute_bound);
  EXPECT_FALSE(p->kernels[1].compute_bound);
  const double flops = 2.0 * 4096 * 4096 * 4096;
  EXPECT_NEAR(p->kernels[0].seconds, 2e-6 + flops / 989.5e12, 1e-9);
  EXPECT_NEAR(p->kernels[1].seconds, 2e-6 + 3 * 2.0 * 4096 * 4096 / 4.8e12, 1e-9);
  EXPECT_DOUBLE_EQ(p->step_s, p->kernels[0].seconds + p->kernels[1].seconds);
  EXPECT_EQ(p->peak_memory, 1024u);
  EXPECT_EQ(p->mfu_dtype, "f16");
  // The matmul is 99.9% of the FLOPs, but the Add's memory time and two launches count.
  EXPECT_GT(p->mfu, 0.8);
  EXPECT_LT(p->mfu, 1.0);
  // The A800 differs from the A100 only in NVLink.
  auto a800 = CostDevice("a800");
  auto a100 = CostDevice("a100");
  ASSERT_TRUE(a800.ok() && a100.ok());
  EXPECT_EQ(a800->tensor_f16, a100->tensor_f16);
  EXPECT_EQ(a800->memory_bw, a100->memory_bw);
  EXPECT_LT(a800->nvlink_bw, a100->nvlink_bw);
}

TEST(CostTest, UnknownDeviceNamesTheAcceptedOnes) {
  auto d = CostDevice("v100");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("a800, a100, h100, h200, cpu"), std::string::npos)
      << d.status().message();
}

TEST(CostTest, CpuCalibrationMeasuresPositivePeaks) {
  auto d = CalibrateCpu();
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_GT(d->fp32, 1e8);
  EXPECT_GT(d->tensor_f16, 1e8);
  EXPECT_GT(d->memory_bw, 1e8);
  EXPECT_GT(d->cache_bw, 1e8);
  EXPECT_GT(d->vector, 1e7);
  EXPECT_GT(d->overhead_s, 0);
}

}  // namespace
}  // namespace a8

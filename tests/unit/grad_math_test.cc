// The elementwise / shape gradient ops: CPU kernels against float64 references, their shape rules,
// and that every op is declared in the op table, the kernel catalog and the CPU registry. The
// gradient rules themselves are checked against finite differences in grad_math_rules_test.cc.
#include "kernels/cpu/grad_math.h"

#include <cmath>
#include <functional>
#include <string>

#include "compiler/plan/kernel_catalog.h"
#include "kernels/device/movement_setup.h"
#include "kernels/emu/run_on_host.h"
#include "passes/autodiff/grad_rule.h"
#include "runtime/cpu/registry.h"
#include "tests/unit/cpu_kernels_test_util.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using cpu::ActivationGradOp;
using cpu::Dims;
using namespace cpu::testing;  // Buffer, ExpectClose, MakeBuffer, RandomBuffer, ToleranceFor,
                               // Values

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct ActivationCase {
  ActivationGradOp op;
  bool from_output;                         // z is the forward output f(x)
  std::function<double(double)> forward;    // for cases whose z is the output
  std::function<double(double, double)> d;  // dx from (dy, z)
  cpu::ActivationGradAttrs attrs = {};
};

std::vector<ActivationCase> ActivationCases() {
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  const double alpha = double(0.3f), beta = double(0.4f);
  return {
      {ActivationGradOp::kRelu, true, [](double x) { return x > 0 ? x : 0; },
       [](double g, double y) { return y > 0 ? g : 0; }},
      {ActivationGradOp::kSigmoid, true, Sigmoid,
       [](double g, double y) { return g * y * (1 - y); }},
      {ActivationGradOp::kTanh, true, [](double x) { return std::tanh(x); },
       [](double g, double y) { return g * (1 - y * y); }},
      {ActivationGradOp::kLeakyRelu,
       false,
       nullptr,
       [=](double g, double x) { return x > 0 ? g : alpha * g; },
       {0.3f, 0.0f}},
      {ActivationGradOp::kElu,
       false,
       nullptr,
       [=](double g, double x) { return x > 0 ? g : alpha * std::exp(x) * g; },
       {0.3f, 0.0f}},
      {ActivationGradOp::kGelu, false, nullptr,
       [](double g, double x) {
         return g *
                (0.5 * std::erfc(-x / M_SQRT2) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI));
       }},
      {ActivationGradOp::kGeluTanh, false, nullptr,
       [=](double g, double x) {
         const double t = std::tanh(k * (x + c * x * x * x));
         return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x));
       }},
      {ActivationGradOp::kErf, false, nullptr,
       [](double g, double x) { return g * 2 / std::sqrt(M_PI) * std::exp(-x * x); }},
      {ActivationGradOp::kSoftplus, false, nullptr,
       [](double g, double x) { return g * Sigmoid(x); }},
      {ActivationGradOp::kHardSigmoid,
       false,
       nullptr,
       [=](double g, double x) {
         const double v = alpha * x + beta;
         return v > 0 && v < 1 ? alpha * g : 0;
       },
       {0.3f, 0.4f}},
  };
}

TEST(GradMathKernelTest, ActivationGradsMatchFloat64Reference) {
  std::mt19937_64 rng(7);
  for (const ActivationCase& c : ActivationCases()) {
    for (DType dt : cpu::testing::kFloatDTypes) {
      for (int64_t n : {1, 3, 17, 4099}) {
        SCOPED_TRACE(std::to_string(static_cast<int>(c.op)) + " " + cpu::ElemName(dt) +
                     " n=" + std::to_string(n));
        Buffer dy = RandomBuffer(dt, {n}, rng, -2, 2);
        Buffer z = RandomBuffer(dt, {n}, rng, -5, 5);
        if (c.from_output) {
          // The saved operand is an output of the forward op, rounded to the dtype.
          for (int64_t i = 0; i < n; ++i) {
            cpu::testing::SetValue(z, i, c.forward(cpu::testing::GetValue(z, i)));
          }
        }
        Buffer dx = MakeBuffer(dt, {n});
        ASSERT_TRUE(cpu::ActivationGrad(c.op, dt, n, dy.data(), z.data(), dx.data(), c.attrs).ok());
        std::vector<double> want(n), g = Values(dy), zv = Values(z);
        std::vector<double> mag(n);
        for (int64_t i = 0; i < n; ++i) {
          want[i] = c.d(g[i], zv[i]);
          // Every derivative here is at most ~1.2 in size: the error scales with |dy| (the terms of
          // Gelu's derivative cancel near its zero, so |want| would be too strict).
          mag[i] = std::fabs(g[i]);
        }
        ExpectClose(dx, want, ToleranceFor(dt), &mag);
      }
    }
  }
}

TEST(GradMathKernelTest, ActivationGradRejectsIntegers) {
  int64_t a[2] = {1, 2}, b[2] = {1, 2}, out[2];
  Status s = cpu::ActivationGrad(ActivationGradOp::kRelu, DType::kI64, 2, a, b, out);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("a8.ReluGrad"), std::string::npos) << s.message();
}

// dx[o, idx, i] += dy[o, j, i] in float64.
// `mag` gets the sum of |terms| of each element (the scale of its rounding error).
std::vector<double> GatherGradReference(const Dims& data, int64_t axis, const Dims& index_dims,
                                        const std::vector<double>& idx,
                                        const std::vector<double>& dy, std::vector<double>* mag) {
  const int64_t outer = cpu::NumElements(Dims(data.begin(), data.begin() + axis));
  const int64_t inner = cpu::NumElements(Dims(data.begin() + axis + 1, data.end()));
  const int64_t nidx = cpu::NumElements(index_dims), dim = data[axis];
  std::vector<double> dx(cpu::NumElements(data), 0.0);
  mag->assign(dx.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < nidx; ++j) {
      int64_t k = static_cast<int64_t>(idx[j]);
      if (k < 0) k += dim;
      for (int64_t i = 0; i < inner; ++i) {
        dx[(o * dim + k) * inner + i] += dy[(o * nidx + j) * inner + i];
        (*mag)[(o * dim + k) * inner + i] += std::fabs(dy[(o * nidx + j) * inner + i]);
      }
    }
  }
  return dx;
}

TEST(GradMathKernelTest, GatherGradScatterAddsRepeatedAndNegativeIndices) {
  struct Case {
    Dims data;
    int64_t axis;
    Dims index_dims;
  };
  const Case cases[] = {
      {{7, 5}, 0, {11}},     {{3, 7, 5}, 1, {2, 3}},    {{4, 9}, 1, {13}},
      {{5, 3, 301}, 0, {6}}, {{1000, 64}, 0, {64, 64}},  // enough work for several threads
      {{6}, 0, {}},          {{2, 3, 4}, 2, {5, 2}},
  };
  std::mt19937_64 rng(3);
  for (const Case& c : cases) {
    for (DType dt : cpu::testing::kFloatDTypes) {
      for (DType it : {DType::kI64, DType::kI32}) {
        SCOPED_TRACE(std::string(cpu::ElemName(dt)) + " " + cpu::ElemName(it) +
                     " axis=" + std::to_string(c.axis));
        const int64_t dim = c.data[c.axis];
        // Indices in [-dim, dim): negative ones and repeats included.
        Buffer idx = RandomBuffer(it, c.index_dims, rng, -static_cast<double>(dim),
                                  static_cast<double>(dim));
        Dims dy_dims(c.data.begin(), c.data.begin() + c.axis);
        dy_dims.insert(dy_dims.end(), c.index_dims.begin(), c.index_dims.end());
        dy_dims.insert(dy_dims.end(), c.data.begin() + c.axis + 1, c.data.end());
        Buffer dy = RandomBuffer(dt, dy_dims, rng);
        Buffer dx = RandomBuffer(dt, c.data, rng);  // every element must be overwritten
        ASSERT_TRUE(cpu::GatherGrad(dt, dy_dims, dy.data(), c.axis, it, c.index_dims, idx.data(),
                                    c.data, dx.data())
                        .ok());
        std::vector<double> mag;
        std::vector<double> want =
            GatherGradReference(c.data, c.axis, c.index_dims, Values(idx), Values(dy), &mag);
        ExpectClose(dx, want, ToleranceFor(dt), &mag);
      }
    }
  }
}

TEST(GradMathKernelTest, GatherGradRejectsOutOfRangeIndex) {
  double dy[2] = {1, 2}, dx[3];
  int64_t idx[2] = {0, 3};
  Status s = cpu::GatherGrad(DType::kF64, {2}, dy, 0, DType::kI64, {2}, idx, {3}, dx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("index 3"), std::string::npos) << s.message();
  idx[1] = -4;
  EXPECT_FALSE(cpu::GatherGrad(DType::kF64, {2}, dy, 0, DType::kI64, {2}, idx, {3}, dx).ok());
}

// a8.SliceGrad's one body (kernels/device/movement_setup.h), run on the host as the CPU backend
// runs it.
Status SliceGrad(DType dt, const Dims& dy_dims, const void* dy, const Dims& starts,
                 const Dims& steps, const Dims& data_dims, void* dx) {
  return emu::RunOnHost([&](emu::DevCtx& ctx) {
    return emu::movement::SliceGrad(ctx, dt, dy_dims, dy, starts, steps, data_dims, dx);
  });
}

TEST(GradMathKernelTest, SliceGradScattersIntoZeros) {
  struct Case {
    Dims data, starts, steps, dy;
  };
  const Case cases[] = {
      {{7, 5}, {1, 0}, {2, 1}, {3, 5}},
      {{9}, {8}, {-3}, {3}},
      {{4, 6, 5}, {3, 1, 4}, {-1, 2, -2}, {4, 3, 3}},
      {{3, 1001}, {0, 5}, {1, 3}, {3, 332}},
      {{5, 4}, {0, 0}, {1, 1}, {0, 4}},
  };
  std::mt19937_64 rng(5);
  for (const Case& c : cases) {
    for (DType dt : cpu::testing::kFloatDTypes) {
      SCOPED_TRACE(std::string(cpu::ElemName(dt)) + " rank " + std::to_string(c.data.size()));
      Buffer dy = RandomBuffer(dt, c.dy, rng);
      Buffer dx = RandomBuffer(dt, c.data, rng);
      ASSERT_TRUE(SliceGrad(dt, c.dy, dy.data(), c.starts, c.steps, c.data, dx.data()).ok());
      std::vector<double> want(cpu::NumElements(c.data), 0.0), g = Values(dy);
      const Dims in_strides = cpu::Strides(c.data);
      for (int64_t i = 0; i < cpu::NumElements(c.dy); ++i) {
        int64_t rest = i, off = 0;
        for (size_t d = c.dy.size(); d-- > 0;) {
          off += (c.starts[d] + (rest % c.dy[d]) * c.steps[d]) * in_strides[d];
          rest /= c.dy[d];
        }
        want[off] = g[i];
      }
      ExpectClose(dx, want, 0.0, nullptr, 0.0);  // moved, not computed: exact
    }
  }
}

TEST(GradMathKernelTest, SliceGradRejectsSliceOutsideTheData) {
  double dy[3] = {1, 2, 3}, dx[5];
  for (const std::vector<int64_t>& start_step : {std::vector<int64_t>{1, 2}, {1, -1}}) {
    const Status st = SliceGrad(DType::kF64, {3}, dy, {start_step[0]}, {start_step[1]}, {5}, dx);
    EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
    EXPECT_NE(st.message().find("a8.SliceGrad: dim 0: 3 elements from 1 step"), std::string::npos)
        << st.message();
  }
  EXPECT_TRUE(SliceGrad(DType::kF64, {3}, dy, {4}, {-2}, {5}, dx).ok());
}

// ---- op table, catalog, registry

// Every internal op's entry, catalog row and kernels: OpRegistryTest (op_registry_test.cc).
TEST(GradMathOpsTest, CatalogRowsTakeTheirDtypes) {
  EXPECT_TRUE(CheckKernelName("a8.ReluGrad:bf16,bf16->bf16").ok());
  EXPECT_TRUE(CheckKernelName("a8.GatherGrad:f64,i32->f64").ok());
  EXPECT_FALSE(CheckKernelName("a8.GatherGrad:f32,f32->f32").ok());
  EXPECT_TRUE(CheckKernelName("a8.SliceGrad:f16->f16").ok());
}

TEST(GradMathOpsTest, EveryListedOpHasARule) {
  for (const char* op : {"Add",
                         "Sub",
                         "Mul",
                         "Div",
                         "Neg",
                         "Abs",
                         "Relu",
                         "LeakyRelu",
                         "Elu",
                         "Sigmoid",
                         "Tanh",
                         "Exp",
                         "Log",
                         "Sqrt",
                         "Reciprocal",
                         "Pow",
                         "Erf",
                         "Gelu",
                         "Softplus",
                         "HardSigmoid",
                         "Identity",
                         "Cast",
                         "Where",
                         "Clip",
                         "Max",
                         "Min",
                         "Sum",
                         "Mean",
                         "MatMul",
                         "Gemm",
                         "Reshape",
                         "Flatten",
                         "Transpose",
                         "Squeeze",
                         "Unsqueeze",
                         "Expand",
                         "Concat",
                         "Split",
                         "Slice",
                         "Gather",
                         "Tile",
                         "Pad",
                         "ReduceSum",
                         "ReduceMean",
                         "ReduceSumSquare",
                         "ReduceL2",
                         "ReduceMax",
                         "ReduceMin",
                         "ReduceLogSumExp",
                         "CumSum",
                         "Trilu"}) {
    EXPECT_TRUE(HasGradient(op)) << op;
  }
}

class GradMathShapeTest : public shape_test::ShapeRulesFixture {
 protected:
  StatusOr<std::vector<TensorType>> InferA8(const std::string& op, std::vector<Value*> inputs,
                                            std::map<std::string, Attribute> attrs = {}) {
    return Infer(op, std::move(inputs), std::move(attrs), 1, 1, "a8");
  }
};

TEST_F(GradMathShapeTest, ActivationGradTakesDyAndTheSavedOperand) {
  using shape_test::F32;
  auto r = InferA8("ReluGrad", {In(F32({2, 3})), In(F32({2, 3}))});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], F32({2, 3}));
  Status s = InferA8("SigmoidGrad", {In(F32({2, 3})), In(F32({3, 2}))}).status();
  EXPECT_NE(s.message().find("'y'"), std::string::npos) << s.message();
  s = InferA8("ErfGrad", {In(F32({2})), In(shape_test::T(DType::kF16, {2}))}).status();
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s.message();
  s = InferA8("GeluGrad", {In(F32({2})), In(F32({2}))}, {{"approximate", "erf"}}).status();
  EXPECT_NE(s.message().find("approximate"), std::string::npos) << s.message();
}

TEST_F(GradMathShapeTest, GatherGradChecksDyAgainstShapeAndIndices) {
  using shape_test::F32;
  using shape_test::I64;
  auto r = InferA8("GatherGrad", {In(F32({3, 2, 4, 5})), In(I64({2, 4}))},
                   {{"axis", Attribute(-2)}, {"shape", Attribute(Dims{3, 7, 5})}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], F32({3, 7, 5}));
  Status s = InferA8("GatherGrad", {In(F32({3, 2, 5})), In(I64({2, 4}))},
                     {{"axis", Attribute(1)}, {"shape", Attribute(Dims{3, 7, 5})}})
                 .status();
  EXPECT_NE(s.message().find("'dy'"), std::string::npos) << s.message();
  s = InferA8("GatherGrad", {In(F32({3})), In(F32({3}))}, {{"shape", Attribute(Dims{4})}}).status();
  EXPECT_NE(s.message().find("'indices'"), std::string::npos) << s.message();
  s = InferA8("GatherGrad", {In(F32({3})), In(I64({3}))}, {{"shape", Attribute(Dims{-4})}})
          .status();
  EXPECT_NE(s.message().find("negative"), std::string::npos) << s.message();
}

TEST_F(GradMathShapeTest, SliceGradChecksTheSliceFits) {
  using shape_test::F32;
  auto attrs = [](Dims starts, Dims steps) -> std::map<std::string, Attribute> {
    return {{"shape", Attribute(Dims{9, 4})},
            {"starts", Attribute(std::move(starts))},
            {"steps", Attribute(std::move(steps))}};
  };
  auto r = InferA8("SliceGrad", {In(F32({3, 4}))}, attrs({8, 0}, {-3, 1}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], F32({9, 4}));
  Status s = InferA8("SliceGrad", {In(F32({4, 4}))}, attrs({8, 0}, {-3, 1})).status();
  EXPECT_NE(s.message().find("do not fit"), std::string::npos) << s.message();
  s = InferA8("SliceGrad", {In(F32({3}))}, attrs({0, 0}, {1, 1})).status();
  EXPECT_NE(s.message().find("rank"), std::string::npos) << s.message();
  s = InferA8("SliceGrad", {In(F32({3, 4}))}, attrs({0, 0}, {0, 1})).status();
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace a8

// ExecutorOptions::check_numerics (a800c-run --check-numerics): the first Inf/NaN a kernel writes
// stops the step with an error naming the step, the kernel's node and ONNX nodes, the op, the
// buffer, its dtype, the element and the loss scale; clean plans and runs without the option are
// unaffected. With a dynamic loss scaler an overflowing gradient is not reported (the scaler
// skips it) but a non-finite parameter after the step is.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kernels/common/float16.h"
#include "runtime/core/executor.h"
#include "runtime/core/numerics.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/runtime_test_util.h"

namespace a8 {
namespace {

using testing::PlanBuilder;
using Role = plan::Buffer;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> Positive(size_t n, uint32_t seed) {
  return testing::RandomFloats(n, seed, std::uniform_real_distribution<float>(0.25f, 4.0f));
}

std::unique_ptr<Executor> Make(PlanFile f, bool check) {
  ExecutorOptions opts;
  opts.check_numerics = check;
  auto ex = Executor::Create(std::move(f), MakeCpuBackend(), opts);
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  return ex.ok() ? std::move(ex).value() : nullptr;
}

// y = Log(x) (node "log_node" from ONNX node "onnx_log"), z = Exp(y): x f32[5].
PlanFile LogPlan() {
  PlanBuilder pb;
  int x = pb.Buffer("x", DType::kF32, {5}, Role::INPUT);
  int y = pb.Buffer("y", DType::kF32, {5}, Role::INTERMEDIATE);
  int z = pb.Buffer("z", DType::kF32, {5}, Role::OUTPUT);
  plan::Kernel* log = pb.Kernel("Log", {x}, {y});
  log->set_node("log_node");
  log->add_onnx_nodes("onnx_log");
  pb.Kernel("Exp", {y}, {z});
  return pb.Finish();
}

TEST(CheckNumericsTest, ALogOfANegativeInputNamesTheNodeStepAndElement) {
  auto ex = Make(LogPlan(), true);
  ASSERT_TRUE(ex);
  std::vector<float> x = Positive(5, 1);
  ASSERT_TRUE(ex->SetInput("x", x.data(), 20).ok());
  ASSERT_TRUE(ex->Run().ok()) << "a clean step passes";
  x[3] = -x[3];
  ASSERT_TRUE(ex->SetInput("x", x.data(), 20).ok());
  Status s = ex->Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  const std::string& m = s.message();
  for (const char* part :
       {"step 1:", "kernel 0 'Log:f32->f32'", "op Log", "node 'log_node'", "ONNX nodes: 'onnx_log'",
        "'y' (f32[5])", "element 3 is nan", "loss scale 1"})
    EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
}

TEST(CheckNumericsTest, WithoutTheOptionNothingIsReported) {
  auto ex = Make(LogPlan(), false);
  ASSERT_TRUE(ex);
  std::vector<float> x = Positive(5, 2);
  x[0] = -1.0f;
  ASSERT_TRUE(ex->SetInput("x", x.data(), 20).ok());
  EXPECT_TRUE(ex->Run().ok());
}

TEST(CheckNumericsTest, FindsTheFirstNonFiniteElementOfEveryFloatType) {
  for (int64_t n : {1, 7, 64, 1001}) {
    std::vector<float> v = Positive(static_cast<size_t>(n), static_cast<uint32_t>(n));
    std::vector<double> d(v.begin(), v.end());
    std::vector<uint16_t> h(v.size()), b(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      h[i] = FloatToHalfBits(v[i] * (i % 2 ? -1.0f : 1.0f));
      b[i] = FloatToBFloat16Bits(v[i]);
    }
    auto bytes = [](const auto& vec) { return reinterpret_cast<const uint8_t*>(vec.data()); };
    // Each dtype's buffer and the name of the non-finite value planted at `at` below.
    const struct {
      DType dtype;
      const uint8_t* data;
      const char* planted;
    } probes[] = {{DType::kF32, bytes(v), "nan"},
                  {DType::kF64, bytes(d), "-inf"},
                  {DType::kF16, bytes(h), "inf"},
                  {DType::kBF16, bytes(b), "nan"}};
    for (const auto& p : probes)
      EXPECT_FALSE(FindNonFinite(p.dtype, p.data, n)) << DTypeName(p.dtype);
    const int64_t at = n / 2;
    v[at] = kNaN;
    d[at] = -std::numeric_limits<double>::infinity();
    h[at] = FloatToHalfBits(70000.0f);  // overflows f16 to +Inf
    b[at] = FloatToBFloat16Bits(kNaN);
    if (at + 1 < n) v[at + 1] = kInf;  // only the first is reported
    for (const auto& p : probes) {
      SCOPED_TRACE(DTypeName(p.dtype));
      auto hit = FindNonFinite(p.dtype, p.data, n);
      ASSERT_TRUE(hit);
      EXPECT_EQ(hit->index, at);
      EXPECT_EQ(NonFiniteName(hit->value), p.planted);
    }
  }
  // Integers are never non-finite, whatever their bits.
  std::vector<int32_t> ints = {-1, 0x7f800000, 0x7fc00000};
  EXPECT_FALSE(FindNonFinite(DType::kI32, reinterpret_cast<const uint8_t*>(ints.data()), 3));
}

// A training plan with a loss scale:
//   kernel 0: y = Mul(W, x)           forward (eval kernel)
//   kernel 1: g = Mul(x, big)         a "gradient": Inf when big overflows it
//   kernel 2: W.next = Add(W, delta)  the "optimizer"; update W <- W.next
// `scaler` is "none", "static" or "dynamic"; the scale (1024) is a persistent scalar.
PlanFile ScaledPlan(const std::string& scaler) {
  PlanBuilder pb;
  std::vector<float> w0 = Positive(4, 9);
  float scale = 1024.0f;
  int x = pb.Buffer("x", DType::kF32, {4}, Role::INPUT);
  int big = pb.Buffer("big", DType::kF32, {}, Role::INPUT);
  // The update's step: state the test writes (a non-finite graph input would be reported as
  // that input before any kernel runs).
  const float no_delta[4] = {};
  int delta = pb.Buffer("delta", DType::kF32, {4}, Role::STATE, no_delta);
  int w = pb.Buffer("W", DType::kF32, {4}, Role::PARAMETER, w0.data());
  int s = pb.Buffer("scale", DType::kF32, {}, scaler == "static" ? Role::CONSTANT : Role::STATE,
                    &scale);
  int y = pb.Buffer("y", DType::kF32, {4}, Role::OUTPUT);
  int g = pb.Buffer("g", DType::kF32, {4}, Role::INTERMEDIATE);
  int w_next = pb.Buffer("W.next", DType::kF32, {4}, Role::INTERMEDIATE);
  pb.Kernel("Mul", {w, x}, {y});
  pb.Kernel("Mul", {x, big}, {g})->set_node("grad_node");
  pb.Kernel("Add", {w, delta}, {w_next})->set_node("sgd_node");
  PlanFile f = pb.Finish();
  plan::Plan& p = f.plan;
  p.set_training(true);
  p.mutable_scaler()->set_mode(scaler);
  plan::Update* u = p.add_updates();
  u->set_target(w);
  u->set_source(w_next);
  plan::Training* t = p.mutable_train();
  t->set_loss("y");
  t->set_loss_kind("output");
  t->set_optimizer("sgd");
  t->set_accumulate(1);
  t->set_step_buffer(-1);
  t->set_control_buffer(-1);
  t->set_scale_buffer(scaler == "none" ? -1 : s);
  t->add_eval_kernels(0);
  t->add_trainable("W");
  return f;
}

Status SetDelta(Executor& ex, const float* delta) {
  for (const plan::Buffer& b : ex.plan().buffers())
    if (b.name() == "delta") return ex.WriteBuffer(b.id(), delta);
  return Internal("no buffer 'delta'");
}

Status Step(Executor& ex, float big, float bad_delta) {
  std::vector<float> x = Positive(4, 5), delta = {0.5f, -0.25f, 0.125f, bad_delta};
  A8_RETURN_IF_ERROR(ex.SetInput("x", x.data(), 16));
  A8_RETURN_IF_ERROR(ex.SetInput("big", &big, 4));
  A8_RETURN_IF_ERROR(SetDelta(ex, delta.data()));
  return ex.Run();
}

TEST(CheckNumericsTest, AnOverflowingGradientIsReportedWithoutADynamicScaler) {
  for (const char* scaler : {"none", "static"}) {
    auto ex = Make(ScaledPlan(scaler), true);
    ASSERT_TRUE(ex);
    Status s = Step(*ex, 3e38f, 1.0f);
    ASSERT_FALSE(s.ok()) << scaler;
    const std::string& m = s.message();
    EXPECT_NE(m.find("step 0: ONNX node 'grad_node' produced a non-finite value (kernel 1 "),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("node 'grad_node'"), std::string::npos) << m;
    EXPECT_NE(m.find("'g' (f32[4])"), std::string::npos) << m;
    EXPECT_NE(m.find("is inf"), std::string::npos) << m;
    const std::string scale = std::string(scaler) == "static" ? "1024" : "1";
    EXPECT_NE(m.find("loss scale " + scale), std::string::npos) << m;
  }
}

TEST(CheckNumericsTest, ADynamicScalerSkipsGradientsButNotANonFiniteWeight) {
  auto ex = Make(ScaledPlan("dynamic"), true);
  ASSERT_TRUE(ex);
  Status s = Step(*ex, 3e38f, 1.0f);
  EXPECT_TRUE(s.ok()) << "an overflowing gradient is the scaler's business: " << s.message();
  s = Step(*ex, 1.0f, kNaN);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  for (const char* part : {"step 1:", "after the update, parameter 'W' (f32[4])",
                           "element 3 is nan", "computed by kernel 2 'Add:f32,f32->f32'",
                           "node 'sgd_node'", "loss scale 1024", "dynamic loss scaling"})
    EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
}

TEST(CheckNumericsTest, ADynamicScalerStillChecksTheForwardPassAndEvalSteps) {
  auto ex = Make(ScaledPlan("dynamic"), true);
  ASSERT_TRUE(ex);
  std::vector<float> x = Positive(4, 5);
  x[2] = kInf;
  ASSERT_TRUE(ex->SetInput("x", x.data(), 16).ok());
  Status s = ex->RunEval();
  ASSERT_FALSE(s.ok());
  // A non-finite input is reported as that input, not as the first kernel that reads it.
  EXPECT_EQ(s.message(),
            "--check-numerics: step 0 (eval): graph input 'x' (f32[4]) holds a non-finite value: "
            "element 2 is inf, before any kernel read it");
  float big = 1.0f;
  std::vector<float> delta(4, 0.0f);
  ASSERT_TRUE(ex->SetInput("big", &big, 4).ok());
  ASSERT_TRUE(SetDelta(*ex, delta.data()).ok());
  s = ex->Run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("step 0: graph input 'x' (f32[4])"), std::string::npos) << s.message();
  // A finite input whose product overflows: the forward kernel is reported, with the scale.
  x.assign(4, 3.4e38f);  // times W in [0.25, 4): some element overflows
  big = 2.0f;
  ASSERT_TRUE(ex->SetInput("x", x.data(), 16).ok());
  ASSERT_TRUE(ex->SetInput("big", &big, 4).ok());
  ASSERT_TRUE(SetDelta(*ex, delta.data()).ok());
  s = ex->Run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("step 0: ONNX node 'Mul_0' produced a non-finite value (kernel 0 "
                             "'Mul:f32,f32->f32'"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("output 0 buffer 'y' (f32[4]) element "), std::string::npos)
      << s.message();
}

TEST(CheckNumericsTest, AResultWrittenInPlaceIntoAPersistentBufferIsChecked) {
  PlanFile f = ScaledPlan("none");
  // W.next shares W's persistent bytes (an in-place optimizer update).
  plan::Buffer* next = f.plan.mutable_buffers(7);
  ASSERT_EQ(next->name(), "W.next");
  next->set_region(plan::Buffer::PERSISTENT);
  next->set_offset(f.plan.buffers(3).offset());
  auto ex = Make(std::move(f), true);
  ASSERT_TRUE(ex);
  Status s = Step(*ex, 1.0f, -kInf);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("kernel 2 'Add:f32,f32->f32'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'W.next' (f32[4]) element 3 is -inf"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace a8

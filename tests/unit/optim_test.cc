// The optimizer ops (kernels/cpu/optim.h, runtime/cpu/ops_optim.cc): every kernel against a
// float64 reference written here from the PyTorch formulas (independent of the kernel code), over
// several steps with random data; not-applied steps keep every byte; in place gives the bytes of
// out of place; a step run from a plan gives the kernels' bytes. The ONNX preview.training
// optimizers: optim_onnx_test.cc; the shape rules: optim_shape_rules_test.cc.
#include "kernels/cpu/optim.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/cpu_kernels_test_util.h"
#include "tests/unit/runtime_test_util.h"

namespace a8 {
namespace {

using namespace cpu::testing;  // Buffer, ExpectClose, RandomBuffer, RoundTo, ToleranceFor, Values

// ---------------------------------------------------------------- TrainControl

struct Control {
  std::vector<float> ctl = std::vector<float>(cpu::kCtlSize, -1.0f);
  int64_t step_next = -1;
  float updates_next = -1.0f;
};

Control RunControl(const cpu::TrainControlParams& p, const cpu::TrainControlInputs& in) {
  Control c;
  Status s = cpu::TrainControl(p, in, c.ctl.data(), &c.step_next, &c.updates_next);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

TEST(OptimKernelsTest, TrainControlAccumulatesAndCountsUpdates) {
  cpu::TrainControlParams p;
  p.lr = 0.25f;
  p.accumulate = 3;
  cpu::TrainControlInputs in;
  for (int64_t step = 0; step < 9; ++step) {
    in.step = step;
    Control c = RunControl(p, in);
    const bool applied = step % 3 == 2;
    EXPECT_EQ(c.ctl[cpu::kCtlApplied], applied ? 1.0f : 0.0f) << step;
    EXPECT_EQ(c.ctl[cpu::kCtlLr], 0.25f);
    EXPECT_FLOAT_EQ(c.ctl[cpu::kCtlGradScale], 1.0f / 3.0f);
    EXPECT_EQ(c.ctl[cpu::kCtlUpdates], static_cast<float>((step + 1) / 3)) << step;
    EXPECT_EQ(c.ctl[cpu::kCtlGradNorm], 0.0f);
    EXPECT_EQ(c.step_next, step + 1);
    EXPECT_EQ(c.updates_next, c.ctl[cpu::kCtlUpdates]);
    in.updates = c.updates_next;
  }
  EXPECT_EQ(in.updates, 3.0f);
}

TEST(OptimKernelsTest, TrainControlCosineScheduleWithWarmup) {
  cpu::TrainControlParams p;
  p.lr = 0.1f;
  p.cosine = true;
  p.warmup_steps = 3;
  p.total_steps = 10;
  p.min_lr = 0.01f;
  const double lr = p.lr, min_lr = p.min_lr, pi = std::acos(-1.0);
  auto cosine = [&](double progress) {
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(pi * progress));
  };
  // {optimizer update index, expected lr}
  const std::vector<std::pair<int64_t, double>> cases = {
      {0, lr / 3},          {1, lr * 2 / 3},      {2, lr},      {3, lr},     {4, cosine(1.0 / 7)},
      {6, cosine(3.0 / 7)}, {9, cosine(6.0 / 7)}, {10, min_lr}, {25, min_lr}};
  for (int64_t k : {1, 4}) {
    p.accumulate = k;
    for (const auto& [index, want] : cases) {
      cpu::TrainControlInputs in;
      in.step = index * k + (k - 1);  // every micro-step of an update has its lr
      EXPECT_NEAR(RunControl(p, in).ctl[cpu::kCtlLr], want, 1e-7 * lr) << index << " k=" << k;
      in.step = index * k;
      EXPECT_NEAR(RunControl(p, in).ctl[cpu::kCtlLr], want, 1e-7 * lr) << index << " k=" << k;
    }
  }
  // Without warm-up the first update has the full rate.
  p.warmup_steps = 0;
  p.accumulate = 1;
  EXPECT_FLOAT_EQ(RunControl(p, {}).ctl[cpu::kCtlLr], p.lr);
}

TEST(OptimKernelsTest, TrainControlClipsTheAveragedGradientNorm) {
  cpu::TrainControlParams p;
  p.lr = 1.0f;
  p.accumulate = 2;
  cpu::TrainControlInputs in;
  in.step = 1;
  in.has_sq_norm = true;
  in.sq_norm = 36.0f;  // the accumulated sum has norm 6, the average 3
  // No clipping: the norm is still reported.
  Control c = RunControl(p, in);
  EXPECT_FLOAT_EQ(c.ctl[cpu::kCtlGradNorm], 3.0f);
  EXPECT_FLOAT_EQ(c.ctl[cpu::kCtlGradScale], 0.5f);
  // A bound above the norm leaves the scale at 1/k.
  p.max_grad_norm = 10.0f;
  EXPECT_FLOAT_EQ(RunControl(p, in).ctl[cpu::kCtlGradScale], 0.5f);
  // A bound below: clip_grad_norm_'s max_norm / (norm + 1e-6).
  p.max_grad_norm = 1.5f;
  c = RunControl(p, in);
  EXPECT_FLOAT_EQ(c.ctl[cpu::kCtlGradScale], static_cast<float>(0.5 * 1.5 / (3.0 + 1e-6)));
  EXPECT_FLOAT_EQ(c.ctl[cpu::kCtlGradNorm], 3.0f);
  EXPECT_EQ(c.ctl[cpu::kCtlApplied], 1.0f);
}

TEST(OptimKernelsTest, TrainControlSkipsTheUpdateOnFoundInf) {
  cpu::TrainControlParams p;
  p.lr = 0.5f;
  cpu::TrainControlInputs in;
  in.step = 4;
  in.updates = 4.0f;
  in.has_found_inf = true;
  in.found_inf = 1.0f;
  Control c = RunControl(p, in);
  EXPECT_EQ(c.ctl[cpu::kCtlApplied], 0.0f);
  EXPECT_EQ(c.ctl[cpu::kCtlUpdates], 4.0f);
  EXPECT_EQ(c.updates_next, 4.0f);
  EXPECT_EQ(c.step_next, 5);
  in.found_inf = 0.0f;
  c = RunControl(p, in);
  EXPECT_EQ(c.ctl[cpu::kCtlApplied], 1.0f);
  EXPECT_EQ(c.updates_next, 5.0f);
}

TEST(OptimKernelsTest, TrainControlRejectsBadParams) {
  cpu::TrainControlParams p;
  p.accumulate = 0;
  Control c;
  auto message = [&] {
    Status s = cpu::TrainControl(p, {}, c.ctl.data(), &c.step_next, &c.updates_next);
    return s.ok() ? std::string("ok") : s.message();
  };
  EXPECT_THAT(message(), ::testing::HasSubstr("accumulate must be at least 1, got 0"));
  p.accumulate = 1;
  p.warmup_steps = -1;
  EXPECT_THAT(message(),
              ::testing::HasSubstr("warmup_steps (-1) and total_steps (0) must be >= 0"));
}

// ----------------------------------------------------------------
// GlobalNormSq, GradAccumulate

TEST(OptimKernelsTest, GlobalNormSqMatchesADoubleReference) {
  std::mt19937_64 rng(11);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    // Odd sizes, one larger than a reduction chunk.
    std::vector<Buffer> tensors;
    for (int64_t n : {1, 7, 333, 70001}) tensors.push_back(RandomBuffer(t, {n}, rng, -3.0, 3.0));
    std::vector<DType> dtypes;
    std::vector<int64_t> counts;
    std::vector<const void*> data;
    double want = 0.0;
    for (const Buffer& b : tensors) {
      dtypes.push_back(b.dtype);
      counts.push_back(b.size());
      data.push_back(b.data());
      for (double v : Values(b)) want += v * v;
    }
    float got = -1.0f, again = -2.0f;
    ASSERT_TRUE(cpu::GlobalNormSq(dtypes, counts, data, &got).ok());
    ASSERT_TRUE(cpu::GlobalNormSq(dtypes, counts, data, &again).ok());
    EXPECT_NEAR(got, want, 1e-6 * want) << DTypeName(t);
    EXPECT_EQ(got, again);
  }
}

TEST(OptimKernelsTest, GradAccumulateRestartsEveryWindow) {
  std::mt19937_64 rng(12);
  const int64_t k = 3, n = 37;
  for (DType gt : {DType::kF32, DType::kF16, DType::kBF16}) {
    Buffer acc = RandomBuffer(DType::kF32, {n}, rng);  // stale: the first step ignores it
    std::vector<double> want(n, 0.0);
    for (int64_t step = 0; step < 7; ++step) {
      Buffer g = RandomBuffer(gt, {n}, rng);
      std::vector<double> gv = Values(g);
      for (int64_t i = 0; i < n; ++i)
        want[i] = RoundTo(DType::kF32, (step % k == 0 ? 0.0 : want[i]) + gv[i]);
      Buffer out = acc;
      ASSERT_TRUE(
          cpu::GradAccumulate(DType::kF32, gt, n, k, step, acc.data(), g.data(), out.data()).ok());
      // In place: the same bytes.
      ASSERT_TRUE(
          cpu::GradAccumulate(DType::kF32, gt, n, k, step, acc.data(), g.data(), acc.data()).ok());
      EXPECT_EQ(acc.bytes, out.bytes);
      ExpectClose(acc, want, 1e-6);
    }
  }
}

// ---------------------------------------------------------------- SgdUpdate,
// AdamUpdate

// One step of the schedule the update tests run: the control vector TrainControl would give.
struct StepControl {
  double lr, grad_scale;
  bool applied;
};
const std::vector<StepControl> kSteps = {{0.1, 1.0, true},  {0.05, 0.5, false}, {0.05, 0.5, true},
                                         {0.02, 1.0, true}, {0.02, 1.0, false}, {0.01, 0.25, true}};

std::vector<float> CtlOf(const StepControl& s, float updates) {
  return {static_cast<float>(s.lr), static_cast<float>(s.grad_scale), s.applied ? 1.0f : 0.0f,
          updates, 0.0f};
}

// torch.optim.SGD, float64.
void RefSgd(const cpu::SgdParams& p, double lr, double scale, bool first,
            const std::vector<double>& grad, std::vector<double>* x, std::vector<double>* buf) {
  const double mom = p.momentum, damp = p.dampening, wd = p.weight_decay;
  for (size_t i = 0; i < x->size(); ++i) {
    double d = grad[i] * scale;
    if (wd != 0.0) d += wd * (*x)[i];
    if (mom != 0.0) {
      (*buf)[i] = first ? d : mom * (*buf)[i] + (1.0 - damp) * d;
      d = p.nesterov ? d + mom * (*buf)[i] : (*buf)[i];
    }
    (*x)[i] -= lr * d;
  }
}

std::vector<double> Rounded(DType t, std::vector<double> v) {
  for (double& x : v) x = RoundTo(t, x);
  return v;
}

// Runs `check` (CheckSgd or CheckAdam) for every variant: f32 parameters and gradients of each
// of `sizes` elements, then each (parameter, gradient) dtype pair of `mixed` at `mixed_n`
// elements, with seeds counting up from seed + 1.
template <typename Params, typename Check>
void CheckEveryDtype(const std::vector<Params>& variants, Check check,
                     std::initializer_list<int64_t> sizes, int64_t mixed_n,
                     std::initializer_list<std::pair<DType, DType>> mixed, uint64_t seed) {
  for (const Params& p : variants) {
    for (int64_t n : sizes) check(p, DType::kF32, DType::kF32, n, ++seed);
    for (const auto& [pt, gt] : mixed) check(p, pt, gt, mixed_n, ++seed);
  }
}

void CheckSgd(const cpu::SgdParams& p, DType pt, DType gt, int64_t n, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "momentum " << p.momentum << " dampening " << p.dampening
                                    << " nesterov " << p.nesterov << " wd " << p.weight_decay
                                    << " param " << DTypeName(pt) << " grad " << DTypeName(gt));
  std::mt19937_64 rng(seed);
  const bool with_buf = p.momentum != 0.0f;
  Buffer x = RandomBuffer(pt, {n}, rng), buf = RandomBuffer(pt, {n}, rng);
  std::vector<double> rx = Values(x), rbuf = Values(buf);
  float updates = 0.0f;
  for (const StepControl& s : kSteps) {
    Buffer g = RandomBuffer(gt, {n}, rng);
    if (s.applied) {
      updates += 1.0f;
      RefSgd(p, static_cast<float>(s.lr), static_cast<float>(s.grad_scale), updates == 1.0f,
             Values(g), &rx, &rbuf);
      rx = Rounded(pt, rx);
      rbuf = Rounded(pt, rbuf);
    }
    const std::vector<float> ctl = CtlOf(s, updates);
    Buffer x_out = RandomBuffer(pt, {n}, rng), buf_out = RandomBuffer(pt, {n}, rng);
    ASSERT_TRUE(cpu::SgdUpdate(p, pt, gt, n, ctl.data(), x.data(), g.data(),
                               with_buf ? buf.data() : nullptr, x_out.data(),
                               with_buf ? buf_out.data() : nullptr)
                    .ok());
    const Buffer x_before = x, buf_before = buf;
    ASSERT_TRUE(cpu::SgdUpdate(p, pt, gt, n, ctl.data(), x.data(), g.data(),
                               with_buf ? buf.data() : nullptr, x.data(),
                               with_buf ? buf.data() : nullptr)
                    .ok());
    EXPECT_EQ(x.bytes, x_out.bytes);  // in place == out of place
    if (with_buf) {
      EXPECT_EQ(buf.bytes, buf_out.bytes);
    }
    if (!s.applied) {
      EXPECT_EQ(x.bytes, x_before.bytes);
      EXPECT_EQ(buf.bytes, buf_before.bytes);
    }
    // Parameters and buffers are O(1) and a result near 0 comes from cancelling terms of that size:
    // the error scale is |want| + 1.
    const double tol = 4 * ToleranceFor(pt);
    ExpectClose(x, rx, tol, nullptr, 1.0);
    if (with_buf) ExpectClose(buf, rbuf, tol, nullptr, 1.0);
  }
}

TEST(OptimKernelsTest, SgdUpdateMatchesPyTorch) {
  std::vector<cpu::SgdParams> variants(6);
  variants[1].weight_decay = 0.01f;
  variants[2].momentum = 0.9f;  // the first applied update initialises the buffer
  variants[3].momentum = 0.8f;
  variants[3].dampening = 0.3f;
  variants[3].weight_decay = 0.05f;
  variants[4].momentum = 0.9f;
  variants[4].nesterov = true;
  variants[5].momentum = 0.7f;
  variants[5].nesterov = true;
  variants[5].weight_decay = 0.1f;
  CheckEveryDtype(variants, CheckSgd, {1, 17, 1001}, 33,
                  {{DType::kF32, DType::kF16},
                   {DType::kF32, DType::kBF16},
                   {DType::kF64, DType::kF64},
                   {DType::kF16, DType::kF16}},
                  20);
}

TEST(OptimKernelsTest, SgdUpdateWithMomentumNeedsTheBuffer) {
  cpu::SgdParams p;
  p.momentum = 0.9f;
  std::vector<float> x(3, 1.0f), g(3, 1.0f), ctl = {0.1f, 1.0f, 1.0f, 1.0f, 0.0f};
  Status s = cpu::SgdUpdate(p, DType::kF32, DType::kF32, 3, ctl.data(), x.data(), g.data(), nullptr,
                            x.data(), nullptr);
  EXPECT_THAT(s.message(),
              ::testing::HasSubstr("momentum 0.9 needs the momentum buffer input and output"));
}

// torch.optim.Adam / AdamW (amsgrad off), float64.
void RefAdam(const cpu::AdamParams& p, double lr, double scale, double t,
             const std::vector<double>& grad, std::vector<double>* x, std::vector<double>* m,
             std::vector<double>* v) {
  const double b1 = p.beta1, b2 = p.beta2, eps = p.eps, wd = p.weight_decay;
  const double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
  for (size_t i = 0; i < x->size(); ++i) {
    double d = grad[i] * scale;
    if (p.decoupled) {
      (*x)[i] *= 1.0 - lr * wd;
    } else {
      d += wd * (*x)[i];
    }
    (*m)[i] = b1 * (*m)[i] + (1.0 - b1) * d;
    (*v)[i] = b2 * (*v)[i] + (1.0 - b2) * d * d;
    const double denom = std::sqrt((*v)[i]) / std::sqrt(bc2) + eps;
    (*x)[i] -= lr / bc1 * (*m)[i] / denom;
  }
}

void CheckAdam(const cpu::AdamParams& p, DType pt, DType gt, int64_t n, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "wd " << p.weight_decay << " decoupled " << p.decoupled
                                    << " param " << DTypeName(pt) << " grad " << DTypeName(gt));
  std::mt19937_64 rng(seed);
  Buffer x = RandomBuffer(pt, {n}, rng);
  Buffer m = cpu::testing::MakeBuffer(pt, {n}), v = cpu::testing::MakeBuffer(pt, {n});
  std::vector<double> rx = Values(x), rm(n, 0.0), rv(n, 0.0);
  float updates = 0.0f;
  for (const StepControl& s : kSteps) {
    Buffer g = RandomBuffer(gt, {n}, rng);
    if (s.applied) {
      updates += 1.0f;
      RefAdam(p, static_cast<float>(s.lr), static_cast<float>(s.grad_scale), updates, Values(g),
              &rx, &rm, &rv);
      rx = Rounded(pt, rx);
      rm = Rounded(pt, rm);
      rv = Rounded(pt, rv);
    }
    const std::vector<float> ctl = CtlOf(s, updates);
    Buffer xo = m, mo = m, vo = m;  // any bytes: overwritten
    ASSERT_TRUE(cpu::AdamUpdate(p, pt, gt, n, ctl.data(), x.data(), g.data(), m.data(), v.data(),
                                xo.data(), mo.data(), vo.data())
                    .ok());
    const Buffer x_before = x, m_before = m, v_before = v;
    ASSERT_TRUE(cpu::AdamUpdate(p, pt, gt, n, ctl.data(), x.data(), g.data(), m.data(), v.data(),
                                x.data(), m.data(), v.data())
                    .ok());
    EXPECT_EQ(x.bytes, xo.bytes);
    EXPECT_EQ(m.bytes, mo.bytes);
    EXPECT_EQ(v.bytes, vo.bytes);
    if (!s.applied) {
      EXPECT_EQ(x.bytes, x_before.bytes);
      EXPECT_EQ(m.bytes, m_before.bytes);
      EXPECT_EQ(v.bytes, v_before.bytes);
    }
    // As for SGD, the scale of x and m is |want| + 1; v sums squares, it does not cancel.
    const double tol = 8 * ToleranceFor(pt);
    ExpectClose(x, rx, tol, nullptr, 1.0);
    ExpectClose(m, rm, tol, nullptr, 1.0);
    ExpectClose(v, rv, tol, nullptr, 1e-5);
  }
}

TEST(OptimKernelsTest, AdamUpdateMatchesPyTorch) {
  std::vector<cpu::AdamParams> variants(4);
  variants[1].weight_decay = 0.01f;  // Adam: L2 added to the gradient
  variants[2].weight_decay = 0.1f;   // AdamW: decoupled
  variants[2].decoupled = true;
  variants[3].beta1 = 0.5f;
  variants[3].beta2 = 0.9f;
  variants[3].eps = 1e-3f;
  CheckEveryDtype(
      variants, CheckAdam, {1, 19, 1003}, 29,
      {{DType::kF32, DType::kF16}, {DType::kF32, DType::kBF16}, {DType::kF64, DType::kF64}}, 40);
}

TEST(OptimKernelsTest, AdamFirstUpdateIsLrTimesSign) {
  // Bias correction: after one update m/bc1 = g and sqrt(v/bc2) = |g|, so x moves by lr.
  cpu::AdamParams p;
  p.eps = 0.0f;
  std::vector<float> x = {1.0f, -2.0f, 3.0f}, g = {0.3f, -7.0f, 1e-3f}, m(3, 0.0f), v(3, 0.0f);
  std::vector<float> ctl = {0.01f, 1.0f, 1.0f, 1.0f, 0.0f};
  ASSERT_TRUE(cpu::AdamUpdate(p, DType::kF32, DType::kF32, 3, ctl.data(), x.data(), g.data(),
                              m.data(), v.data(), x.data(), m.data(), v.data())
                  .ok());
  EXPECT_FLOAT_EQ(x[0], 0.99f);
  EXPECT_FLOAT_EQ(x[1], -1.99f);
  EXPECT_FLOAT_EQ(x[2], 2.99f);
}

// ---------------------------------------------------------------- CPU registry

// GlobalNormSq -> TrainControl -> SgdUpdate and AdamUpdate run from a plan give the bytes of direct
// kernel calls: the registry reads the operands and attributes where build-training writes them.
TEST(OptimRegistryTest, AStepFromAPlanMatchesTheKernels) {
  using B = plan::Buffer;
  const int64_t n = 11;
  std::mt19937_64 rng(70);
  Buffer w = RandomBuffer(DType::kF32, {n}, rng), g = RandomBuffer(DType::kF32, {n}, rng);
  Buffer mom = RandomBuffer(DType::kF32, {n}, rng), m = RandomBuffer(DType::kF32, {n}, rng);
  Buffer v = RandomBuffer(DType::kF32, {n}, rng, 0.0, 1.0);
  const int64_t step = 5;
  const float updates = 2.0f;
  testing::PlanBuilder pb;
  const int gi = pb.Buffer("g", DType::kF32, {n}, B::INPUT);
  const int si = pb.Buffer("step", DType::kI64, {}, B::INPUT);
  const int ui = pb.Buffer("updates", DType::kF32, {}, B::INPUT);
  const int wi = pb.Buffer("w", DType::kF32, {n}, B::PARAMETER, w.data());
  const int bi = pb.Buffer("mom", DType::kF32, {n}, B::STATE, mom.data());
  const int mi = pb.Buffer("m", DType::kF32, {n}, B::STATE, m.data());
  const int vi = pb.Buffer("v", DType::kF32, {n}, B::STATE, v.data());
  struct Out {
    const char* name;
    DType dtype;
    std::vector<int64_t> dims;
  };
  const std::vector<Out> kOuts = {{"sq", DType::kF32, {}},        {"ctl", DType::kF32, {5}},
                                  {"step_next", DType::kI64, {}}, {"updates_next", DType::kF32, {}},
                                  {"w_sgd", DType::kF32, {n}},    {"mom_next", DType::kF32, {n}},
                                  {"w_adam", DType::kF32, {n}},   {"m_next", DType::kF32, {n}},
                                  {"v_next", DType::kF32, {n}}};
  std::vector<int> outs;
  for (const Out& o : kOuts) outs.push_back(pb.Buffer(o.name, o.dtype, o.dims, B::OUTPUT));
  pb.Kernel("a8.GlobalNormSq", {gi}, {outs[0]});
  plan::Kernel* tc = pb.Kernel("a8.TrainControl", {si, ui, outs[0]}, {outs[1], outs[2], outs[3]});
  testing::PlanBuilder::Float(tc, "lr", 0.1f);
  testing::PlanBuilder::Int(tc, "accumulate", 2);
  testing::PlanBuilder::Float(tc, "max_grad_norm", 0.5f);
  plan::Kernel* sgd = pb.Kernel("a8.SgdUpdate", {wi, gi, outs[1], bi}, {outs[4], outs[5]});
  testing::PlanBuilder::Float(sgd, "momentum", 0.9f);
  testing::PlanBuilder::Int(sgd, "nesterov", 1);
  testing::PlanBuilder::Float(sgd, "weight_decay", 0.01f);
  plan::Kernel* adam =
      pb.Kernel("a8.AdamUpdate", {wi, gi, outs[1], mi, vi}, {outs[6], outs[7], outs[8]});
  testing::PlanBuilder::Float(adam, "beta1", 0.8f);
  testing::PlanBuilder::Float(adam, "weight_decay", 0.1f);
  testing::PlanBuilder::Int(adam, "decoupled", 1);
  auto ex = Executor::Create(pb.Finish(), MakeCpuBackend());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  ASSERT_TRUE((*ex)->SetInput("g", g.data(), g.bytes.size()).ok());
  ASSERT_TRUE((*ex)->SetInput("step", &step, 8).ok());
  ASSERT_TRUE((*ex)->SetInput("updates", &updates, 4).ok());
  Status s = (*ex)->Run();
  ASSERT_TRUE(s.ok()) << s.message();
  auto got = [&](int i) {
    const plan::Buffer& b = (*ex)->plan().buffers(outs[i]);
    const uint8_t* p = (*ex)->BufferData(b.id());
    return std::vector<uint8_t>(p, p + b.bytes());
  };
  auto bytes = [](const void* p, size_t size) {
    return std::vector<uint8_t>(static_cast<const uint8_t*>(p),
                                static_cast<const uint8_t*>(p) + size);
  };

  float sq = 0.0f;
  ASSERT_TRUE(cpu::GlobalNormSq({DType::kF32}, {n}, {g.data()}, &sq).ok());
  EXPECT_EQ(got(0), bytes(&sq, 4));
  cpu::TrainControlParams tp;
  tp.lr = 0.1f;
  tp.accumulate = 2;
  tp.max_grad_norm = 0.5f;
  Control c = RunControl(tp, {step, updates, true, sq, false, 0.0f});
  EXPECT_EQ(c.ctl[cpu::kCtlApplied], 1.0f);
  EXPECT_LT(c.ctl[cpu::kCtlGradScale], 0.5f);  // clipped
  EXPECT_EQ(got(1), bytes(c.ctl.data(), 20));
  EXPECT_EQ(got(2), bytes(&c.step_next, 8));
  EXPECT_EQ(got(3), bytes(&c.updates_next, 4));
  cpu::SgdParams sp{0.9f, 0.0f, true, 0.01f};
  Buffer w_sgd = w, mom_next = mom;
  ASSERT_TRUE(cpu::SgdUpdate(sp, DType::kF32, DType::kF32, n, c.ctl.data(), w.data(), g.data(),
                             mom.data(), w_sgd.data(), mom_next.data())
                  .ok());
  EXPECT_EQ(got(4), w_sgd.bytes);
  EXPECT_EQ(got(5), mom_next.bytes);
  cpu::AdamParams ap{0.8f, 0.999f, 1e-8f, 0.1f, true};
  Buffer w_adam = w, m_next = m, v_next = v;
  ASSERT_TRUE(cpu::AdamUpdate(ap, DType::kF32, DType::kF32, n, c.ctl.data(), w.data(), g.data(),
                              m.data(), v.data(), w_adam.data(), m_next.data(), v_next.data())
                  .ok());
  EXPECT_EQ(got(6), w_adam.bytes);
  EXPECT_EQ(got(7), m_next.bytes);
  EXPECT_EQ(got(8), v_next.bytes);
}

}  // namespace
}  // namespace a8

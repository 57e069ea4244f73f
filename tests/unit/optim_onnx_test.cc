// The ONNX ai.onnx.preview.training optimizers (Adam, Momentum, Adagrad: one body for both
// backends, kernels/device/loss_optim_update_impl.h, run on the host as the CPU backend runs it)
// against float64 references written here from the ONNX operator specs, with random data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/device/loss_optim.h"
#include "kernels/emu/run_on_host.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8 {
namespace {

using namespace cpu::testing;  // Buffer, RandomBuffer, ExpectClose, ToleranceFor, Values

// One update of one tensor of `dtype` by `p` (its kind and attributes set), R = r (f64), T = t;
// s2 / s2_new: Adam's H only.
Status OnnxUpdate(emu::OnnxOptimParams p, DType dtype, int64_t n, double r, int64_t t,
                  const void* x, const void* g, const void* s1, const void* s2, void* x_new,
                  void* s1_new, void* s2_new) {
  p.r_f64 = true, p.r = &r, p.t = &t;
  p.dtype = dtype, p.n = n, p.x = x, p.g = g, p.s1 = s1, p.s2 = s2;
  p.x_new = x_new, p.s1_new = s1_new, p.s2_new = s2_new;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::OnnxOptimizerUpdate(ctx, p); });
}

TEST(OptimKernelsTest, OnnxAdamMatchesTheSpec) {
  std::mt19937_64 rng(60);
  emu::OnnxOptimParams op;
  op.kind = emu::OnnxOptimizer::kAdam;
  cpu::OnnxAdamParams& p = op.adam;
  p.alpha = 0.95f;
  p.beta = 0.85f;
  p.epsilon = 1e-2f;
  p.norm_coefficient = 0.001f;
  p.norm_coefficient_post = 0.02f;
  for (DType t : {DType::kF32, DType::kF64}) {
    for (int64_t step : {0, 1, 4}) {
      const int64_t n = 23;
      Buffer x = RandomBuffer(t, {n}, rng), g = RandomBuffer(t, {n}, rng);
      Buffer v = RandomBuffer(t, {n}, rng), h = RandomBuffer(t, {n}, rng, 0.1, 2.0);
      std::vector<double> rx = Values(x), rg = Values(g), rv = Values(v), rh = Values(h);
      const double r = 0.1, alpha = p.alpha, beta = p.beta;
      const double r_adj =
          step > 0 ? r * std::sqrt(1 - std::pow(beta, step)) / (1 - std::pow(alpha, step)) : r;
      for (int64_t i = 0; i < n; ++i) {
        const double gr = double{p.norm_coefficient} * rx[i] + rg[i];
        rv[i] = alpha * rv[i] + (1 - alpha) * gr;
        rh[i] = beta * rh[i] + (1 - beta) * gr * gr;
        const double xn = rx[i] - r_adj * rv[i] / (std::sqrt(rh[i]) + double{p.epsilon});
        rx[i] = (1 - double{p.norm_coefficient_post}) * xn;
      }
      ASSERT_TRUE(OnnxUpdate(op, t, n, r, step, x.data(), g.data(), v.data(), h.data(), x.data(),
                             v.data(), h.data())
                      .ok());
      const double tol = 4 * ToleranceFor(t);
      ExpectClose(x, rx, tol, nullptr, 1.0);  // O(1) values: scale |want| + 1
      ExpectClose(v, rv, tol, nullptr, 1.0);
      ExpectClose(h, rh, tol);
    }
  }
}

TEST(OptimKernelsTest, OnnxMomentumMatchesTheSpec) {
  std::mt19937_64 rng(61);
  for (bool nesterov : {false, true}) {
    emu::OnnxOptimParams op;
    op.kind = emu::OnnxOptimizer::kMomentum;
    cpu::OnnxMomentumParams& p = op.momentum;
    p.alpha = 0.9f;
    p.beta = 0.3f;
    p.norm_coefficient = 0.01f;
    p.nesterov = nesterov;
    for (DType t : {DType::kF32, DType::kF64}) {
      for (int64_t step : {0, 3}) {
        const int64_t n = 31;
        Buffer x = RandomBuffer(t, {n}, rng), g = RandomBuffer(t, {n}, rng);
        Buffer v = RandomBuffer(t, {n}, rng);
        std::vector<double> rx = Values(x), rg = Values(g), rv = Values(v);
        const double r = 0.05, alpha = p.alpha, beta = step > 0 ? double{p.beta} : 1.0;
        for (int64_t i = 0; i < n; ++i) {
          const double gr = double{p.norm_coefficient} * rx[i] + rg[i];
          rv[i] = alpha * rv[i] + beta * gr;
          rx[i] -= r * (nesterov ? gr + alpha * rv[i] : rv[i]);
        }
        Buffer xo = x, vo = v;
        ASSERT_TRUE(OnnxUpdate(op, t, n, r, step, x.data(), g.data(), v.data(), nullptr, xo.data(),
                               vo.data(), nullptr)
                        .ok());
        ExpectClose(xo, rx, 4 * ToleranceFor(t), nullptr, 1.0);
        ExpectClose(vo, rv, 4 * ToleranceFor(t), nullptr, 1.0);
      }
    }
  }
}

TEST(OptimKernelsTest, OnnxAdagradMatchesTheSpec) {
  std::mt19937_64 rng(62);
  emu::OnnxOptimParams op;
  op.kind = emu::OnnxOptimizer::kAdagrad;
  cpu::OnnxAdagradParams& p = op.adagrad;
  p.decay_factor = 0.1f;
  p.epsilon = 1e-5f;
  p.norm_coefficient = 0.001f;
  for (DType t : {DType::kF32, DType::kF64}) {
    for (int64_t step : {0, 5}) {
      const int64_t n = 13;
      Buffer x = RandomBuffer(t, {n}, rng), g = RandomBuffer(t, {n}, rng);
      Buffer h = RandomBuffer(t, {n}, rng, 0.0, 3.0);
      std::vector<double> rx = Values(x), rg = Values(g), rh = Values(h);
      const double r = 0.1 / (1 + step * double{p.decay_factor});
      for (int64_t i = 0; i < n; ++i) {
        const double gr = double{p.norm_coefficient} * rx[i] + rg[i];
        rh[i] += gr * gr;
        rx[i] -= r * gr / (std::sqrt(rh[i]) + double{p.epsilon});
      }
      ASSERT_TRUE(OnnxUpdate(op, t, n, 0.1, step, x.data(), g.data(), h.data(), nullptr, x.data(),
                             h.data(), nullptr)
                      .ok());
      ExpectClose(x, rx, 4 * ToleranceFor(t), nullptr, 1.0);
      ExpectClose(h, rh, 4 * ToleranceFor(t));
    }
  }
}

}  // namespace
}  // namespace a8

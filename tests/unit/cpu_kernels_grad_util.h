// Gradient-kernel checks shared by the kernel tests: a kernel's gradient in float64 against
// central differences of its forward, and in f32/f16/bf16 against its own float64 result on the
// same rounded inputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu::testing {

using Vec = std::vector<double>;

inline Vec Uniform(size_t n, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  Vec v(n);
  for (double& x : v) x = d(rng);
  return v;
}

// `v` rounded to `dt` and back.
inline Vec Round(DType dt, const Vec& v) {
  return Values(FromValues(dt, {static_cast<int64_t>(v.size())}, v));
}

// d/dx of sum(f(x) * r) by central differences.
inline Vec NumericGrad(const std::function<Vec(const Vec&)>& f, Vec x, const Vec& r,
                       double eps = 1e-6) {
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    double l[2] = {0, 0};
    for (int s = 0; s < 2; ++s) {
      x[i] = x0 + (s == 0 ? eps : -eps);
      Vec y = f(x);
      for (size_t j = 0; j < y.size(); ++j) l[s] += y[j] * r[j];
    }
    x[i] = x0;
    g[i] = (l[0] - l[1]) / (2 * eps);
  }
  return g;
}

// |got - want| <= tol * (|want| + scale * 1e-2): `scale` is max |want|, so elements that are sums
// of cancelling terms are held to the precision of the whole gradient.
inline void ExpectNear(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol * (std::fabs(want[i]) + 1e-2 * scale + 1e-6))) {
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << " want " << want[i];
      ++failures;
    }
  }
}

// A kernel's gradient checked two ways: in f64 against `numeric`, and in f32/f16/bf16 against its
// f64 result on the same (rounded) inputs. `run(dt, inputs)` returns the gradient.
inline void CheckKernel(const std::function<Vec(DType, const std::vector<Vec>&)>& run,
                        const std::vector<Vec>& inputs, const Vec& numeric,
                        const std::string& what) {
  ExpectNear(run(DType::kF64, inputs), numeric, 1e-6, what + " f64 vs numeric");
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    std::vector<Vec> rounded;
    for (const Vec& v : inputs) rounded.push_back(Round(dt, v));
    ExpectNear(run(dt, rounded), run(DType::kF64, rounded), 8 * ToleranceFor(dt),
               what + " " + ElemName(dt));
  }
}

}  // namespace a8::cpu::testing

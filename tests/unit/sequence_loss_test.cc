// Sequence cross-entropy (build-training with --class-axis, --ignore-index, --shift-labels) end
// to end through the driver and the CPU backend: a model whose logits are [B, T, V] trains one
// SGD step (lr 1, so the weight's change is its gradient); the loss is checked against a float64
// reference (mean over the labels that are not ignored, as PyTorch) and the gradient against
// central finite differences of that reference.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <vector>

#include "compiler/plan/plan_file.h"
#include "driver/driver.h"
#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/temp_path_util.h"

namespace a8 {
namespace {

constexpr int64_t kB = 2, kT = 4, kD = 3, kV = 5;

// y[b, t, v] = sum_d x[b, t, d] w[d, v]
const char* kModel = R"(<
  ir_version: 8,
  opset_import: ["" : 17]
>
lm (float[2, 4, 3] x) => (float[2, 4, 5] y)
<float[3, 5] w = {0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.7, -0.6, 0.05, 0.3, -0.1, 0.4, 0.2, -0.3, 0.6}>
{
  y = MatMul(x, w)
}
)";

struct Case {
  bool shift;
  int64_t ignore_index;
};

// The float64 loss of weights `w`: mean over counted targets of logsumexp(z) - z[label].
double ReferenceLoss(const std::vector<double>& w, const std::vector<float>& x,
                     const std::vector<int64_t>& labels, const Case& c) {
  double sum = 0;
  int counted = 0;
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t t = 0; t < kT; ++t) {
      const int64_t lt = c.shift ? t + 1 : t;
      if (lt >= kT) continue;
      const int64_t label = labels[b * kT + lt];
      if (label == c.ignore_index) continue;
      std::vector<double> z(kV, 0.0);
      for (int64_t v = 0; v < kV; ++v) {
        for (int64_t d = 0; d < kD; ++d) z[v] += x[(b * kT + t) * kD + d] * w[d * kV + v];
      }
      double m = z[0];
      for (double zi : z) m = std::max(m, zi);
      double s = 0;
      for (double zi : z) s += std::exp(zi - m);
      sum += m + std::log(s) - z[label];
      ++counted;
    }
  }
  return sum / counted;
}

std::vector<float> ReadFloats(const Executor& ex, const plan::Buffer& b) {
  std::vector<float> out(b.bytes() / sizeof(float));
  EXPECT_TRUE(ex.ReadBuffer(b.id(), out.data()).ok());
  return out;
}

const plan::Buffer* BufferNamed(const Executor& ex, const std::string& name) {
  for (const plan::Buffer& b : ex.plan().buffers()) {
    if (b.name() == name) return &b;
  }
  return nullptr;
}

void CheckOneStep(const Case& c) {
  SCOPED_TRACE(::testing::Message() << "shift " << c.shift << " ignore " << c.ignore_index);
  const std::string model = testing::UniqueTempPath("lm.onnxtxt");
  const std::string plan_path = testing::UniqueTempPath("lm.plan");
  std::ofstream(model) << kModel;
  CompileOptions opts;
  opts.model = model;
  opts.output = plan_path;
  TrainingConfig t;
  t.loss = "cross_entropy";
  t.has_class_axis = true;
  t.class_axis = -1;
  t.shift_labels = c.shift;
  t.ignore_index = c.ignore_index;
  t.optimizer = "sgd";
  t.lr = 1.0f;
  opts.config.training = t;
  Status s = Compile(opts, std::cout, [](const std::string&) {});
  ASSERT_TRUE(s.ok()) << s.message();
  auto file = ReadPlanFile(plan_path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto ex = Executor::Create(std::move(file).value(), MakeCpuBackend(), {});
  ASSERT_TRUE(ex.ok()) << ex.status().message();

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(kB * kT * kD);
  for (float& v : x) v = u(rng);
  std::vector<int64_t> labels = {1, 4, c.ignore_index, 0, 3, 2, 2, c.ignore_index};
  ASSERT_TRUE((*ex)->SetInput("x", x.data(), x.size() * sizeof(float)).ok());
  ASSERT_TRUE((*ex)->SetInput("labels", labels.data(), labels.size() * sizeof(int64_t)).ok());

  const plan::Buffer* wb = BufferNamed(**ex, "w");
  ASSERT_NE(wb, nullptr);
  const std::vector<float> w0 = ReadFloats(**ex, *wb);
  ASSERT_TRUE((*ex)->Run().ok());
  const std::vector<float> w1 = ReadFloats(**ex, *wb);
  const plan::Buffer* lb = (*ex)->FindOutput("loss");
  ASSERT_NE(lb, nullptr);
  const float loss = ReadFloats(**ex, *lb)[0];

  std::vector<double> w(w0.begin(), w0.end());
  const double ref = ReferenceLoss(w, x, labels, c);
  EXPECT_NEAR(loss, ref, 1e-5 * std::abs(ref));
  for (size_t i = 0; i < w.size(); ++i) {
    const double eps = 1e-6;
    std::vector<double> plus = w, minus = w;
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric =
        (ReferenceLoss(plus, x, labels, c) - ReferenceLoss(minus, x, labels, c)) / (2 * eps);
    const double analytic = static_cast<double>(w0[i]) - static_cast<double>(w1[i]);  // lr 1
    EXPECT_NEAR(analytic, numeric, 1e-5 + 1e-4 * std::abs(numeric)) << "w[" << i << "]";
  }
  std::filesystem::remove(model);
  std::filesystem::remove(plan_path);
}

TEST(SequenceLossTest, ClassAxisLastWithIgnoredLabels) { CheckOneStep({false, -100}); }

TEST(SequenceLossTest, ShiftedLabelsForACausalLm) { CheckOneStep({true, -100}); }

TEST(SequenceLossTest, AnotherIgnoreIndex) { CheckOneStep({true, 3}); }

}  // namespace
}  // namespace a8

// The random ops' kernel (kernels/device/random.h): the draws' distributions on large samples
// (uniform range, mean and variance; normal mean and variance; Bernoulli frequencies, exact at
// p = 0 and 1) in every float dtype; the CPU backend (which runs the shared body through its host
// launch) against cuda-emu bit for bit (against the GPU in a8_gpu_tests); and the streams: a
// `seed` attribute gives the same values every step and every run, no seed a fresh stream each
// step and each node. Their shape rules and traits: random_ops_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/types.h"
#include "kernels/common/philox.h"
#include "kernels/cpu/elementwise.h"  // cpu::Cast, used by device_test_util.h
#include "kernels/device/random.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/device_test_util.h"

namespace a8 {
namespace {

using B = plan::Buffer;
using Dims = std::vector<int64_t>;
using testing::AsDoubles;
using testing::PlanBuilder;
using Outputs = std::map<std::string, std::vector<uint8_t>>;

const DType kFloats[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};

// A plan of one random op writing `out` (dtype t, dims), its attributes set by `attrs`; `p` (if
// not empty) is the probability input of Bernoulli, or the -Like ops' input.
PlanFile OneRandom(const std::string& op, DType t, const Dims& dims,
                   const std::function<void(plan::Kernel*)>& attrs, DType in_type = DType::kF32,
                   const std::string& node = "rnd") {
  PlanBuilder pb;
  std::vector<int> ins;
  if (op != "RandomUniform" && op != "RandomNormal")
    ins.push_back(pb.Buffer("in", in_type, dims, B::INPUT));
  const int y = pb.Buffer("y", t, dims, B::OUTPUT);
  plan::Kernel* k = pb.Kernel(op, ins, {y});
  k->set_node(node);
  if (op == "RandomUniform" || op == "RandomNormal") PlanBuilder::Ints(k, "shape", dims);
  PlanBuilder::Int(k, "dtype", DTypeToOnnx(t));
  if (attrs) attrs(k);
  return pb.Finish();
}

std::vector<double> Draw(const PlanFile& f, DType t, const Outputs& in = {}, int steps = 1) {
  return AsDoubles(t, testing::RunOn(f, MakeCpuBackend(), in, steps)["y"]);
}

void ExpectMoments(const std::vector<double>& v, double mean, double var, double fourth,
                   const std::string& what) {
  const double n = static_cast<double>(v.size());
  double m = 0, s2 = 0;
  for (double x : v) m += x;
  m /= n;
  for (double x : v) s2 += (x - m) * (x - m);
  s2 /= n - 1;
  // Five standard errors, widened by the rounding of f16/bf16 draws (a uniform variable's
  // rounding error adds about ulp^2/12 to the variance).
  EXPECT_NEAR(m, mean, 5 * std::sqrt(var / n)) << what;
  EXPECT_NEAR(s2, var, 5 * std::sqrt((fourth - var * var) / n) + 0.01 * var) << what;
}

constexpr int64_t kSamples = 1 << 16;

TEST(RandomDistributionTest, UniformInRangeWithMeanAndVariance) {
  for (DType t : kFloats) {
    for (const std::string op : {"RandomUniform", "RandomUniformLike"}) {
      const double lo = -1.5, hi = 2.5;
      auto f = OneRandom(op, t, {256, kSamples / 256}, [&](plan::Kernel* k) {
        PlanBuilder::Float(k, "low", static_cast<float>(lo));
        PlanBuilder::Float(k, "high", static_cast<float>(hi));
      });
      std::vector<double> v = Draw(f, t);
      ASSERT_EQ(v.size(), static_cast<size_t>(kSamples));
      for (double x : v) ASSERT_TRUE(x >= lo && x < hi) << op << " " << x;
      const double w = hi - lo;
      ExpectMoments(v, (lo + hi) / 2, w * w / 12, std::pow(w, 4) / 80,
                    op + " " + std::string(DTypeName(t)));
    }
  }
}

TEST(RandomDistributionTest, NormalMeanAndVariance) {
  for (DType t : kFloats) {
    for (const std::string op : {"RandomNormal", "RandomNormalLike"}) {
      const double mean = 0.75, scale = 1.75;
      auto f = OneRandom(op, t, {kSamples}, [&](plan::Kernel* k) {
        PlanBuilder::Float(k, "mean", static_cast<float>(mean));
        PlanBuilder::Float(k, "scale", static_cast<float>(scale));
      });
      std::vector<double> v = Draw(f, t);
      const double var = scale * scale;
      ExpectMoments(v, mean, var, 3 * var * var, op + " " + std::string(DTypeName(t)));
      // The tails are there, in proportion: P(|z| > 2) = 0.0455.
      int64_t tails = 0;
      for (double x : v) tails += std::fabs(x - mean) > 2 * scale;
      EXPECT_NEAR(static_cast<double>(tails) / kSamples, 0.0455, 0.005) << DTypeName(t);
    }
  }
}

TEST(RandomDistributionTest, BernoulliFrequenciesAndExactEdges) {
  std::vector<float> p(kSamples);
  double sum_p = 0, sum_var = 0;
  for (int64_t i = 0; i < kSamples; ++i) {
    p[i] = i % 8 == 0 ? 0.0f : i % 8 == 1 ? 1.0f : static_cast<float>((i * 37) % 1000) / 1000.0f;
    sum_p += p[i];
    sum_var += static_cast<double>(p[i]) * (1 - p[i]);
  }
  for (DType out : {DType::kF32, DType::kF64, DType::kBool, DType::kI32, DType::kU8}) {
    auto f = OneRandom("Bernoulli", out, {kSamples}, nullptr);
    std::vector<double> v = Draw(f, out, {{"in", testing::Bytes(p)}});
    double ones = 0;
    for (int64_t i = 0; i < kSamples; ++i) {
      ASSERT_TRUE(v[i] == 0 || v[i] == 1) << v[i];
      if (p[i] == 0.0f || p[i] == 1.0f) {
        ASSERT_EQ(v[i], p[i]) << i;
      }
      ones += v[i];
    }
    EXPECT_NEAR(ones, sum_p, 5 * std::sqrt(sum_var)) << DTypeName(out);
  }
}

TEST(RandomKernelTest, CpuAndEmuDrawTheSameBits) {
  for (DType t : kFloats) {
    for (bool seeded : {false, true}) {
      auto attrs = [&](plan::Kernel* k) {
        if (seeded) PlanBuilder::Float(k, "seed", 3.0f);
      };
      for (const char* op :
           {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike"}) {
        SCOPED_TRACE(std::string(op) + " " + std::string(DTypeName(t)));
        testing::ExpectEmuMatchesCpu(OneRandom(op, t, {3, 1001}, attrs), {}, 0, 0, 2);
      }
      testing::ExpectEmuMatchesCpu(OneRandom("Bernoulli", DType::kI64, {3, 1001}, attrs, t),
                                   {{"in", testing::RandomBytes(t, 3003, 9, 0.0, 1.0)}}, 0, 0, 2);
    }
  }
}

TEST(RandomKernelTest, ASeedFixesTheValuesNoSeedDrawsPerStepAndNode) {
  auto seed = [](float s) { return [s](plan::Kernel* k) { PlanBuilder::Float(k, "seed", s); }; };
  const Dims d = {4096};
  // A seed: the same values at step 1 and step 3, in two runs, whatever the node's name.
  const auto seeded = Draw(OneRandom("RandomNormal", DType::kF32, d, seed(7.0f)), DType::kF32);
  EXPECT_EQ(Draw(OneRandom("RandomNormal", DType::kF32, d, seed(7.0f)), DType::kF32, {}, 3),
            seeded);
  EXPECT_EQ(Draw(OneRandom("RandomNormal", DType::kF32, d, seed(7.0f), DType::kF32, "other"),
                 DType::kF32),
            seeded);
  // Another seed (0.5 and 7 differ; so do 0 and 0.5), another stream.
  EXPECT_NE(Draw(OneRandom("RandomNormal", DType::kF32, d, seed(0.5f)), DType::kF32), seeded);
  EXPECT_NE(Draw(OneRandom("RandomNormal", DType::kF32, d, seed(0.0f)), DType::kF32),
            Draw(OneRandom("RandomNormal", DType::kF32, d, seed(0.5f)), DType::kF32));
  // No seed: reproducible run to run (the run's seed and the step), new at every step and for
  // every node.
  const auto free1 = Draw(OneRandom("RandomUniform", DType::kF32, d, nullptr), DType::kF32);
  EXPECT_EQ(Draw(OneRandom("RandomUniform", DType::kF32, d, nullptr), DType::kF32), free1);
  EXPECT_NE(Draw(OneRandom("RandomUniform", DType::kF32, d, nullptr), DType::kF32, {}, 2), free1);
  EXPECT_NE(
      Draw(OneRandom("RandomUniform", DType::kF32, d, nullptr, DType::kF32, "other"), DType::kF32),
      free1);
}

// The kernel alone, with a step the executor tests do not reach: the values depend on the
// step's seed and counter only when there is no seed attribute.
TEST(RandomKernelTest, ReadsStepAndSeedOnTheDevice) {
  const int64_t n = 513;
  std::vector<float> a(n), b(n), c(n);
  emu::StepDev step;
  step.step = 123456789012345;
  step.seed = 0x9e3779b97f4a7c15ull;
  emu::DevCtx ctx;
  ctx.step = &step;
  emu::random::RandomParams p;
  p.n = n;
  p.node_hash = 77;
  p.y = a.data();
  ASSERT_TRUE(emu::random::Random(ctx, p).ok());
  step.step += 1;
  p.y = b.data();
  ASSERT_TRUE(emu::random::Random(ctx, p).ok());
  EXPECT_NE(a, b);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(a[i], static_cast<float>(PhiloxUniform53(SplitMix64Finalize(step.seed ^ 77),
                                                       static_cast<uint64_t>(step.step - 1), i)));
  }
  // A fixed seed needs no step values.
  p.fixed_seed = true;
  p.seed_key = 5;
  p.y = c.data();
  emu::DevCtx no_step;
  ASSERT_TRUE(emu::random::Random(no_step, p).ok());
  EXPECT_EQ(c[0], static_cast<float>(PhiloxUniform53(5, 0, 0)));
  p.fixed_seed = false;
  EXPECT_FALSE(emu::random::Random(no_step, p).ok());
}

// An empty range: the shape rule refuses it at compile time (random_ops_test.cc), and the entry
// at run time, on both backends, for a plan that was edited.
TEST(RandomKernelTest, AnEmptyUniformRangeIsAnError) {
  auto f = OneRandom("RandomUniform", DType::kF32, {4}, [](plan::Kernel* k) {
    PlanBuilder::Float(k, "low", 2.0f);
    PlanBuilder::Float(k, "high", 1.0f);
  });
  auto ex = Executor::Create(f, MakeCpuBackend());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  Status run = (*ex)->Run();
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.message().find("attribute 'low' 2 must be below 'high' 1"), std::string::npos)
      << run.message();
  const emu::DevKernelEntry* entry = emu::FindDeviceKernel("RandomUniform");
  ASSERT_NE(entry, nullptr);
  std::vector<float> y(4);
  TensorArg out;
  out.dtype = DType::kF32;
  out.dims = {4};
  out.data = reinterpret_cast<uint8_t*>(y.data());
  out.present = true;
  KernelArgs args(&f.plan.kernels(0), {}, {out}, {});
  emu::DevCtx ctx;
  Status s = entry->fn(args, ctx);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("attribute 'low' 2 must be below 'high' 1"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace a8

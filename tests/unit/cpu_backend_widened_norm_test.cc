// The CPU backend's fast mode runs the shared normalization bodies on f32 copies of their f16/bf16
// operands (runtime/cpu/widened_operands.h): the results agree with the reference mode (which runs
// the bodies on the low-precision data itself) within each dtype's tolerance, and the operands
// that stay f32 (scale, bias, statistics) are read as they are.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/cpu_kernels_test_util.h"
#include "tests/unit/runtime_test_util.h"

namespace a8 {
namespace {

using B = plan::Buffer;
using cpu::testing::Buffer;
using cpu::testing::ExpectClose;
using cpu::testing::MakeBuffer;
using cpu::testing::RandomBuffer;
using cpu::testing::Values;

// Runs `f` (a one-kernel plan with input "x" and output "y" of `dims`) in `mode`; returns y.
Buffer RunMode(PlanFile f, cpu::KernelMode mode, const Buffer& x, DType t, const Dims& dims) {
  Buffer y = MakeBuffer(t, dims);
  auto ex = Executor::Create(std::move(f), MakeCpuBackend(mode));
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  if (!ex.ok()) return y;
  EXPECT_TRUE((*ex)->SetInput("x", x.data(), x.bytes.size()).ok());
  Status s = (*ex)->Run();
  EXPECT_TRUE(s.ok()) << s.message();
  const plan::Buffer* out = (*ex)->FindOutput("y");
  EXPECT_NE(out, nullptr);
  if (out == nullptr) return y;
  const uint8_t* p = (*ex)->BufferData(out->id());
  std::copy(p, p + y.bytes.size(), y.bytes.begin());
  return y;
}

class CpuWidenedNormTest : public ::testing::TestWithParam<DType> {
 protected:
  std::mt19937_64 rng_{31};
};

TEST_P(CpuWidenedNormTest, LayerNormalizationMatchesReference) {
  const DType t = GetParam();
  const Dims dims = {6, 5, 200};
  Buffer x = RandomBuffer(t, dims, rng_, -3.0, 3.0);
  Buffer scale = RandomBuffer(DType::kF32, {200}, rng_),
         bias = RandomBuffer(DType::kF32, {200}, rng_);
  auto plan = [&] {
    testing::PlanBuilder pb;
    const int xi = pb.Buffer("x", t, dims, B::INPUT);
    const int si = pb.Buffer("s", DType::kF32, {200}, B::PARAMETER, scale.data());
    const int bi = pb.Buffer("b", DType::kF32, {200}, B::PARAMETER, bias.data());
    const int yi = pb.Buffer("y", t, dims, B::OUTPUT);
    testing::PlanBuilder::Int(pb.Kernel("LayerNormalization", {xi, si, bi}, {yi}), "axis", -1);
    return pb.Finish();
  };
  const Buffer ref = RunMode(plan(), cpu::KernelMode::kReference, x, t, dims);
  const Buffer fast = RunMode(plan(), cpu::KernelMode::kFast, x, t, dims);
  // |y| is up to a few times |scale| + |bias|: compare on that scale.
  std::vector<double> mag(static_cast<size_t>(NumElements(dims)), 8.0);
  ExpectClose(fast, Values(ref), cpu::testing::ToleranceFor(t), &mag);
}

TEST_P(CpuWidenedNormTest, BatchNormalizationMatchesReference) {
  const DType t = GetParam();
  const Dims dims = {3, 7, 9, 11};
  Buffer x = RandomBuffer(t, dims, rng_, -3.0, 3.0);
  Buffer scale = RandomBuffer(DType::kF32, {7}, rng_), bias = RandomBuffer(DType::kF32, {7}, rng_);
  Buffer mean = RandomBuffer(DType::kF32, {7}, rng_, -0.5, 0.5);
  Buffer var = RandomBuffer(DType::kF32, {7}, rng_, 0.5, 2.0);
  auto plan = [&] {
    testing::PlanBuilder pb;
    const int xi = pb.Buffer("x", t, dims, B::INPUT);
    const int si = pb.Buffer("s", DType::kF32, {7}, B::PARAMETER, scale.data());
    const int bi = pb.Buffer("b", DType::kF32, {7}, B::PARAMETER, bias.data());
    const int mi = pb.Buffer("m", DType::kF32, {7}, B::PARAMETER, mean.data());
    const int vi = pb.Buffer("v", DType::kF32, {7}, B::PARAMETER, var.data());
    const int yi = pb.Buffer("y", t, dims, B::OUTPUT);
    testing::PlanBuilder::Float(pb.Kernel("BatchNormalization", {xi, si, bi, mi, vi}, {yi}),
                                "epsilon", 1e-5f);
    return pb.Finish();
  };
  const Buffer ref = RunMode(plan(), cpu::KernelMode::kReference, x, t, dims);
  const Buffer fast = RunMode(plan(), cpu::KernelMode::kFast, x, t, dims);
  std::vector<double> mag(static_cast<size_t>(NumElements(dims)), 8.0);
  ExpectClose(fast, Values(ref), cpu::testing::ToleranceFor(t), &mag);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CpuWidenedNormTest, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(ElemName(info.param)); });

}  // namespace
}  // namespace a8

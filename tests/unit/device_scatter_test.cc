// The kernels of ScatterND, ScatterElements and TopK (kernels/device/scatter.h): each against a
// direct sequential reference on random data on the CPU backend (which runs the shared body
// through its host launch), the device backend (cuda-emu here, the GPU in a8_gpu_tests) against
// the CPU, and out-of-range indices as a run error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"  // cpu::Cast, used by device_test_util.h
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/device_test_util.h"

namespace a8 {
namespace {

using testing::Str;
using B = plan::Buffer;
using testing::Bytes;
using Dims = std::vector<int64_t>;
using testing::PlanBuilder;

float Combine(const std::string& r, float acc, float u) {
  if (r == "add") return acc + u;
  if (r == "mul") return acc * u;
  if (r == "max") return std::max(acc, u);
  if (r == "min") return std::min(acc, u);
  return u;
}

const char* kReductions[] = {"none", "add", "mul", "max", "min"};

// data [5, 3, 4], tuples [6, 2] (repeats, negative components), updates [6, 4], applied in order.
TEST(ScatterKernelTest, ScatterNDMatchesSequentialReference) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-2, 2);
  std::vector<float> data(60), upd(24);
  for (float& v : data) v = d(rng);
  for (float& v : upd) v = d(rng);
  const std::vector<int64_t> idx = {0, 1, 4, -1, 0, 1, 2, 0, -5, -3, 3, 2};
  for (const char* red : kReductions) {
    std::vector<float> want = data;
    for (int t = 0; t < 6; ++t) {
      int64_t i0 = idx[2 * t], i1 = idx[2 * t + 1];
      if (i0 < 0) i0 += 5;
      if (i1 < 0) i1 += 3;
      for (int s = 0; s < 4; ++s) {
        float& y = want[(i0 * 3 + i1) * 4 + s];
        y = Combine(red, y, upd[t * 4 + s]);
      }
    }
    for (DType it : {DType::kI64, DType::kI32}) {
      PlanBuilder pb;
      const int x = pb.Buffer("x", DType::kF32, {5, 3, 4}, B::INPUT);
      const int i = pb.Buffer("i", it, {6, 2}, B::INPUT);
      const int u = pb.Buffer("u", DType::kF32, {6, 4}, B::INPUT);
      const int y = pb.Buffer("y", DType::kF32, {5, 3, 4}, B::OUTPUT);
      Str(pb.Kernel("ScatterND", {x, i, u}, {y}), "reduction", red);
      std::map<std::string, std::vector<uint8_t>> in = {
          {"x", Bytes(data)},
          {"u", Bytes(upd)},
          {"i",
           it == DType::kI64 ? Bytes(idx) : Bytes(std::vector<int32_t>(idx.begin(), idx.end()))}};
      PlanFile f = pb.Finish();
      auto got = testing::RunOn(f, MakeCpuBackend(), in);
      EXPECT_EQ(got["y"], Bytes(want)) << red;
      testing::ExpectEmuMatchesCpu(f, in, 0, 0);
    }
  }
}

// data [4, 5] along axis 1 (and 0), indices [3, 6] / [6, 4] (repeats, negative values).
TEST(ScatterKernelTest, ScatterElementsMatchesSequentialReference) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-2, 2);
  for (int64_t axis : {1, 0}) {
    const Dims idims = axis == 1 ? Dims{3, 6} : Dims{6, 4};
    const int64_t len = axis == 1 ? 5 : 4;
    std::vector<float> data(20), upd(idims[0] * idims[1]);
    for (float& v : data) v = d(rng);
    for (float& v : upd) v = d(rng);
    std::vector<int64_t> idx(upd.size());
    for (int64_t& v : idx) v = std::uniform_int_distribution<int64_t>(-len, len - 1)(rng);
    for (const char* red : kReductions) {
      std::vector<float> want = data;
      // Row-major over indices: along the axis in order for each fixed other coordinate.
      for (int64_t a = 0; a < idims[0]; ++a) {
        for (int64_t b = 0; b < idims[1]; ++b) {
          int64_t k = idx[a * idims[1] + b];
          if (k < 0) k += len;
          float& y = want[axis == 1 ? a * 5 + k : k * 5 + b];
          y = Combine(red, y, upd[a * idims[1] + b]);
        }
      }
      PlanBuilder pb;
      const int x = pb.Buffer("x", DType::kF32, {4, 5}, B::INPUT);
      const int i = pb.Buffer("i", DType::kI64, idims, B::INPUT);
      const int u = pb.Buffer("u", DType::kF32, idims, B::INPUT);
      const int y = pb.Buffer("y", DType::kF32, {4, 5}, B::OUTPUT);
      plan::Kernel* k = pb.Kernel("ScatterElements", {x, i, u}, {y});
      Str(k, "reduction", red);
      PlanBuilder::Int(k, "axis", axis);
      std::map<std::string, std::vector<uint8_t>> in = {
          {"x", Bytes(data)}, {"u", Bytes(upd)}, {"i", Bytes(idx)}};
      PlanFile f = pb.Finish();
      auto got = testing::RunOn(f, MakeCpuBackend(), in);
      EXPECT_EQ(got["y"], Bytes(want)) << red << " axis " << axis;
      testing::ExpectEmuMatchesCpu(f, in, 0, 0);
    }
  }
}

TEST(ScatterKernelTest, OtherTypesAreBitForBitOnEmu) {
  for (DType t : {DType::kF16, DType::kBF16, DType::kF64, DType::kI32, DType::kU8, DType::kBool}) {
    for (const char* red : kReductions) {
      PlanBuilder pb;
      const int x = pb.Buffer("x", t, {6, 3}, B::INPUT);
      const int i = pb.Buffer("i", DType::kI64, {5, 1}, B::INPUT);
      const int u = pb.Buffer("u", t, {5, 3}, B::INPUT);
      const int y = pb.Buffer("y", t, {6, 3}, B::OUTPUT);
      Str(pb.Kernel("ScatterND", {x, i, u}, {y}), "reduction", red);
      testing::ExpectEmuMatchesCpu(pb.Finish(),
                                   {{"i", Bytes(std::vector<int64_t>{1, 5, 1, -2, 0})}}, 0, 0);
    }
  }
}

TEST(ScatterKernelTest, IndexOutOfRangeIsARunError) {
  for (const char* op : {"ScatterND", "ScatterElements"}) {
    PlanBuilder pb;
    const bool nd = std::string(op) == "ScatterND";
    const int x = pb.Buffer("x", DType::kF32, {4, 2}, B::INPUT);
    const int i = pb.Buffer("i", DType::kI64, nd ? Dims{2, 1} : Dims{2, 2}, B::INPUT);
    const int u = pb.Buffer("u", DType::kF32, {2, 2}, B::INPUT);
    const int y = pb.Buffer("y", DType::kF32, {4, 2}, B::OUTPUT);
    pb.Kernel(op, {x, i, u}, {y});
    std::vector<int64_t> idx = nd ? std::vector<int64_t>{1, 4} : std::vector<int64_t>{0, 1, -5, 0};
    const PlanFile f = pb.Finish();
    SCOPED_TRACE(op);
    testing::OnCpuThenDevice([&](std::unique_ptr<Backend> backend) {
      auto ex = Executor::Create(f, std::move(backend));
      ASSERT_TRUE(ex.ok()) << ex.status().message();
      std::vector<float> xs(8, 1.0f), us(4, 2.0f);
      ASSERT_TRUE((*ex)->SetInput("x", xs.data(), 32).ok());
      ASSERT_TRUE((*ex)->SetInput("u", us.data(), 16).ok());
      ASSERT_TRUE((*ex)->SetInput("i", idx.data(), idx.size() * 8).ok());
      Status s = (*ex)->Run();
      ASSERT_FALSE(s.ok());
      EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();
    });
  }
}

// x [3, 7, 2] along axis 1 with many ties (values from a few integers): the reference is a stable
// sort of each row (descending for largest), the first k.
TEST(TopKKernelTest, MatchesStableSortAndEmu) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> d(-2, 2);
  std::vector<float> x(42);
  for (float& v : x) v = static_cast<float>(d(rng));
  x[5] = std::nanf("");
  for (int largest : {1, 0}) {
    for (int64_t k : {7, 3, 0}) {
      std::vector<float> wv;
      std::vector<int64_t> wi;
      std::vector<float> vals(3 * k * 2);
      std::vector<int64_t> inds(3 * k * 2);
      for (int o = 0; o < 3; ++o) {
        for (int c = 0; c < 2; ++c) {
          std::vector<int64_t> order(7);
          std::iota(order.begin(), order.end(), 0);
          auto at = [&](int64_t j) { return x[(o * 7 + j) * 2 + c]; };
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            const float va = at(a), vb = at(b);
            if (std::isnan(va) || std::isnan(vb))
              return largest ? std::isnan(va) && !std::isnan(vb)
                             : std::isnan(vb) && !std::isnan(va);
            return largest ? va > vb : va < vb;
          });
          for (int64_t j = 0; j < k; ++j) {
            vals[(o * k + j) * 2 + c] = at(order[j]);
            inds[(o * k + j) * 2 + c] = order[j];
          }
        }
      }
      PlanBuilder pb;
      const int xb = pb.Buffer("x", DType::kF32, {3, 7, 2}, B::INPUT);
      const int kb = pb.Buffer("k", DType::kI64, {1}, B::INPUT);
      const int vb = pb.Buffer("v", DType::kF32, {3, k, 2}, B::OUTPUT);
      const int ib = pb.Buffer("ind", DType::kI64, {3, k, 2}, B::OUTPUT);
      plan::Kernel* kern = pb.Kernel("TopK", {xb, kb}, {vb, ib});
      PlanBuilder::Int(kern, "axis", 1);
      PlanBuilder::Int(kern, "largest", largest);
      std::map<std::string, std::vector<uint8_t>> in = {{"x", Bytes(x)},
                                                        {"k", Bytes(std::vector<int64_t>{k})}};
      PlanFile f = pb.Finish();
      auto got = testing::RunOn(f, MakeCpuBackend(), in);
      EXPECT_EQ(got["v"], Bytes(vals)) << "largest " << largest << " k " << k;
      EXPECT_EQ(got["ind"], Bytes(inds)) << "largest " << largest << " k " << k;
      testing::ExpectEmuMatchesCpu(f, in, 0, 0);
    }
  }
}

}  // namespace
}  // namespace a8

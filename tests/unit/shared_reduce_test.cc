// The reduction bodies shared by the CPU and CUDA backends (kernels/device/reduce_impl.h, set up
// by reduce_setup.h), run on the host as the CPU backend and constant folding run them: every
// op over axis sets against float64, the chunked order of long float sums to the bit, ArgMax /
// ArgMin's first and last index. (DeviceReduceTest runs the entries through both backends.)
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/device/reduce_setup.h"
#include "kernels/emu/run_on_host.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using namespace testing;  // cpu::testing: Buffer, ExpectClose, ExpectRoundedExactly, FromValues,
                          // MakeBuffer, RandomBuffer, Values
using Op = emu::DevReduceOp;

const char* OpName(Op op) {
  static const char* const kNames[] = {"ReduceSum", "ReduceMean", "ReduceMax",
                                       "ReduceMin", "ReduceProd", "ReduceSumSquare",
                                       "ReduceL1",  "ReduceL2",   "ReduceLogSumExp"};
  return kNames[static_cast<int>(op)];
}

Status SharedReduce(Op op, DType dt, const Dims& dims, const std::vector<int64_t>& axes,
                    const void* x, void* y) {
  A8_ASSIGN_OR_RETURN(const std::vector<bool> reduced, emu::ReducedAxes(dims, axes, OpName(op)));
  emu::ReduceParams p;
  p.op = op;
  p.dtype = dt;
  A8_RETURN_IF_ERROR(emu::SetReduceShape(dims, reduced, OpName(op), &p));
  p.x = x;
  p.y = y;
  return emu::RunOnHost([&p](emu::DevCtx& ctx) { return emu::Reduce(ctx, p); });
}

Dims OutputDims(const Dims& dims, const std::vector<int64_t>& axes, bool keepdims) {
  auto reduced = emu::ReducedAxes(dims, axes, "Reduce");
  EXPECT_TRUE(reduced.ok()) << reduced.status().message();
  return emu::ReducedDims(dims, *reduced, keepdims);
}

Status SharedArgReduce(bool is_max, DType dt, const Dims& dims, int64_t axis, bool select_last,
                       const void* x, int64_t* y) {
  A8_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, static_cast<int64_t>(dims.size()), "Arg"));
  emu::ArgReduceParams p;
  p.is_max = is_max;
  p.select_last = select_last;
  p.dtype = dt;
  for (int64_t i = 0; i < a; ++i) p.view.outer *= dims[i];
  p.view.len = dims[a];
  for (size_t i = a + 1; i < dims.size(); ++i) p.view.inner *= dims[i];
  p.x = x;
  p.y = y;
  return emu::RunOnHost([&p](emu::DevCtx& ctx) { return emu::ArgReduce(ctx, p); });
}

// Groups the input elements by output element (reduced axes dropped), in row-major order.
std::vector<std::vector<double>> GroupByOutput(const Dims& dims, std::vector<int64_t> axes,
                                               const std::vector<double>& x) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> red(rank, axes.empty());
  for (int64_t a : axes) red[a < 0 ? a + rank : a] = true;
  int64_t out_n = 1;
  for (int64_t i = 0; i < rank; ++i) out_n *= red[i] ? 1 : dims[i];
  std::vector<std::vector<double>> groups(out_n);
  for (int64_t e = 0; e < static_cast<int64_t>(x.size()); ++e) {
    int64_t rest = e, o = 0, stride = 1;
    for (int64_t i = rank - 1; i >= 0; --i) {
      int64_t c = rest % dims[i];
      rest /= dims[i];
      if (!red[i]) o += c * stride, stride *= dims[i];
    }
    groups[o].push_back(x[e]);
  }
  return groups;
}

// Values DeviceReduceTest compares only between the backends (which run this one body): a
// zero-sized reduced axis gives each op's identity (ONNX-18: -inf for Max, +inf for Min), and a
// NaN makes Max, Min and Sum NaN.
TEST(SharedReduceTest, EmptyReductionsAndNaNsAgainstLiterals) {
  const double kNaN = std::nan(""), kInf = INFINITY;
  for (DType dt : {DType::kF32, DType::kF64}) {
    SCOPED_TRACE(ElemName(dt));
    Buffer empty = MakeBuffer(dt, {4, 0});
    const std::pair<Op, double> identities[] = {
        {Op::kSum, 0}, {Op::kMean, kNaN}, {Op::kMax, -kInf}, {Op::kMin, kInf}, {Op::kProd, 1}};
    for (const auto& [op, want] : identities) {
      Buffer y = MakeBuffer(dt, {4, 1});
      ASSERT_TRUE(SharedReduce(op, dt, {4, 0}, {1}, empty.data(), y.data()).ok());
      for (double v : Values(y)) {
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(v)) << OpName(op) << " " << v;
        } else {
          EXPECT_EQ(v, want) << OpName(op);
        }
      }
    }
    Buffer x = FromValues(dt, {2, 3}, {1, kNaN, 2, 3, 4, 5});
    const std::pair<Op, double> second_row[] = {{Op::kMax, 5}, {Op::kMin, 3}, {Op::kSum, 12}};
    for (const auto& [op, want] : second_row) {
      Buffer y = MakeBuffer(dt, {2, 1});
      ASSERT_TRUE(SharedReduce(op, dt, {2, 3}, {1}, x.data(), y.data()).ok());
      const std::vector<double> got = Values(y);
      EXPECT_TRUE(std::isnan(got[0])) << OpName(op) << " " << got[0];
      EXPECT_EQ(got[1], want) << OpName(op);
    }
  }
}

TEST(SharedReduceTest, AllOpsOverAxisSetsAgainstFloat64) {
  const Dims dims = {3, 17, 5};
  const std::vector<std::vector<int64_t>> axis_sets = {{}, {0}, {1}, {-1}, {0, 2}, {1, 2}};
  std::mt19937_64 rng(30);
  for (int op_i = 0; op_i <= static_cast<int>(Op::kLogSumExp); ++op_i) {
    const Op op = static_cast<Op>(op_i);
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI32}) {
      // Integer L2 and LogSumExp (computed in double, truncated): DeviceReduceTest.
      const bool int_ok = op != Op::kL2 && op != Op::kLogSumExp;
      if (dt == DType::kI32 && !int_ok) continue;
      for (const auto& axes : axis_sets) {
        SCOPED_TRACE("op " + std::to_string(op_i) + " " + ElemName(dt) + " axes " +
                     std::to_string(axes.size()) + (axes.empty() ? "" : std::to_string(axes[0])));
        const bool prod = op == Op::kProd;
        Buffer x = dt == DType::kI32 ? RandomBuffer(dt, dims, rng, prod ? -1 : -9, prod ? 3 : 9)
                                     : RandomBuffer(dt, dims, rng, prod ? 0.7 : -3, prod ? 1.3 : 3);
        Buffer y = MakeBuffer(dt, OutputDims(dims, axes, true));
        const Status s = SharedReduce(op, dt, dims, axes, x.data(), y.data());
        ASSERT_TRUE(s.ok()) << s.message();
        std::vector<double> want, mag;
        for (const auto& g : GroupByOutput(dims, axes, Values(x))) {
          double s = 0, sa = 0, p = 1, mx = -INFINITY, mn = INFINITY, sq = 0, l1 = 0;
          for (double v : g) {
            s += v, sa += std::fabs(v), p *= v, sq += v * v, l1 += std::fabs(v);
            mx = std::max(mx, v), mn = std::min(mn, v);
          }
          double n = static_cast<double>(g.size()), r = 0, m = sa;
          switch (op) {
            case Op::kSum:
              r = s;
              break;
            case Op::kMean:
              r = dt == DType::kI32 ? std::trunc(s / n) : s / n;
              m = sa / n;
              break;
            case Op::kMax:
              r = mx;
              break;
            case Op::kMin:
              r = mn;
              break;
            case Op::kProd:
              r = p, m = std::fabs(p) * n;
              break;
            case Op::kSumSquare:
              r = sq, m = sq;
              break;
            case Op::kL1:
              r = l1;
              break;
            case Op::kL2:
              r = std::sqrt(sq), m = r;
              break;
            case Op::kLogSumExp: {
              double e = 0;
              for (double v : g) e += std::exp(v - mx);
              r = mx + std::log(e);
              m = std::fabs(r) + 1;
              break;
            }
          }
          want.push_back(r);
          mag.push_back(m);
        }
        if (dt == DType::kI32 || op == Op::kMax || op == Op::kMin) {
          ExpectRoundedExactly(y, want);
        } else {
          ExpectClose(y, want, 2 * testing::ToleranceFor(dt), &mag);
        }
      }
    }
  }
  EXPECT_EQ(SharedReduce(Op::kSum, DType::kF32, dims, {3}, nullptr, nullptr).message(),
            "ReduceSum: axis 3 is out of range for rank 3");
  EXPECT_EQ(SharedReduce(Op::kSum, DType::kF32, dims, {1, -2}, nullptr, nullptr).message(),
            "ReduceSum: axis -2 is repeated");
  EXPECT_EQ(OutputDims(dims, {0, 2}, false), (Dims{17}));
}

// A float sum of more than kSumChunk terms adds chunks of kSumChunk in order, each from 0, then
// the chunks' sums (kernels/common/sum_order.h): the bits of that loop written out here, and
// within f32's tolerance of float64. 300 rows of 6 reduced over the rows (a bias gradient: the
// host's tile of neighbouring outputs, ReduceKernel::ChunkSums) and over everything.
TEST(SharedReduceTest, LongFloatSumsAddInChunksOf64) {
  const Dims dims = {300, 6};
  std::mt19937_64 rng(31);
  Buffer x = RandomBuffer(DType::kF32, dims, rng, -3, 3);
  const float* xv = reinterpret_cast<const float*>(x.data());
  auto chunked = [&](int64_t first, int64_t count, int64_t stride) {
    float s = 0, chunk = 0;
    for (int64_t r = 0; r < count; ++r) {
      chunk += xv[first + r * stride];
      if ((r + 1) % 64 == 0 || r + 1 == count) s += chunk, chunk = 0;
    }
    return s;
  };
  for (const auto& axes : {std::vector<int64_t>{0}, std::vector<int64_t>{}}) {
    SCOPED_TRACE(axes.empty() ? "all axes" : "axis 0");
    Buffer y = MakeBuffer(DType::kF32, OutputDims(dims, axes, false));
    ASSERT_TRUE(SharedReduce(Op::kSum, DType::kF32, dims, axes, x.data(), y.data()).ok());
    const float* yv = reinterpret_cast<const float*>(y.data());
    std::vector<double> want, mag;
    for (const auto& g : GroupByOutput(dims, axes, Values(x))) {
      double s = 0, m = 0;
      for (double v : g) s += v, m += std::fabs(v);
      want.push_back(s);
      mag.push_back(m);
    }
    ExpectClose(y, want, 2 * testing::ToleranceFor(DType::kF32), &mag);
    if (axes.empty()) {
      EXPECT_EQ(yv[0], chunked(0, 300 * 6, 1));
    } else {
      for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(yv[j], chunked(j, 300, 6)) << "output " << j;
    }
  }
  // The same values as [4, 150, 3] over the middle axis: outputs that are not neighbours in
  // memory, which the host sums one at a time (ReduceKernel::ChunkSums), three chunks each.
  const Dims mid = {4, 150, 3};
  Buffer y = MakeBuffer(DType::kF32, OutputDims(mid, {1}, false));
  ASSERT_TRUE(SharedReduce(Op::kSum, DType::kF32, mid, {1}, x.data(), y.data()).ok());
  const float* yv = reinterpret_cast<const float*>(y.data());
  for (int64_t o = 0; o < 4; ++o) {
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(yv[o * 3 + j], chunked(o * 450 + j, 150, 3)) << "output " << o << ", " << j;
    }
  }
}

// A bias gradient wider than the host's tile of neighbouring outputs (64): [130, 100] over the
// rows, so the tiles of one chunk split the row, to the bits of the chunked loop.
TEST(SharedReduceTest, ColumnSumsWiderThanATile) {
  const Dims dims = {130, 100};
  std::mt19937_64 rng(32);
  Buffer x = RandomBuffer(DType::kF32, dims, rng, -3, 3);
  const float* xv = reinterpret_cast<const float*>(x.data());
  Buffer y = MakeBuffer(DType::kF32, OutputDims(dims, {0}, false));
  ASSERT_TRUE(SharedReduce(Op::kSum, DType::kF32, dims, {0}, x.data(), y.data()).ok());
  const float* yv = reinterpret_cast<const float*>(y.data());
  for (int64_t j = 0; j < 100; ++j) {
    float s = 0, chunk = 0;
    for (int64_t r = 0; r < 130; ++r) {
      chunk += xv[r * 100 + j];
      if ((r + 1) % 64 == 0 || r + 1 == 130) s += chunk, chunk = 0;
    }
    EXPECT_EQ(yv[j], s) << "output " << j;
  }
}

TEST(SharedReduceTest, ArgMaxArgMinFirstAndLastIndex) {
  Buffer x = FromValues(DType::kF16, {2, 4}, {1, 5, 5, 2, 7, 0, 7, 0});
  std::vector<int64_t> y(2);
  ASSERT_TRUE(SharedArgReduce(true, DType::kF16, {2, 4}, 1, false, x.data(), y.data()).ok());
  EXPECT_EQ(y, (std::vector<int64_t>{1, 0}));
  ASSERT_TRUE(SharedArgReduce(true, DType::kF16, {2, 4}, -1, true, x.data(), y.data()).ok());
  EXPECT_EQ(y, (std::vector<int64_t>{2, 2}));
  ASSERT_TRUE(SharedArgReduce(false, DType::kF16, {2, 4}, 1, true, x.data(), y.data()).ok());
  EXPECT_EQ(y, (std::vector<int64_t>{0, 3}));
  std::vector<int64_t> y0(4);
  ASSERT_TRUE(SharedArgReduce(false, DType::kF16, {2, 4}, 0, false, x.data(), y0.data()).ok());
  EXPECT_EQ(y0, (std::vector<int64_t>{0, 1, 0, 1}));

  std::mt19937_64 rng(31);
  Buffer r = RandomBuffer(DType::kI32, {5, 17, 3}, rng, -1000, 1000);
  std::vector<int64_t> ym(15);
  ASSERT_TRUE(SharedArgReduce(true, DType::kI32, {5, 17, 3}, 1, false, r.data(), ym.data()).ok());
  std::vector<double> rv = Values(r);
  for (int64_t o = 0; o < 5; ++o) {
    for (int64_t i = 0; i < 3; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < 17; ++k) {
        if (rv[(o * 17 + k) * 3 + i] > rv[(o * 17 + best) * 3 + i]) best = k;
      }
      EXPECT_EQ(ym[o * 3 + i], best);
    }
  }
}

}  // namespace
}  // namespace a8::cpu

// The reduction family's entries (runtime/device/ops_reduce.cc over kernels/device/reduce_impl.h,
// softmax_impl.h) on cuda-emu against the CPU backend: every op, every dtype its entry takes, odd
// sizes, axis sets that are contiguous or not, negative axes, keepdims, the optional axes input
// and the attributes that change the result. Softmax/LogSoftmax and a8.GlobalNormSq meet the
// CPU's own kernels here; Reduce*, ArgMax/ArgMin, CumSum and the Softmax gradients are one entry
// on both backends, so these checks hold the two backends' operand handling to the same bits, and
// the math is checked against float64 (SharedReduceTest, the CumSum tests below).
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"  // cpu::Cast, which device_test_util.h uses
#include "kernels/device/reduce.h"
#include "kernels/device/reduce_setup.h"
#include "tests/unit/device_test_util.h"

namespace a8::testing {
namespace {

using B = plan::Buffer;
using Attrs = std::function<void(plan::Kernel*)>;

std::string Where(const std::string& op, DType t, const cpu::Dims& dims) {
  return fmt::format("{} {} [{}]", op, DTypeName(t), fmt::join(dims, ","));
}

// A plan of one kernel: x (input) [, axes (a CONSTANT i64, when given)] -> y (out_dtype).
PlanFile OneKernel(const std::string& op, DType t, const cpu::Dims& dims,
                   const std::optional<std::vector<int64_t>>& axes, const cpu::Dims& out_dims,
                   DType out_dtype, const Attrs& attrs = nullptr) {
  PlanBuilder pb;
  std::vector<int> in = {pb.Buffer("x", t, dims, B::INPUT)};
  if (axes.has_value()) {
    in.push_back(pb.Buffer("axes", DType::kI64, {static_cast<int64_t>(axes->size())}, B::CONSTANT,
                           axes->data()));
  }
  const int y = pb.Buffer("y", out_dtype, out_dims, B::OUTPUT);
  plan::Kernel* k = pb.Kernel(op, in, {y});
  if (attrs) attrs(k);
  return pb.Finish();
}

// Runs `f` on cuda-emu; the first error (Create or Run), or Ok.
Status RunEmu(PlanFile f, const std::map<std::string, std::vector<uint8_t>>& inputs) {
  A8_ASSIGN_OR_RETURN(auto be, MakeCudaEmuBackend());
  A8_ASSIGN_OR_RETURN(auto ex, Executor::Create(std::move(f), std::move(be)));
  for (const auto& [name, bytes] : inputs)
    A8_RETURN_IF_ERROR(ex->SetInput(name, bytes.data(), bytes.size()));
  return ex->Run();
}

struct ReduceCase {
  cpu::Dims dims;
  std::vector<int64_t> axes;
  bool keepdims;
  bool axes_as_attr;  // opset < 18: the `axes` attribute instead of the input
};

const ReduceCase kReduceCases[] = {
    {{3, 5, 7}, {1}, true, false},          // middle axis, strided
    {{3, 5, 7}, {0, 2}, false, false},      // non-contiguous axis set
    {{2, 3, 4, 5}, {-1, -3}, true, false},  // negative axes
    {{4, 9}, {}, false, false},             // all axes (empty list)
    {{5, 1, 3}, {1, 2}, false, false},      // size-1 axis merged away
    {{3, 5, 7}, {2}, false, true},          // axes attribute, last axis
    {{17, 33}, {0}, true, false},           // odd sizes, outer axis
    {{2, 3, 1, 4, 3}, {0, 2, 3}, false, false},
    // Float sums of more than 64 terms add chunks of 64 (kernels/common/sum_order.h): a bias
    // gradient's shape, a strided middle axis, and chunks that cross an axis.
    {{150, 7}, {0}, false, false},
    {{3, 130, 5}, {1}, false, false},
    {{3, 50, 4}, {0, 1}, true, false},
};

TEST(DeviceReduceTest, EveryReduceOpEveryDtypeMatchesCpu) {
  const char* ops[] = {"ReduceSum",       "ReduceMean", "ReduceMax", "ReduceMin",      "ReduceProd",
                       "ReduceSumSquare", "ReduceL1",   "ReduceL2",  "ReduceLogSumExp"};
  for (const char* op : ops) {
    for (DType t : kNumericTypes) {
      for (const ReduceCase& c : kReduceCases) {
        SCOPED_TRACE(Where(op, t, c.dims) + fmt::format(" axes [{}]", fmt::join(c.axes, ",")));
        auto reduced = emu::ReducedAxes(c.dims, c.axes, "Reduce");
        ASSERT_TRUE(reduced.ok());
        const cpu::Dims out_dims = emu::ReducedDims(c.dims, *reduced, c.keepdims);
        Attrs attrs = [&](plan::Kernel* k) {
          PlanBuilder::Int(k, "keepdims", c.keepdims ? 1 : 0);
          if (c.axes_as_attr) PlanBuilder::Ints(k, "axes", c.axes);
        };
        std::optional<std::vector<int64_t>> axes_in;
        if (!c.axes_as_attr && !c.axes.empty()) axes_in = c.axes;
        PlanFile f = OneKernel(op, t, c.dims, axes_in, out_dims, t, attrs);
        // Products of values in [-2, 2] over dozens of elements leave the float range; small
        // integers keep them finite and exercise the integer wrap-around the same way.
        std::map<std::string, std::vector<uint8_t>> inputs;
        const int64_t n = cpu::NumElements(c.dims);
        if (std::string(op) == "ReduceProd") inputs["x"] = SmallInts(t, n, 7, -2, 2);
        // The same arithmetic in the same order: bit-identical.
        ExpectEmuMatchesCpu(f, inputs, 0, 0);
      }
    }
  }
}

// Bool ReduceMax is "any" and ReduceMin "all" (one device body, which the CPU backend runs on
// the host): every pattern of up to 5 reduced elements, an empty reduced axis (Max false, Min
// true, as ONNX defines), and random bools over the axis sets of kReduceCases, each against an
// any / all written here.
TEST(DeviceReduceTest, BoolMaxMinAreAnyAllOverEveryPattern) {
  auto expect = [](const PlanFile& f, const std::vector<uint8_t>& x,
                   const std::vector<uint8_t>& want) {
    OnCpuThenDevice([&](std::unique_ptr<Backend> backend) {
      ASSERT_EQ(RunOn(f, std::move(backend), {{"x", x}})["y"], want);
    });
  };
  for (bool is_max : {true, false}) {
    const char* op = is_max ? "ReduceMax" : "ReduceMin";
    // Row p of [2^k, k] holds the bits of p: every pattern; k = 0 is the empty set.
    for (int64_t k = 0; k <= 5; ++k) {
      SCOPED_TRACE(fmt::format("{} over {} elements", op, k));
      const int64_t rows = int64_t{1} << k;
      std::vector<uint8_t> x(static_cast<size_t>(rows * k)), want(static_cast<size_t>(rows));
      for (int64_t p = 0; p < rows; ++p) {
        bool any = false, all = true;
        for (int64_t j = 0; j < k; ++j) {
          x[p * k + j] = (p >> j) & 1;
          any = any || x[p * k + j];
          all = all && x[p * k + j];
        }
        want[p] = is_max ? any : all;
      }
      expect(OneKernel(op, DType::kBool, {rows, k}, std::vector<int64_t>{1}, {rows}, DType::kBool),
             x, want);
    }
    for (const ReduceCase& c : kReduceCases) {
      SCOPED_TRACE(Where(op, DType::kBool, c.dims) +
                   fmt::format(" axes [{}]", fmt::join(c.axes, ",")));
      auto red_mask = emu::ReducedAxes(c.dims, c.axes, "Reduce");
      ASSERT_TRUE(red_mask.ok());
      const cpu::Dims out_dims = emu::ReducedDims(c.dims, *red_mask, c.keepdims);
      const int64_t n = cpu::NumElements(c.dims), rank = static_cast<int64_t>(c.dims.size());
      // Mostly one value, so that any / all both vary across the outputs.
      std::mt19937 rng(static_cast<uint32_t>(n));
      std::bernoulli_distribution bit(is_max ? 0.08 : 0.92);
      std::vector<uint8_t> x(static_cast<size_t>(n));
      for (uint8_t& v : x) v = bit(rng);
      // The reference: each element joins the output at its kept coordinates.
      std::vector<bool> reduced(c.dims.size(), c.axes.empty());
      for (int64_t a : c.axes) reduced[a < 0 ? a + rank : a] = true;
      std::vector<uint8_t> want(static_cast<size_t>(cpu::NumElements(out_dims)), is_max ? 0 : 1);
      for (int64_t i = 0; i < n; ++i) {
        int64_t rest = i, o = 0, scale = 1;
        for (int64_t d = rank - 1; d >= 0; --d) {
          const int64_t coord = rest % c.dims[d];
          rest /= c.dims[d];
          if (reduced[d]) continue;
          o += coord * scale;
          scale *= c.dims[d];
        }
        want[o] = is_max ? (want[o] | x[i]) : (want[o] & x[i]);
      }
      Attrs attrs = [&](plan::Kernel* k) {
        PlanBuilder::Int(k, "keepdims", c.keepdims ? 1 : 0);
        if (c.axes_as_attr) PlanBuilder::Ints(k, "axes", c.axes);
      };
      std::optional<std::vector<int64_t>> axes_in;
      if (!c.axes_as_attr && !c.axes.empty()) axes_in = c.axes;
      expect(OneKernel(op, DType::kBool, c.dims, axes_in, out_dims, DType::kBool, attrs), x, want);
    }
  }
  // The other reductions have no bool kernel: a clear error, not a value.
  auto ex = Executor::Create(
      OneKernel("ReduceSum", DType::kBool, {2, 3}, std::vector<int64_t>{1}, {2}, DType::kBool),
      MakeCpuBackend());
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("does not take bool"), std::string::npos)
      << ex.status().message();
}

// Integer ReduceL2 / ReduceLogSumExp compute in double and store like a Cast
// (kernels/common/float_to_int.h, one definition for both backends): at the range edges the
// result leaves the type, and the CPU and the device wrap it the same way.
TEST(DeviceReduceTest, IntegerL2AndLogSumExpAtTheRangeEdges) {
  struct Edge {
    const char* op;
    DType t;
    std::vector<uint64_t> x;  // two elements, reduced over axis 1
    uint64_t want;
  };
  const uint64_t u32_max = 4294967295u, u64_max = ~uint64_t{0};
  const Edge edges[] = {
      // sqrt(2) * (2^32 - 1) = 6074000998.54: truncated through i64, wrapped to u32.
      {"ReduceL2", DType::kU32, {u32_max, u32_max}, 6074000998u - 4294967296u},
      // sqrt(2) * 2^64 is above u64: out of range gives i64's minimum, 2^63 as u64.
      {"ReduceL2", DType::kU64, {u64_max, u64_max}, uint64_t{1} << 63},
      // (2^64 - 1) itself squared is 2^128 in double: sqrt gives 2^64, out of range again.
      {"ReduceL2", DType::kU64, {u64_max, 0}, uint64_t{1} << 63},
      {"ReduceL2", DType::kU64, {3, 4}, 5},
      // log(2 e^m) = m + log 2 for m = 2^64 - 1 (2^64 in double): out of range.
      {"ReduceLogSumExp", DType::kU64, {u64_max, u64_max}, uint64_t{1} << 63},
      // m = 2^32 - 1 plus log 2 = 4294967295.69: truncated through i64, in range of u32.
      {"ReduceLogSumExp", DType::kU32, {u32_max, u32_max}, u32_max},
      {"ReduceLogSumExp", DType::kU32, {u32_max, 0}, u32_max},
  };
  for (const Edge& e : edges) {
    SCOPED_TRACE(fmt::format("{} {} [{}]", e.op, DTypeName(e.t), fmt::join(e.x, ", ")));
    const size_t size = e.t == DType::kU64 ? 8 : 4;
    std::vector<uint8_t> bytes(2 * size);
    for (size_t i = 0; i < 2; ++i) {
      if (size == 8) {
        std::memcpy(bytes.data() + 8 * i, &e.x[i], 8);
      } else {
        const uint32_t v = static_cast<uint32_t>(e.x[i]);
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      }
    }
    PlanFile f = OneKernel(e.op, e.t, {1, 2}, std::vector<int64_t>{1}, {1}, e.t,
                           [](plan::Kernel* k) { PlanBuilder::Int(k, "keepdims", 0); });
    auto cpu_out = RunOn(f, MakeCpuBackend(), {{"x", bytes}});
    ASSERT_EQ(cpu_out.count("y"), 1u);
    uint64_t got = 0;
    std::memcpy(&got, cpu_out["y"].data(), size);
    EXPECT_EQ(got, e.want);
    ExpectEmuMatchesCpu(f, {{"x", bytes}}, 0, 0);
  }
}

TEST(DeviceReduceTest, LogSumExpOfWideValuesAndEmptyReductions) {
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(DTypeName(t));
    const cpu::Dims dims = {6, 11};
    std::map<std::string, std::vector<uint8_t>> in = {{"x", RandomBytes(t, 66, 3, -80, 80)}};
    ExpectEmuMatchesCpu(OneKernel("ReduceLogSumExp", t, dims, std::vector<int64_t>{1}, {6}, t), in,
                        0, 0);
    // A zero-sized reduced axis: the identity of each op (0, 1, -inf, NaN for Mean; the values
    // themselves: SharedReduceTest.EmptyReductionsAndNaNsAgainstLiterals).
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceProd"}) {
      ExpectEmuMatchesCpu(OneKernel(op, t, {4, 0}, std::vector<int64_t>{1}, {4}, t), {}, 0, 0);
    }
  }
}

TEST(DeviceReduceTest, NaNsBehaveAsOnTheCpu) {
  // Max/Min return the first NaN, LogSumExp's fmax skips it, ArgMax never selects it, Softmax's
  // max ignores it: each path has its own rule, mirrored from the CPU.
  for (DType t : {DType::kF32, DType::kF16, DType::kF64}) {
    SCOPED_TRACE(DTypeName(t));
    const cpu::Dims dims = {5, 7};
    std::vector<double> v(35);
    std::mt19937 rng(17);
    std::uniform_real_distribution<double> d(-3, 3);
    for (double& x : v) x = d(rng);
    v[3] = v[15] = v[29] = std::nan("");
    std::vector<uint8_t> x(35 * DTypeSize(t));
    ASSERT_TRUE(cpu::Cast(DType::kF64, t, 35, v.data(), x.data()).ok());
    const std::map<std::string, std::vector<uint8_t>> in = {{"x", x}};
    for (const char* op : {"ReduceMax", "ReduceMin", "ReduceLogSumExp", "ReduceSum"}) {
      for (int64_t axis : {0, 1})
        ExpectEmuMatchesCpu(OneKernel(op, t, dims, std::vector<int64_t>{axis}, {dims[1 - axis]}, t),
                            in, 0, 0);
    }
    ExpectEmuMatchesCpu(OneKernel("ArgMax", t, dims, std::nullopt, {5}, DType::kI64,
                                  [](plan::Kernel* k) { PlanBuilder::Int(k, "axis", 1); }),
                        in, 0, 0);
    ExpectEmuMatchesCpu(OneKernel("LogSoftmax", t, dims, std::nullopt, dims, t), in, 0, 0);
  }
}

TEST(DeviceReduceTest, NoopWithEmptyAxesCopiesAndEmptyAxesReduceAll) {
  for (DType t : {DType::kF32, DType::kI32}) {
    const cpu::Dims dims = {3, 4};
    auto noop = [](plan::Kernel* k) { PlanBuilder::Int(k, "noop_with_empty_axes", 1); };
    // An empty axes input and an absent one, with noop: y = x.
    ExpectEmuMatchesCpu(OneKernel("ReduceSum", t, dims, std::vector<int64_t>{}, dims, t, noop), {},
                        0, 0);
    ExpectEmuMatchesCpu(OneKernel("ReduceMax", t, dims, std::nullopt, dims, t, noop), {}, 0, 0);
    // Without noop an empty axes input reduces everything.
    ExpectEmuMatchesCpu(OneKernel("ReduceSum", t, dims, std::vector<int64_t>{}, {}, t), {}, 0, 0);
  }
}

TEST(DeviceReduceTest, BadAxesAreRejectedWithTheCpuMessages) {
  auto run = [](const std::vector<int64_t>& axes) {
    return RunEmu(OneKernel("ReduceSum", DType::kF32, {3, 4}, axes, {3}, DType::kF32), {});
  };
  Status repeated = run({1, -1});
  EXPECT_FALSE(repeated.ok());
  EXPECT_NE(repeated.message().find("ReduceSum: axis -1 is repeated"), std::string::npos)
      << repeated.message();
  Status range = run({2});
  EXPECT_FALSE(range.ok());
  EXPECT_NE(range.message().find("ReduceSum: axis 2 is out of range for rank 2"), std::string::npos)
      << range.message();
}

TEST(DeviceReduceTest, ComputedAxesInputIsUnsupported) {
  PlanBuilder pb;
  const int x = pb.Buffer("x", DType::kF32, {3, 4}, B::INPUT);
  const int axes = pb.Buffer("axes", DType::kI64, {1}, B::INPUT);
  const int y = pb.Buffer("y", DType::kF32, {3}, B::OUTPUT);
  pb.Kernel("ReduceSum", {x, axes}, {y});
  Status s = RunEmu(pb.Finish(), {{"axes", SmallInts(DType::kI64, 1, 1, 1, 1)}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("must be a constant"), std::string::npos) << s.message();
}

TEST(DeviceReduceTest, ArgMaxArgMinEveryDtypeWithTies) {
  struct Case {
    cpu::Dims dims;
    int64_t axis;
    bool keepdims;
  };
  const Case cases[] = {{{4, 7, 5}, 1, true},
                        {{4, 7, 5}, -1, false},
                        {{9, 3}, 0, false},
                        {{13}, 0, true},
                        {{2, 1, 3}, 1, false}};
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (DType t : kNumericTypes) {
      for (const Case& c : cases) {
        for (int last : {0, 1}) {
          SCOPED_TRACE(Where(op, t, c.dims) + fmt::format(" axis {} last {}", c.axis, last));
          auto reduced = emu::ReducedAxes(c.dims, {c.axis}, "Reduce");
          ASSERT_TRUE(reduced.ok());
          const cpu::Dims out_dims = emu::ReducedDims(c.dims, *reduced, c.keepdims);
          PlanFile f =
              OneKernel(op, t, c.dims, std::nullopt, out_dims, DType::kI64, [&](plan::Kernel* k) {
                PlanBuilder::Int(k, "axis", c.axis);
                PlanBuilder::Int(k, "keepdims", c.keepdims ? 1 : 0);
                PlanBuilder::Int(k, "select_last_index", last);
              });
          const int64_t n = cpu::NumElements(c.dims);
          ExpectEmuMatchesCpu(f, {{"x", SmallInts(t, n, 11, 0, 3)}}, 0, 0);
          ExpectEmuMatchesCpu(f, {}, 0, 0);  // continuous values: no ties
        }
      }
    }
  }
}

TEST(DeviceReduceTest, SoftmaxAndLogSoftmaxEveryFloatDtype) {
  struct Case {
    cpu::Dims dims;
    int64_t axis;
  };
  // On a GPU, rows of up to 512 take a warp a row (softmax_impl.h): 128 (BERT's attention, 37 rows:
  // a last block of 5 warps), a strided 300, and 520 (a thread a row again).
  const Case cases[] = {{{3, 7, 5}, 1}, {{3, 7, 5}, -1}, {{6, 33}, 1},     {{6, 33}, 0},
                        {{9}, 0},       {{37, 128}, -1}, {{2, 300, 3}, 1}, {{3, 520}, 1}};
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (DType t : kFloatTypes) {
      for (const Case& c : cases) {
        SCOPED_TRACE(Where(op, t, c.dims) + fmt::format(" axis {}", c.axis));
        PlanFile f = OneKernel(op, t, c.dims, std::nullopt, c.dims, t,
                               [&](plan::Kernel* k) { PlanBuilder::Int(k, "axis", c.axis); });
        // The same arithmetic as the CPU's reference mode, bit for bit (its fast mode's f32 rows
        // take an exp polynomial: a few ulp, not the oracle).
        const double rtol = 0, atol = 0;
        ExpectEmuMatchesCpu(f, {}, rtol, atol);
        // Wide scores: most exps underflow (the skipped-exp path) and the max dominates.
        const int64_t n = cpu::NumElements(c.dims);
        ExpectEmuMatchesCpu(f, {{"x", RandomBytes(t, n, 5, -150, 150)}}, rtol, atol);
      }
    }
  }
}

TEST(DeviceReduceTest, SoftmaxGradAndLogSoftmaxGradEveryFloatDtype) {
  struct Case {
    cpu::Dims dims;
    int64_t axis;
  };
  const Case cases[] = {{{3, 7, 5}, 1}, {{3, 7, 5}, -1}, {{5, 12}, 0},     {{11}, -1},
                        {{}, -1},       {{37, 128}, -1}, {{2, 300, 3}, 1}, {{3, 520}, 1}};
  for (const char* op : {"a8.SoftmaxGrad", "a8.LogSoftmaxGrad"}) {
    for (DType t : kFloatTypes) {
      for (const Case& c : cases) {
        SCOPED_TRACE(Where(op, t, c.dims) + fmt::format(" axis {}", c.axis));
        PlanBuilder pb;
        const int dy = pb.Buffer("dy", t, c.dims, B::INPUT);
        const int y = pb.Buffer("y", t, c.dims, B::INPUT);
        const int dx = pb.Buffer("dx", t, c.dims, B::OUTPUT);
        PlanBuilder::Int(pb.Kernel(op, {dy, y}, {dx}), "axis", c.axis);
        ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
      }
    }
  }
}

TEST(DeviceReduceTest, CumSumEveryDtypeExclusiveReverse) {
  struct Case {
    cpu::Dims dims;
    int64_t axis;
  };
  const Case cases[] = {{{4, 9, 3}, 1}, {{4, 9, 3}, -1}, {{7, 5}, 0}, {{19}, 0}};
  for (DType t : kNumericTypes) {
    for (const Case& c : cases) {
      for (int mode = 0; mode < 4; ++mode) {
        SCOPED_TRACE(Where("CumSum", t, c.dims) + fmt::format(" axis {} mode {}", c.axis, mode));
        for (DType axis_t : {DType::kI64, DType::kI32}) {
          PlanBuilder pb;
          const int x = pb.Buffer("x", t, c.dims, B::INPUT);
          const int32_t a32 = static_cast<int32_t>(c.axis);
          const int axis = axis_t == DType::kI64
                               ? pb.Buffer("axis", axis_t, {}, B::CONSTANT, &c.axis)
                               : pb.Buffer("axis", axis_t, {}, B::CONSTANT, &a32);
          const int y = pb.Buffer("y", t, c.dims, B::OUTPUT);
          plan::Kernel* k = pb.Kernel("CumSum", {x, axis}, {y});
          PlanBuilder::Int(k, "exclusive", mode & 1);
          PlanBuilder::Int(k, "reverse", (mode >> 1) & 1);
          // Integers: values up to 100 make i8 / u8 running sums wrap.
          const int64_t n = cpu::NumElements(c.dims);
          std::map<std::string, std::vector<uint8_t>> in;
          if (!IsFloat(t)) in["x"] = SmallInts(t, n, 13, 0, 100);
          ExpectEmuMatchesCpu(pb.Finish(), in, 0, 0);
        }
      }
    }
  }
}

// The one CumSum body (the CPU backend runs it on the host, cuda-emu/the GPU as a kernel) against
// a float64 running sum of random data: float dtypes within their rounding of the sum's
// magnitude, i64 exactly; every mode, the axis a constant and a graph input.
TEST(DeviceReduceTest, CumSumMatchesFloat64Reference) {
  const cpu::Dims dims = {3, 17, 4};
  const int64_t n = cpu::NumElements(dims);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI64}) {
    for (int mode = 0; mode < 4; ++mode) {
      const bool exclusive = mode & 1, reverse = mode & 2;
      for (bool run_time_axis : {false, true}) {
        SCOPED_TRACE(Where("CumSum", t, dims) +
                     fmt::format(" mode {} run-time axis {}", mode, run_time_axis));
        const int64_t axis = -2;  // dim 1
        PlanBuilder pb;
        const int x = pb.Buffer("x", t, dims, B::INPUT);
        const int ab = run_time_axis ? pb.Buffer("axis", DType::kI64, {}, B::INPUT)
                                     : pb.Buffer("axis", DType::kI64, {}, B::CONSTANT, &axis);
        const int y = pb.Buffer("y", t, dims, B::OUTPUT);
        plan::Kernel* k = pb.Kernel("CumSum", {x, ab}, {y});
        PlanBuilder::Int(k, "exclusive", exclusive);
        PlanBuilder::Int(k, "reverse", reverse);
        const PlanFile f = pb.Finish();
        std::map<std::string, std::vector<uint8_t>> in;
        in["x"] = IsFloat(t) ? RandomBytes(t, n, 33 + mode, -5, 5) : SmallInts(t, n, 33, -50, 50);
        if (run_time_axis) in["axis"] = Bytes(std::vector<int64_t>{axis});
        const std::vector<double> xv = AsDoubles(t, in["x"]);
        std::vector<double> want(xv.size()), mag(xv.size());
        for (int64_t o = 0; o < 3; ++o) {
          for (int64_t i = 0; i < 4; ++i) {
            double s = 0, sa = 0;
            for (int64_t j = 0; j < 17; ++j) {
              const int64_t kk = reverse ? 16 - j : j, at = (o * 17 + kk) * 4 + i;
              if (!exclusive) s += xv[at], sa += std::fabs(xv[at]);
              want[at] = s, mag[at] = sa;
              if (exclusive) s += xv[at], sa += std::fabs(xv[at]);
            }
          }
        }
        // The store's rounding plus 17 float additions (double for f64).
        const double eps = t == DType::kF64    ? 2.3e-16
                           : t == DType::kF16  ? 9.8e-4
                           : t == DType::kBF16 ? 7.9e-3
                                               : 1.2e-7;
        const double tol = IsFloat(t) ? eps + 17 * (t == DType::kF64 ? 2.3e-16 : 1.2e-7) : 0;
        auto got = AsDoubles(t, RunOn(f, MakeCpuBackend(), in)["y"]);
        ASSERT_EQ(got.size(), want.size());
        for (size_t e = 0; e < want.size(); ++e)
          ASSERT_LE(std::fabs(got[e] - want[e]), tol * mag[e]) << "element " << e;
        ExpectEmuMatchesCpu(f, in, 0, 0);
      }
    }
  }
}

// The axis as a graph input (a run-time operand): the device kernel reads it from device memory
// and derives the view itself; same bits as the CPU, which reads it on the host.
TEST(DeviceReduceTest, CumSumRunTimeAxis) {
  const cpu::Dims dims = {3, 4, 5};
  for (DType t : {DType::kF32, DType::kF16, DType::kI32, DType::kU8}) {
    for (int64_t axis : {-3, -1, 0, 1, 2}) {
      for (DType axis_t : {DType::kI64, DType::kI32}) {
        SCOPED_TRACE(Where("CumSum", t, dims) +
                     fmt::format(" run-time axis {} ({})", axis, DTypeName(axis_t)));
        PlanBuilder pb;
        const int x = pb.Buffer("x", t, dims, B::INPUT);
        const int ab = pb.Buffer("axis", axis_t, {}, B::INPUT);
        const int y = pb.Buffer("y", t, dims, B::OUTPUT);
        plan::Kernel* k = pb.Kernel("CumSum", {x, ab}, {y});
        PlanBuilder::Int(k, "exclusive", axis == 1);
        PlanBuilder::Int(k, "reverse", axis == -1);
        std::map<std::string, std::vector<uint8_t>> in;
        const int32_t a32 = static_cast<int32_t>(axis);
        const uint8_t* bytes = axis_t == DType::kI64 ? reinterpret_cast<const uint8_t*>(&axis)
                                                     : reinterpret_cast<const uint8_t*>(&a32);
        in["axis"].assign(bytes, bytes + (axis_t == DType::kI64 ? 8 : 4));
        if (!IsFloat(t)) in["x"] = SmallInts(t, cpu::NumElements(dims), 17, 0, 100);
        ExpectEmuMatchesCpu(pb.Finish(), in, 0, 0);
      }
    }
  }
}

// A run-time axis out of range: the step fails naming the kernel on both backends (the device
// kernel raises its error and writes zeros, never reading out of bounds).
TEST(DeviceReduceTest, CumSumRunTimeAxisOutOfRangeFailsTheStep) {
  PlanBuilder pb;
  const int x = pb.Buffer("x", DType::kF32, {2, 3}, B::INPUT);
  const int ab = pb.Buffer("axis", DType::kI64, {}, B::INPUT);
  const int y = pb.Buffer("y", DType::kF32, {2, 3}, B::OUTPUT);
  pb.Kernel("CumSum", {x, ab}, {y});
  const PlanFile f = pb.Finish();
  for (int64_t axis : {2, -3}) {
    SCOPED_TRACE(fmt::format("axis {}", axis));
    OnCpuThenDevice([&](std::unique_ptr<Backend> backend) {
      auto ex = Executor::Create(f, std::move(backend));
      ASSERT_TRUE(ex.ok()) << ex.status().message();
      std::vector<float> xs(6, 1.0f);
      ASSERT_TRUE((*ex)->SetInput("x", xs.data(), 24).ok());
      ASSERT_TRUE((*ex)->SetInput("axis", &axis, 8).ok());
      Status s = (*ex)->Run();
      ASSERT_FALSE(s.ok());
      EXPECT_NE(s.message().find("CumSum"), std::string::npos) << s.message();
    });
  }
}

TEST(DeviceReduceTest, GlobalNormSqOfMixedDtypesAcrossChunks) {
  // Tensors over one and several partial-sum chunks, empty, and of every float dtype.
  const std::vector<std::pair<DType, int64_t>> tensors = {
      {DType::kF32, 2 * emu::kNormSqChunk + 777}, {DType::kF16, 1001}, {DType::kBF16, 3},
      {DType::kF64, emu::kNormSqChunk + 1},       {DType::kF32, 0},    {DType::kF32, 1}};
  PlanBuilder pb;
  std::vector<int> in;
  for (size_t i = 0; i < tensors.size(); ++i)
    in.push_back(
        pb.Buffer("g" + std::to_string(i), tensors[i].first, {tensors[i].second}, B::INPUT));
  const int out = pb.Buffer("norm_sq", DType::kF32, {}, B::OUTPUT);
  pb.Kernel("a8.GlobalNormSq", in, {out});
  ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
}

}  // namespace
}  // namespace a8::testing

// The data-movement entries (runtime/device/ops_movement.cc over kernels/device/movement_impl.h)
// on cuda-emu and on the CPU backend: one-kernel plans on random data for every dtype the entry
// takes, odd sizes, negative axes and steps, optional inputs. Both backends run the same entry
// now (a8.GatherGrad aside, which keeps its CPU kernel and sums in its order), so these hold the
// backends' operand handling (bindings, host views, in-place outputs) to the same bits; the
// values are checked against references by shared_movement_test.cc (and, here, Trilu's and
// Range's by their own loops). Moves are exact, so every comparison is exact (tolerance 0).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/float16.h"
#include "kernels/cpu/elementwise.h"  // cpu::Cast, used by device_test_util.h
#include "runtime/cpu/registry.h"
#include "runtime/device/device_registry.h"
#include "tests/unit/device_test_util.h"

namespace a8 {
namespace {

using testing::Name;
using testing::Str;
using B = plan::Buffer;
using testing::Bytes;
using testing::ExpectEmuMatchesCpu;
using testing::PlanBuilder;
using testing::RandomBytes;
using Inputs = std::map<std::string, std::vector<uint8_t>>;

// `n` indices in [lo, hi) as i64 or i32 bytes (a fixed sequence of odd steps, with repeats).
std::vector<uint8_t> Indices(DType dt, int64_t n, int64_t lo, int64_t hi, uint32_t seed) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (seed + 7 * i + i * i / 3) % (hi - lo);
  if (dt == DType::kI64) return Bytes(v);
  std::vector<int32_t> w(v.begin(), v.end());
  return Bytes(w);
}

int ConstI64(PlanBuilder& pb, const std::string& name, const std::vector<int64_t>& v) {
  return pb.Buffer(name, DType::kI64, {static_cast<int64_t>(v.size())}, B::CONSTANT, v.data());
}

// A unary movement op x -> y with constant i64 operands after x (-1: absent).
void ExpectUnary(const std::string& op, DType t, const std::vector<int64_t>& x_dims,
                 const std::vector<int64_t>& y_dims,
                 const std::vector<std::vector<int64_t>>& consts,
                 void (*attrs)(plan::Kernel*) = nullptr) {
  SCOPED_TRACE(op + " " + Name(t));
  PlanBuilder pb;
  std::vector<int> in = {pb.Buffer("x", t, x_dims, B::INPUT)};
  for (size_t i = 0; i < consts.size(); ++i)
    in.push_back(consts[i].empty() ? -1 : ConstI64(pb, "c" + std::to_string(i), consts[i]));
  int y = pb.Buffer("y", t, y_dims, B::OUTPUT);
  plan::Kernel* k = pb.Kernel(op, in, {y});
  if (attrs != nullptr) attrs(k);
  ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
}

TEST(DeviceMovementTest, TheCpuBackendRunsTheDeviceEntries) {
  // One body: the CPU backend has no movement kernel of its own and runs the device entry.
  for (const char* op :
       {"Transpose",       "Concat",  "Split",       "Slice",     "Gather", "GatherElements",
        "Expand",          "Tile",    "Pad",         "OneHot",    "Range",  "Identity",
        "Reshape",         "Flatten", "Squeeze",     "Unsqueeze", "Shape",  "Size",
        "ConstantOfShape", "Trilu",   "a8.SliceGrad"}) {
    EXPECT_EQ(FindCpuKernel(op), nullptr) << op;
    const CpuKernelEntry* e = FindCpuBackendKernel(op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_NE(e->note.find("shared body"), std::string::npos) << op;
  }
  // a8.GatherGrad keeps its CPU kernel (docs/ARCHITECTURE.md, known debt 2: the shared body's
  // sort took the example BERT's training step to 1.3x).
  testing::ExpectDeviceEntryLikeCpu("a8.GatherGrad");
}

TEST(DeviceMovementTest, Transpose) {
  for (DType t : kAllTypes) {
    ExpectUnary("Transpose", t, {3, 5, 7}, {7, 3, 5}, {}, [](plan::Kernel* k) {
      PlanBuilder::Ints(k, "perm", {2, 0, 1});
    });
    ExpectUnary("Transpose", t, {2, 3, 4, 5}, {2, 4, 3, 5}, {}, [](plan::Kernel* k) {
      PlanBuilder::Ints(k, "perm", {0, 2, 1, 3});
    });
    ExpectUnary("Transpose", t, {4, 1, 6}, {6, 1, 4}, {});  // no perm: reversed
  }
  // Rank 9 that merges to fewer dims.
  ExpectUnary("Transpose", DType::kF32, {2, 3, 1, 2, 2, 1, 3, 2, 2}, {3, 2, 2, 1, 2, 1, 2, 2, 3},
              {}, [](plan::Kernel* k) {
                PlanBuilder::Ints(k, "perm", {1, 0, 3, 2, 4, 5, 7, 8, 6});
              });
}

TEST(DeviceMovementTest, Concat) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(Name(t));
    for (int64_t axis : {-2, 0, 2}) {
      std::vector<std::vector<int64_t>> dims = {{2, 3, 5}, {2, 3, 5}, {2, 3, 5}};
      std::vector<int64_t> out = {2, 3, 5};
      const int64_t a = axis < 0 ? axis + 3 : axis;
      out[a] = 0;
      for (int i = 0; i < 3; ++i) dims[i][a] = i * 2 + 1, out[a] += i * 2 + 1;
      PlanBuilder pb;
      std::vector<int> in;
      for (int i = 0; i < 3; ++i)
        in.push_back(pb.Buffer("x" + std::to_string(i), t, dims[i], B::INPUT));
      int y = pb.Buffer("y", t, out, B::OUTPUT);
      PlanBuilder::Int(pb.Kernel("Concat", in, {y}), "axis", axis);
      ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
    }
  }
}

TEST(DeviceMovementTest, Split) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(Name(t));
    PlanBuilder pb;
    int x = pb.Buffer("x", t, {5, 7, 3}, B::INPUT);
    std::vector<int> ys = {pb.Buffer("y0", t, {5, 2, 3}, B::OUTPUT),
                           pb.Buffer("y1", t, {5, 4, 3}, B::OUTPUT),
                           pb.Buffer("y2", t, {5, 1, 3}, B::OUTPUT)};
    PlanBuilder::Int(pb.Kernel("Split", {x}, ys), "axis", -2);
    ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
    PlanBuilder pb0;
    x = pb0.Buffer("x", t, {5, 3}, B::INPUT);
    ys = {pb0.Buffer("y0", t, {2, 3}, B::OUTPUT), pb0.Buffer("y1", t, {3, 3}, B::OUTPUT)};
    pb0.Kernel("Split", {x}, ys);  // axis 0 by default
    ExpectEmuMatchesCpu(pb0.Finish(), {}, 0, 0);
  }
}

TEST(DeviceMovementTest, Slice) {
  for (DType t : kAllTypes) {
    // Negative starts/ends/steps, out-of-range end, negative axis.
    ExpectUnary("Slice", t, {4, 6, 5}, {2, 6, 2}, {{-1, 1}, {-5, 100}, {0, -1}, {-2, 2}});
    // No axes, no steps.
    ExpectUnary("Slice", t, {7, 5}, {4, 3}, {{2, 1}, {6, -1}});
  }
  // i32 constants, step 3 on the middle axis.
  PlanBuilder pb;
  std::vector<int32_t> starts = {1}, ends = {8}, axes = {1}, steps = {3};
  int x = pb.Buffer("x", DType::kF16, {3, 9, 2}, B::INPUT);
  int s = pb.Buffer("s", DType::kI32, {1}, B::CONSTANT, starts.data());
  int e = pb.Buffer("e", DType::kI32, {1}, B::CONSTANT, ends.data());
  int a = pb.Buffer("a", DType::kI32, {1}, B::CONSTANT, axes.data());
  int st = pb.Buffer("st", DType::kI32, {1}, B::CONSTANT, steps.data());
  int y = pb.Buffer("y", DType::kF16, {3, 3, 2}, B::OUTPUT);
  pb.Kernel("Slice", {x, s, e, a, st}, {y});
  ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
}

TEST(DeviceMovementTest, Gather) {
  for (DType t : kAllTypes) {
    for (DType it : {DType::kI64, DType::kI32}) {
      SCOPED_TRACE(Name(t) + " " + Name(it));
      PlanBuilder pb;  // axis 0, 2-d indices with negatives and repeats
      int x = pb.Buffer("x", t, {5, 4, 3}, B::INPUT);
      int i = pb.Buffer("i", it, {2, 3}, B::INPUT);
      int y = pb.Buffer("y", t, {2, 3, 4, 3}, B::OUTPUT);
      pb.Kernel("Gather", {x, i}, {y});
      ExpectEmuMatchesCpu(pb.Finish(), {{"i", Indices(it, 6, -5, 5, 1)}}, 0, 0);
      PlanBuilder pb1;  // axis -1
      x = pb1.Buffer("x", t, {3, 2, 7}, B::INPUT);
      i = pb1.Buffer("i", it, {5}, B::INPUT);
      y = pb1.Buffer("y", t, {3, 2, 5}, B::OUTPUT);
      PlanBuilder::Int(pb1.Kernel("Gather", {x, i}, {y}), "axis", -1);
      ExpectEmuMatchesCpu(pb1.Finish(), {{"i", Indices(it, 5, -7, 7, 2)}}, 0, 0);
    }
  }
}

// Host memory (the CPU backend, cuda-emu) lets the entry name the index and its element before
// the kernel runs; on a GPU the kernel raises DevErr and the backend names the kernel.
TEST(DeviceMovementTest, AnIndexOutOfRangeIsNamedOnBoth) {
  for (const char* op : {"Gather", "GatherElements"}) {
    PlanBuilder pb;
    const bool elements = std::string(op) == "GatherElements";
    int x = pb.Buffer("x", DType::kF32, {4, 3}, B::INPUT);
    int i = pb.Buffer("i", DType::kI64, {2, 3}, B::INPUT);
    int y = pb.Buffer("y", DType::kF32, elements ? Dims{2, 3} : Dims{2, 3, 3}, B::OUTPUT);
    pb.Kernel(op, {x, i}, {y});
    const PlanFile f = pb.Finish();
    for (bool cpu : {true, false}) {
      SCOPED_TRACE(std::string(op) + (cpu ? " cpu" : " cuda-emu"));
      StatusOr<std::unique_ptr<Backend>> backend =
          cpu ? StatusOr<std::unique_ptr<Backend>>(MakeCpuBackend()) : MakeCudaEmuBackend();
      ASSERT_TRUE(backend.ok()) << backend.status().message();
      auto ex = Executor::Create(f, std::move(backend).value());
      ASSERT_TRUE(ex.ok()) << ex.status().message();
      const std::vector<uint8_t> x_bytes = RandomBytes(DType::kF32, 12, 1);
      const std::vector<uint8_t> idx = Bytes(std::vector<int64_t>{0, -4, 3, 1, 4, 2});
      ASSERT_TRUE((*ex)->SetInput("x", x_bytes.data(), x_bytes.size()).ok());
      ASSERT_TRUE((*ex)->SetInput("i", idx.data(), idx.size()).ok());
      const Status s = (*ex)->Run();
      EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
      EXPECT_NE(s.message().find(std::string(op) + ": index 4 (element 4) is out of range [-4, 4)"),
                std::string::npos)
          << s.message();
    }
  }
}

TEST(DeviceMovementTest, GatherElements) {
  for (DType t : kAllTypes) {
    for (DType it : {DType::kI64, DType::kI32}) {
      SCOPED_TRACE(Name(t) + " " + Name(it));
      PlanBuilder pb;
      int x = pb.Buffer("x", t, {4, 5, 3}, B::INPUT);
      int i = pb.Buffer("i", it, {6, 3, 3}, B::INPUT);
      int y = pb.Buffer("y", t, {6, 3, 3}, B::OUTPUT);
      pb.Kernel("GatherElements", {x, i}, {y});
      ExpectEmuMatchesCpu(pb.Finish(), {{"i", Indices(it, 54, -4, 4, 3)}}, 0, 0);
      PlanBuilder pb1;
      x = pb1.Buffer("x", t, {3, 7}, B::INPUT);
      i = pb1.Buffer("i", it, {2, 9}, B::INPUT);
      y = pb1.Buffer("y", t, {2, 9}, B::OUTPUT);
      PlanBuilder::Int(pb1.Kernel("GatherElements", {x, i}, {y}), "axis", -1);
      ExpectEmuMatchesCpu(pb1.Finish(), {{"i", Indices(it, 18, -7, 7, 4)}}, 0, 0);
    }
  }
}

TEST(DeviceMovementTest, Expand) {
  for (DType t : kAllTypes) {
    ExpectUnary("Expand", t, {3, 1, 5}, {2, 3, 4, 5}, {{2, 3, 4, 5}});
    ExpectUnary("Expand", t, {1}, {7, 3}, {{7, 3}});
    ExpectUnary("Expand", t, {4, 1}, {4, 6}, {{1, 6}});
  }
}

TEST(DeviceMovementTest, Tile) {
  for (DType t : kAllTypes) {
    ExpectUnary("Tile", t, {2, 3}, {6, 6}, {{3, 2}});
    ExpectUnary("Tile", t, {3, 1, 5}, {3, 4, 10}, {{1, 4, 2}});
    ExpectUnary("Tile", t, {4, 3}, {0, 3}, {{0, 1}});  // empty
  }
}

TEST(DeviceMovementTest, PadModes) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(Name(t));
    // Constant with a value, a negative pad (crop).
    PlanBuilder pb;
    int x = pb.Buffer("x", t, {3, 5}, B::INPUT);
    int p = ConstI64(pb, "p", {1, 2, 0, -1});
    int v = pb.Buffer("v", t, {}, B::INPUT);
    int y = pb.Buffer("y", t, {4, 6}, B::OUTPUT);
    pb.Kernel("Pad", {x, p, v}, {y});
    ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
    // Reflect and edge over three dims; constant without a value (zero) with axes.
    ExpectUnary("Pad", t, {4, 5, 3}, {7, 7, 5}, {{2, 1, 1, 1, 1, 1}},
                [](plan::Kernel* k) { Str(k, "mode", "reflect"); });
    ExpectUnary("Pad", t, {2, 5, 3}, {5, 7, 5}, {{2, 0, 1, 1, 2, 1}},
                [](plan::Kernel* k) { Str(k, "mode", "edge"); });
    ExpectUnary("Pad", t, {2, 5, 3}, {2, 5, 7}, {{1, 3}, {}, {-1}});
    ExpectUnary("Pad", t, {1, 4}, {3, 4}, {{2, 0, 0, 0}},
                [](plan::Kernel* k) { Str(k, "mode", "reflect"); });  // reflect of a dim of 1
    // Wrap, pads beyond the dims (periodic).
    ExpectUnary("Pad", t, {2, 3, 2}, {5, 10, 2}, {{1, 4, 0, 2, 3, 0}},
                [](plan::Kernel* k) { Str(k, "mode", "wrap"); });
  }
}

TEST(DeviceMovementTest, Trilu) {
  for (DType t : kAllTypes) {
    ExpectUnary("Trilu", t, {2, 4, 5}, {2, 4, 5}, {});
    ExpectUnary("Trilu", t, {3, 6}, {3, 6}, {{}});
    SCOPED_TRACE("with k");
    PlanBuilder pb;
    std::vector<int64_t> k = {-1};
    int x = pb.Buffer("x", t, {3, 5, 4}, B::INPUT);
    int kb = pb.Buffer("k", DType::kI64, {}, B::CONSTANT, k.data());
    int y = pb.Buffer("y", t, {3, 5, 4}, B::OUTPUT);
    PlanBuilder::Int(pb.Kernel("Trilu", {x, kb}, {y}), "upper", 0);
    ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
    ExpectUnary("Trilu", t, {5, 3}, {5, 3}, {{2}});
  }
  // k as a graph input (a run-time operand the kernel reads from device memory), i64 and i32:
  // the one body (which the CPU backend runs on the host) against the triangle's definition.
  for (DType t : {DType::kF32, DType::kBF16, DType::kI64}) {
    for (int64_t kv : {-7, -2, 0, 1, 3, 9}) {
      for (bool upper : {false, true}) {
        SCOPED_TRACE(Name(t) + fmt::format(" run-time k {} upper {}", kv, upper));
        for (DType kt : {DType::kI64, DType::kI32}) {
          PlanBuilder pb;
          int x = pb.Buffer("x", t, {2, 4, 6}, B::INPUT);
          int kb = pb.Buffer("k", kt, {}, B::INPUT);
          int y = pb.Buffer("y", t, {2, 4, 6}, B::OUTPUT);
          PlanBuilder::Int(pb.Kernel("Trilu", {x, kb}, {y}), "upper", upper);
          const int32_t k32 = static_cast<int32_t>(kv);
          const uint8_t* bytes = kt == DType::kI64 ? reinterpret_cast<const uint8_t*>(&kv)
                                                   : reinterpret_cast<const uint8_t*>(&k32);
          std::map<std::string, std::vector<uint8_t>> in;
          in["k"].assign(bytes, bytes + (kt == DType::kI64 ? 8 : 4));
          in["x"] = RandomBytes(t, 48, 46, 1, 3);  // no zeros: a kept element is told apart
          // The reference: the kept triangle's bytes, zeros elsewhere.
          const size_t size = DTypeSize(t);
          std::vector<uint8_t> want(in["x"].size(), 0);
          for (int64_t e = 0; e < 48; ++e) {
            const int64_t i = (e / 6) % 4, j = e % 6;
            if (upper ? j - i >= kv : j - i <= kv)
              std::memcpy(&want[e * size], &in["x"][e * size], size);
          }
          const PlanFile f = pb.Finish();
          EXPECT_EQ(testing::RunOn(f, MakeCpuBackend(), in)["y"], want);
          ExpectEmuMatchesCpu(f, in, 0, 0);
        }
      }
    }
  }
}

TEST(DeviceMovementTest, OneHot) {
  for (DType t : kAllTypes) {
    for (DType it : {DType::kI64, DType::kI32, DType::kF32, DType::kF16}) {
      for (int64_t axis : {-1, 0, 1}) {
        SCOPED_TRACE(Name(t) + " " + Name(it) + " " + std::to_string(axis));
        const int64_t depth = 5;
        std::vector<int64_t> y_dims = {3, 4};
        y_dims.insert(y_dims.begin() + (axis < 0 ? 2 : axis), depth);
        PlanBuilder pb;
        int i = pb.Buffer("i", it, {3, 4}, B::INPUT);
        int d = ConstI64(pb, "depth", {depth});
        int v = pb.Buffer("values", t, {2}, B::INPUT);
        int y = pb.Buffer("y", t, y_dims, B::OUTPUT);
        PlanBuilder::Int(pb.Kernel("OneHot", {i, d, v}, {y}), "axis", axis);
        // Indices in [-7, 7): some out of range (all off); float ones have fractions.
        Inputs in = {{"i", RandomBytes(it, 12, 7, -7.4, 6.9)}};
        std::vector<uint8_t> values = RandomBytes(t, 2, 8, 1, 5);
        if (t == DType::kBool) values = {0, 1};
        in["values"] = values;
        ExpectEmuMatchesCpu(pb.Finish(), in, 0, 0);
      }
    }
  }
}

TEST(DeviceMovementTest, Range) {
  auto run = [](DType t, const std::vector<uint8_t>& start, const std::vector<uint8_t>& delta,
                int64_t n) {
    SCOPED_TRACE(Name(t));
    PlanBuilder pb;
    int s = pb.Buffer("start", t, {}, B::CONSTANT, start.data());
    int l = pb.Buffer("limit", t, {}, B::CONSTANT, start.data());  // not read: n is y's count
    int d = pb.Buffer("delta", t, {}, B::CONSTANT, delta.data());
    int y = pb.Buffer("y", t, {n}, B::OUTPUT);
    pb.Kernel("Range", {s, l, d}, {y});
    ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
  };
  run(DType::kF32, Bytes(std::vector<float>{0.1f}), Bytes(std::vector<float>{0.3f}), 37);
  run(DType::kF64, Bytes(std::vector<double>{-2.7}), Bytes(std::vector<double>{0.11}), 53);
  run(DType::kI64, Bytes(std::vector<int64_t>{5}), Bytes(std::vector<int64_t>{-3}), 21);
  run(DType::kI32, Bytes(std::vector<int32_t>{-9}), Bytes(std::vector<int32_t>{4}), 17);
}

// A double as f16 / bf16 bits, rounded once to nearest, ties to even (the neighbours of the
// float-rounded value decide, so a double is never rounded twice).
uint16_t NearestBits(DType t, double v) {
  auto value = [t](uint16_t b) -> double {
    return t == DType::kF16 ? HalfBitsToFloat(b) : BFloat16BitsToFloat(b);
  };
  const float f = static_cast<float>(v);
  const uint16_t b0 = t == DType::kF16 ? FloatToHalfBits(f) : FloatToBFloat16Bits(f);
  uint16_t best = b0;
  for (uint16_t b : {static_cast<uint16_t>(b0 - 1), static_cast<uint16_t>(b0 + 1)}) {
    const double e = std::fabs(value(b) - v), eb = std::fabs(value(best) - v);
    if (e < eb || (e == eb && (b & 1) == 0)) best = b;
  }
  return best;
}

// f16 / bf16 Range as onnx's reference (Range-27) computes it: numpy's arange in the stash type
// (stash_type 1: f32, 11: f64): a0 = start, a1 = start + delta, a0 + i * (a1 - a0) for i >= 2,
// each element rounded once to the dtype. Random starts and deltas on the CPU backend (which
// runs the device body) and the device under test: exactly that definition, written here, and
// within one unit in the last place of the exact start + i * delta.
TEST(DeviceMovementTest, RangeF16AndBf16ComputeInTheStashType) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> start_d(-40, 40), delta_d(0.01, 2.5);
  std::uniform_int_distribution<int> n_d(1, 300);
  for (DType t : {DType::kF16, DType::kBF16}) {
    auto value = [t](uint16_t b) -> double {
      return t == DType::kF16 ? HalfBitsToFloat(b) : BFloat16BitsToFloat(b);
    };
    const double ulp = t == DType::kF16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    for (int stash : {1, 11}) {
      for (int rep = 0; rep < 12; ++rep) {
        const uint16_t sb = NearestBits(t, start_d(rng));
        const uint16_t db = NearestBits(t, (rep % 2 ? -1 : 1) * delta_d(rng));
        const int64_t n = n_d(rng);
        SCOPED_TRACE(fmt::format("{} stash {} start {} delta {} n {}", Name(t), stash, value(sb),
                                 value(db), n));
        PlanBuilder pb;
        int s = pb.Buffer("start", t, {}, B::CONSTANT, &sb);
        int l = pb.Buffer("limit", t, {}, B::CONSTANT, &sb);  // not read: n is y's count
        int d = pb.Buffer("delta", t, {}, B::CONSTANT, &db);
        int y = pb.Buffer("y", t, {n}, B::OUTPUT);
        PlanBuilder::Int(pb.Kernel("Range", {s, l, d}, {y}), "stash_type", stash);
        const PlanFile f = pb.Finish();
        std::vector<uint16_t> want(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          double v;
          if (stash == 1) {
            const float a0 = static_cast<float>(value(sb));
            const float a1 = a0 + static_cast<float>(value(db));
            volatile float step = static_cast<float>(i) * (a1 - a0);  // no FMA
            v = i == 0 ? a0 : i == 1 ? a1 : a0 + step;
          } else {
            const double a0 = value(sb), a1 = a0 + value(db);
            volatile double step = static_cast<double>(i) * (a1 - a0);
            v = i == 0 ? a0 : i == 1 ? a1 : a0 + step;
          }
          want[i] = NearestBits(t, v);
          const double exact = value(sb) + static_cast<double>(i) * value(db);
          EXPECT_LE(std::fabs(value(want[i]) - exact), ulp * std::fabs(exact) + 1e-6) << i;
        }
        testing::OnCpuThenDevice([&](std::unique_ptr<Backend> backend) {
          ASSERT_EQ(testing::RunOn(f, std::move(backend), {})["y"], Bytes(want));
        });
      }
    }
  }
  // Neither f32 nor f64: a clear error.
  const uint16_t one = FloatToHalfBits(1.0f);
  PlanBuilder pb;
  int s = pb.Buffer("start", DType::kF16, {}, B::CONSTANT, &one);
  int y = pb.Buffer("y", DType::kF16, {3}, B::OUTPUT);
  PlanBuilder::Int(pb.Kernel("Range", {s, s, s}, {y}), "stash_type", 10);
  auto ex = Executor::Create(pb.Finish(), MakeCpuBackend());
  Status st = ex.ok() ? (*ex)->Run() : ex.status();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("stash_type 10"), std::string::npos) << st.message();
}

TEST(DeviceMovementTest, ReshapeLikesCopy) {
  for (DType t : kAllTypes) {
    ExpectUnary("Reshape", t, {3, 5}, {5, 3}, {{5, 3}});
    ExpectUnary("Flatten", t, {2, 3, 5}, {2, 15}, {});
    ExpectUnary("Squeeze", t, {3, 1, 5}, {3, 5}, {{1}});
    ExpectUnary("Unsqueeze", t, {7}, {1, 7}, {{0}});
  }
}

TEST(DeviceMovementTest, ShapeAndSize) {
  for (DType t : {DType::kF32, DType::kBool}) {
    SCOPED_TRACE(Name(t));
    PlanBuilder pb;
    int x = pb.Buffer("x", t, {2, 3, 4, 5}, B::INPUT);
    int s = pb.Buffer("s", DType::kI64, {4}, B::OUTPUT);
    int s2 = pb.Buffer("s2", DType::kI64, {2}, B::OUTPUT);
    int n = pb.Buffer("n", DType::kI64, {}, B::OUTPUT);
    pb.Kernel("Shape", {x}, {s});
    plan::Kernel* k = pb.Kernel("Shape", {x}, {s2});
    PlanBuilder::Int(k, "start", -3);
    PlanBuilder::Int(k, "end", -1);
    pb.Kernel("Size", {x}, {n});
    ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
  }
}

TEST(DeviceMovementTest, ConstantOfShape) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(Name(t));
    std::vector<uint8_t> value = RandomBytes(t, 1, 9, 1, 3);
    PlanBuilder pb;
    int shape = ConstI64(pb, "shape", {3, 7});
    int v = pb.Buffer("value", t, {1}, B::CONSTANT, value.data());
    int y = pb.Buffer("y", t, {3, 7}, B::OUTPUT);
    plan::Attribute* a = pb.Kernel("ConstantOfShape", {shape}, {y})->add_attrs();
    a->set_name("value");
    a->set_tensor_buffer(v);
    ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
  }
  PlanBuilder pb;  // no value: zeros
  int shape = ConstI64(pb, "shape", {5});
  int y = pb.Buffer("y", DType::kF32, {5}, B::OUTPUT);
  pb.Kernel("ConstantOfShape", {shape}, {y});
  ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
}

TEST(DeviceMovementTest, GatherGradSumsRepeatsInTheCpuOrder) {
  struct Case {
    std::vector<int64_t> data, idx;
    int64_t axis;
  };
  // Many repeats (indices from a small range), negative axis, a row nobody gathers.
  const Case cases[] = {
      {{7, 5}, {4, 6}, 0}, {{3, 9, 4}, {13}, -2}, {{2, 3}, {}, 1}, {{6, 3, 2}, {2, 2, 3}, 0}};
  for (const Case& c : cases) {
    for (DType t : kFloatTypes) {
      for (DType it : {DType::kI64, DType::kI32}) {
        SCOPED_TRACE(Name(t) + " " + Name(it) + " axis " + std::to_string(c.axis));
        const int64_t a = c.axis < 0 ? c.axis + static_cast<int64_t>(c.data.size()) : c.axis;
        std::vector<int64_t> dy(c.data.begin(), c.data.begin() + a);
        dy.insert(dy.end(), c.idx.begin(), c.idx.end());
        dy.insert(dy.end(), c.data.begin() + a + 1, c.data.end());
        int64_t nidx = 1;
        for (int64_t d : c.idx) nidx *= d;
        PlanBuilder pb;
        int g = pb.Buffer("dy", t, dy, B::INPUT);
        int i = pb.Buffer("i", it, c.idx, B::INPUT);
        int y = pb.Buffer("dx", t, c.data, B::OUTPUT);
        PlanBuilder::Int(pb.Kernel("a8.GatherGrad", {g, i}, {y}), "axis", c.axis);
        const int64_t dim = c.data[a];
        ExpectEmuMatchesCpu(pb.Finish(), {{"i", Indices(it, nidx, -dim, dim - 1, 5)}}, 0, 0);
      }
    }
  }
}

TEST(DeviceMovementTest, SliceGrad) {
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(Name(t));
    PlanBuilder pb;
    int g = pb.Buffer("dy", t, {2, 3, 5}, B::INPUT);
    int y = pb.Buffer("dx", t, {4, 6, 5}, B::OUTPUT);
    plan::Kernel* k = pb.Kernel("a8.SliceGrad", {g}, {y});
    PlanBuilder::Ints(k, "starts", {3, 1, 0});
    PlanBuilder::Ints(k, "steps", {-2, 2, 1});
    ExpectEmuMatchesCpu(pb.Finish(), {}, 0, 0);
  }
}

}  // namespace
}  // namespace a8

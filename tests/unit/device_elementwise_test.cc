// The elementwise kernels of the CUDA backend (kernels/device/elementwise*_impl.h) through its
// host emulation, against the CPU backend: one-kernel plans on random data (never zeros) for
// every dtype each entry takes, odd sizes, broadcasting, optional inputs and attributes.
// Tolerance 0 wherever the math is the same expression on the same libm, which is everywhere but
// Erf and Gelu: the device uses erff/erfcf where the CPU has polynomials for f32/f16/bf16 (max
// relative error 2e-7 / 5e-7), so those compare within 1e-6 relative in f32 and one ulp in
// f16/bf16 (a rounding boundary may fall between the two).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "kernels/common/philox.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/device/elementwise.h"
#include "runtime/cpu/registry.h"
#include "runtime/device/device_registry.h"
#include "tests/unit/device_test_util.h"

namespace a8 {
namespace {

using testing::Count;
using testing::FromDoubles;
using testing::Name;
using testing::Str;
using B = plan::Buffer;
using testing::AsDoubles;
using testing::ExpectEmuMatchesCpu;
using testing::PlanBuilder;
using testing::RandomBytes;
using Inputs = std::map<std::string, std::vector<uint8_t>>;
using Dims = std::vector<int64_t>;

using Attrs = std::function<void(plan::Kernel*)>;

// Sets the float attribute alpha (LeakyRelu, Elu and their gradients).
Attrs AlphaAttr(float alpha) {
  return [alpha](plan::Kernel* k) { PlanBuilder::Float(k, "alpha", alpha); };
}

// Sets HardSigmoid's (or its gradient's) alpha and beta.
Attrs AlphaBetaAttrs(float alpha, float beta) {
  return [alpha, beta](plan::Kernel* k) {
    PlanBuilder::Float(k, "alpha", alpha);
    PlanBuilder::Float(k, "beta", beta);
  };
}

// A unary (or activation-gradient) case: the op, the range of its random operand, attributes.
struct RangeCase {
  const char* op;
  double lo, hi;
  Attrs attrs;
};

// One kernel `op`: inputs x0.. of (dtype, dims), outputs y0.. of (dtype, dims).
struct Operand {
  DType dtype;
  Dims dims;
  B::Role role = B::INPUT;
  std::vector<uint8_t> init = {};  // CONSTANT bytes
  bool absent = false;
};
PlanFile OneKernel(const std::string& op, const std::vector<Operand>& ins,
                   const std::vector<Operand>& outs, const Attrs& attrs = {}) {
  PlanBuilder pb;
  std::vector<int> in, out;
  for (size_t i = 0; i < ins.size(); ++i) {
    const Operand& o = ins[i];
    in.push_back(o.absent ? -1
                          : pb.Buffer("x" + std::to_string(i), o.dtype, o.dims, o.role,
                                      o.init.empty() ? nullptr : o.init.data()));
  }
  for (size_t i = 0; i < outs.size(); ++i)
    out.push_back(pb.Buffer("y" + std::to_string(i), outs[i].dtype, outs[i].dims, B::OUTPUT));
  plan::Kernel* k = pb.Kernel(op, in, out);
  if (attrs) attrs(k);
  return pb.Finish();
}

// The status of one step of `f` on the CPU and on cuda-emu: both fail with the same message.
void ExpectSameError(const PlanFile& f, const std::string& want) {
  auto emu = MakeCudaEmuBackend();
  ASSERT_TRUE(emu.ok());
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(MakeCpuBackend());
  backends.push_back(std::move(emu).value());
  for (auto& be : backends) {
    const std::string name = be->name();
    auto ex = Executor::Create(f, std::move(be));
    ASSERT_TRUE(ex.ok()) << ex.status().message();
    for (const plan::Binding& b : (*ex)->plan().inputs()) {
      const plan::Buffer& buf = (*ex)->plan().buffers(b.buffer());
      const DType t = static_cast<DType>(buf.type().dtype());
      auto bytes = RandomBytes(t, static_cast<int64_t>(buf.bytes() / DTypeSize(t)), 3);
      ASSERT_TRUE((*ex)->SetInput(b.name(), bytes.data(), bytes.size()).ok());
    }
    Status s = (*ex)->Run();
    EXPECT_FALSE(s.ok()) << name;
    EXPECT_NE(s.message().find(want), std::string::npos) << name << ": " << s.message();
  }
}

// Every elementwise op of the op table (OpDef::elementwise), and every other entry of
// ops_elementwise.cc.
TEST(DeviceElementwiseTest, EveryCpuEntryHasADeviceEntryWithTheSameTypes) {
  std::vector<std::string> ops = {"Dropout", "a8.FusedElementwise"};
  for (const OpDef& op : AllOps()) {
    // Identity's kernel is the movement family's copy, one body (DeviceMovementTest).
    if (op.elementwise && op.name != "Identity") ops.push_back(QualifiedName(op));
  }
  EXPECT_GT(ops.size(), 50u);
  for (const std::string& op : ops) {
    testing::ExpectDeviceEntryLikeCpu(op);
  }
}

TEST(DeviceElementwiseTest, FloatUnary) {
  const RangeCase cases[] = {
      {"Abs", -3, 3, {}},
      {"Neg", -3, 3, {}},
      {"Relu", -3, 3, {}},
      {"Sigmoid", -9, 9, {}},
      {"Tanh", -4, 4, {}},
      {"Exp", -5, 5, {}},
      {"Log", 0.01, 9, {}},
      {"Sqrt", 0.01, 9, {}},
      {"Reciprocal", 0.1, 5, {}},
      {"Reciprocal", -5, -0.1, {}},
      {"Erf", -4, 4, {}},
      {"Floor", -5, 5, {}},
      {"Ceil", -5, 5, {}},
      {"Sin", -7, 7, {}},
      {"Cos", -7, 7, {}},
      {"Softplus", -30, 30, {}},
      {"Sign", -2, 2, {}},
      {"Gelu", -6, 6, {}},
      {"LeakyRelu", -3, 3, {}},
      {"Elu", -3, 3, {}},
      {"HardSigmoid", -5, 5, {}},
      {"Gelu", -6, 6, [](plan::Kernel* k) { Str(k, "approximate", "tanh"); }},
      {"LeakyRelu", -3, 3, AlphaAttr(0.3f)},
      {"Elu", -3, 3, AlphaAttr(0.7f)},
      {"HardSigmoid", -5, 5, AlphaBetaAttrs(0.3f, 0.4f)},
  };
  for (const RangeCase& c : cases) {
    for (DType t : kFloatTypes) {
      for (const Dims& dims : {Dims{7}, Dims{3, 5, 11}}) {
        SCOPED_TRACE(std::string(c.op) + " " + Name(t) + " n=" + std::to_string(Count(dims)));
        Inputs in = {{"x0", RandomBytes(t, Count(dims), 11, c.lo, c.hi)}};
        // The CPU's reference mode runs the shared body (its fast mode's Erf and Gelu
        // polynomials are not the oracle): bit for bit.
        ExpectEmuMatchesCpu(OneKernel(c.op, {{t, dims}}, {{t, dims}}, c.attrs), in, 0, 0);
      }
    }
  }
}

TEST(DeviceElementwiseTest, SpecialValuesAndPredicates) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {1.5, -inf, nan, inf, -2.25, -0.0, 0.0, 3.0, nan, -inf, 0.5};
  const Dims dims = {11};
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(Name(t));
    Inputs in = {{"x0", FromDoubles(t, v)}};
    for (const char* op : {"Relu", "Sign", "Abs", "Sigmoid", "Exp", "Softplus", "Gelu"}) {
      ExpectEmuMatchesCpu(OneKernel(op, {{t, dims}}, {{t, dims}}), in, 0, 0);
    }
    ExpectEmuMatchesCpu(OneKernel("IsNaN", {{t, dims}}, {{DType::kBool, dims}}), in, 0, 0);
    for (int pos = 0; pos < 2; ++pos) {
      for (int neg = 0; neg < 2; ++neg) {
        ExpectEmuMatchesCpu(OneKernel("IsInf", {{t, dims}}, {{DType::kBool, dims}},
                                      [&](plan::Kernel* k) {
                                        PlanBuilder::Int(k, "detect_positive", pos);
                                        PlanBuilder::Int(k, "detect_negative", neg);
                                      }),
                            in, 0, 0);
      }
    }
    ExpectEmuMatchesCpu(OneKernel("Max", {{t, dims}, {t, dims}}, {{t, dims}}),
                        {{"x0", in["x0"]}, {"x1", RandomBytes(t, 11, 5)}}, 0, 0);
  }
}

TEST(DeviceElementwiseTest, IntegerUnaryNotAndIdentity) {
  for (DType t : kNumericTypes) {
    const bool is_signed = !IsUnsigned(t);
    for (const char* op : {"Abs", "Neg", "Relu", "Sign"}) {
      if (!is_signed && (std::string(op) == "Neg" || std::string(op) == "Relu")) continue;
      SCOPED_TRACE(std::string(op) + " " + Name(t));
      Inputs in = {{"x0", RandomBytes(t, 37, 7, -120, 120)}};
      ExpectEmuMatchesCpu(OneKernel(op, {{t, {37}}}, {{t, {37}}}), in, 0, 0);
    }
  }
  ExpectEmuMatchesCpu(OneKernel("Not", {{DType::kBool, {3, 13}}}, {{DType::kBool, {3, 13}}}), {}, 0,
                      0);
  for (DType t : kAllTypes) {
    SCOPED_TRACE(Name(t));
    ExpectEmuMatchesCpu(OneKernel("Identity", {{t, {5, 7}}}, {{t, {5, 7}}}), {}, 0, 0);
  }
}

// The broadcasting pairs every binary test runs: same dims, a row against a column, a scalar,
// a middle broadcast dim, rank 5.
const std::vector<std::pair<Dims, Dims>> kPairs = {
    {{3, 5, 7}, {3, 5, 7}}, {{3, 1, 7}, {5, 1}}, {{}, {4, 3}},
    {{6, 1, 5}, {1, 4, 1}}, {{1}, {9}},          {{2, 3, 1, 5, 3}, {3, 4, 1, 1}}};

Dims BroadcastOf(Dims a, Dims b) {
  if (a.size() < b.size()) std::swap(a, b);
  Dims out = a;
  for (size_t i = 0; i < b.size(); ++i) {
    int64_t& o = out[a.size() - b.size() + i];
    if (o == 1) o = b[i];
  }
  return out;
}

void ExpectBinary(const std::string& op, DType ta, DType tb, DType ty, double lo, double hi,
                  const Attrs& attrs = {}) {
  for (const auto& [da, db] : kPairs) {
    SCOPED_TRACE(op + " " + Name(ta) + "," + Name(tb) + " rank " + std::to_string(da.size()) + "," +
                 std::to_string(db.size()));
    const Dims dy = BroadcastOf(da, db);
    Inputs in = {{"x0", RandomBytes(ta, Count(da), 21, lo, hi)},
                 {"x1", RandomBytes(tb, Count(db), 22, lo, hi)}};
    ExpectEmuMatchesCpu(OneKernel(op, {{ta, da}, {tb, db}}, {{ty, dy}}, attrs), in, 0, 0);
  }
}

TEST(DeviceElementwiseTest, Arithmetic) {
  for (DType t : kNumericTypes) {
    const bool is_float = IsFloat(t);
    const double lo = IsUnsigned(t) ? 0 : -50, hi = 50;
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Mod"})
      ExpectBinary(op, t, t, t, lo, hi);
    ExpectBinary("Mod", t, t, t, lo, hi, [](plan::Kernel* k) { PlanBuilder::Int(k, "fmod", 1); });
    // Small integer operands: integer Pow wraps, float Pow of a negative base is NaN both sides.
    ExpectBinary("Pow", t, t, t, is_float ? 0.1 : (IsUnsigned(t) ? 0 : -3), 3);
  }
  // Division and modulo by zero, integer overflow.
  ExpectBinary("Div", DType::kI32, DType::kI32, DType::kI32, -1.4, 1.4);
  ExpectBinary("Mod", DType::kI8, DType::kI8, DType::kI8, -1.4, 1.4);
  ExpectBinary("Mul", DType::kI8, DType::kI8, DType::kI8, -127, 127);
  // Pow with an exponent of another dtype: math in double, stored like a Cast.
  ExpectBinary("Pow", DType::kF32, DType::kI64, DType::kF32, -3, 3);
  ExpectBinary("Pow", DType::kF16, DType::kF32, DType::kF16, 0.1, 3);
  ExpectBinary("Pow", DType::kI32, DType::kF64, DType::kI32, 0, 4);
  ExpectBinary("Pow", DType::kBF16, DType::kU8, DType::kBF16, 0, 4);
  // Unsigned exponents of every width (ONNX Pow's T1), and u16 products past int's range.
  for (DType e : {DType::kU16, DType::kU32, DType::kU64, DType::kI16})
    ExpectBinary("Pow", DType::kF32, e, DType::kF32, 0, 5);
  ExpectBinary("Mul", DType::kU16, DType::kU16, DType::kU16, 30000, 65535);
}

TEST(DeviceElementwiseTest, ComparisonsAndLogic) {
  for (DType t : kNumericTypes) {
    // Integer-valued operands in a small range, so that equal pairs occur.
    for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
      ExpectBinary(op, t, t, DType::kBool, IsUnsigned(t) ? 0 : -2, 2);
  }
  for (const char* op : {"And", "Or", "Xor"})
    ExpectBinary(op, DType::kBool, DType::kBool, DType::kBool, -1, 1);
}

// The bitwise ops of integers (kernels/common/binary_math.h): shift amounts from negative to
// past the widest type's width (the out-of-range rule of BitShift-28).
TEST(DeviceElementwiseTest, BitwiseOps) {
  for (DType t : kIntegerDTypes) {
    const double lo = IsUnsigned(t) ? 0 : -100;
    for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
      ExpectBinary(op, t, t, t, lo, 100);
    for (const char* dir : {"LEFT", "RIGHT"}) {
      ExpectBinary("BitShift", t, t, t, IsUnsigned(t) ? 0 : -3, 70, [dir](plan::Kernel* k) {
        plan::Attribute* a = k->add_attrs();
        a->set_name("direction");
        a->set_s(dir);
      });
    }
  }
}

// Equal on bool, against a direct reference (the CPU kernel's own test is
// CpuKernelBinaryTest.EqualOnBool).
TEST(DeviceElementwiseTest, EqualOnBool) {
  const std::vector<uint8_t> a = {1, 0, 1, 1, 0, 0, 1}, b = {1, 1, 0};
  auto emu = MakeCudaEmuBackend();
  ASSERT_TRUE(emu.ok());
  auto got = testing::RunOn(
      OneKernel("Equal", {{DType::kBool, {7, 1}}, {DType::kBool, {3}}}, {{DType::kBool, {7, 3}}}),
      std::move(emu).value(), {{"x0", a}, {"x1", b}});
  ASSERT_EQ(got["y0"].size(), 21u);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(got["y0"][i * 3 + j], a[i] == b[j] ? 1 : 0);
}

TEST(DeviceElementwiseTest, VariadicMaxMinSumMean) {
  // 1, 3 broadcast inputs, and 11 (more than one launch holds).
  const std::vector<std::vector<Dims>> sets = {
      {{4, 5}}, {{3, 1, 5}, {4, 1}, {3, 4, 5}}, std::vector<Dims>(11, Dims{2, 7})};
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    for (DType t : std::string(op) == "Mean" ? kFloatTypes : kNumericTypes) {
      for (const auto& dims : sets) {
        SCOPED_TRACE(std::string(op) + " " + Name(t) + " x" + std::to_string(dims.size()));
        std::vector<Operand> ins;
        Inputs in;
        Dims out = dims[0];
        for (size_t i = 0; i < dims.size(); ++i) {
          ins.push_back({t, dims[i]});
          out = BroadcastOf(out, dims[i]);
          in["x" + std::to_string(i)] = RandomBytes(t, Count(dims[i]), 30 + i, 0, 9);
        }
        ExpectEmuMatchesCpu(OneKernel(op, ins, {{t, out}}), in, 0, 0);
      }
    }
  }
}

TEST(DeviceElementwiseTest, Where) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(Name(t));
    ExpectEmuMatchesCpu(OneKernel("Where", {{DType::kBool, {3, 1, 5}}, {t, {4, 1}}, {t, {3, 4, 5}}},
                                  {{t, {3, 4, 5}}}),
                        {}, 0, 0);
    ExpectEmuMatchesCpu(OneKernel("Where", {{DType::kBool, {9}}, {t, {9}}, {t, {}}}, {{t, {9}}}),
                        {}, 0, 0);
  }
}

TEST(DeviceElementwiseTest, Clip) {
  for (DType t : kNumericTypes) {
    SCOPED_TRACE(Name(t));
    const Dims d = {5, 7};
    const std::vector<uint8_t> lo = FromDoubles(t, {-1}), hi = FromDoubles(t, {1});
    Inputs in = {{"x0", RandomBytes(t, 35, 41, -3, 3)}, {"x1", lo}, {"x2", hi}};
    ExpectEmuMatchesCpu(OneKernel("Clip", {{t, d}, {t, {}}, {t, {}}}, {{t, d}}), in, 0, 0);
    // Constant bounds, one absent.
    ExpectEmuMatchesCpu(
        OneKernel("Clip", {{t, d}, {t, {}, B::CONSTANT, lo}, {t, {}, B::INPUT, {}, true}},
                  {{t, d}}),
        in, 0, 0);
    ExpectEmuMatchesCpu(OneKernel("Clip", {{t, d}, {t, {}, B::INPUT, {}, true}, {t, {}}}, {{t, d}}),
                        {{"x0", in["x0"]}, {"x2", hi}}, 0, 0);
    ExpectEmuMatchesCpu(OneKernel("Clip", {{t, d}}, {{t, d}}), in, 0, 0);
  }
  // Clip-6 attributes (f32).
  ExpectEmuMatchesCpu(OneKernel("Clip", {{DType::kF32, {9}}}, {{DType::kF32, {9}}},
                                [](plan::Kernel* k) {
                                  PlanBuilder::Float(k, "min", -0.5f);
                                  PlanBuilder::Float(k, "max", 0.75f);
                                }),
                      {}, 0, 0);
}

TEST(DeviceElementwiseTest, CastEveryPair) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v = {
      1.5,    -2.5,       1e10, -1e10, 3e38, -7.75, 65519.0,      65520.0,          300.0,
      -129.0, 255.9,      0.0,  1e-8,  inf,  -inf,  std::nan(""), 1.0 + 1.0 / 4096, 16777217.0,
      -3e9,   1234567.891};
  const Dims d = {static_cast<int64_t>(v.size())};
  for (DType from : kAllTypes) {
    for (DType to : kAllTypes) {
      SCOPED_TRACE(Name(from) + " -> " + Name(to));
      Inputs in = {{"x0", FromDoubles(from, v)}};
      ExpectEmuMatchesCpu(OneKernel("Cast", {{from, d}}, {{to, d}}), in, 0, 0);
      in["x1"] = RandomBytes(to, 1, 1);
      ExpectEmuMatchesCpu(OneKernel("CastLike", {{from, d}, {to, {1}}}, {{to, d}}), in, 0, 0);
    }
  }
}

TEST(DeviceElementwiseTest, DropoutMatchesTheCpuMask) {
  const std::vector<uint8_t> on = {1}, off = {0};
  for (DType t : kFloatTypes) {
    for (double ratio : {0.0, 0.3, 0.5, 0.9}) {
      for (DType rt : {DType::kF32, DType::kF64}) {
        SCOPED_TRACE(Name(t) + " ratio " + std::to_string(ratio) + " " + Name(rt));
        const Dims d = {3, 67};
        const std::vector<uint8_t> r = FromDoubles(rt, {ratio});
        // Constant ratio and training mode, with the mask, with and without a seed attribute.
        for (bool seeded : {false, true}) {
          ExpectEmuMatchesCpu(
              OneKernel("Dropout",
                        {{t, d}, {rt, {}, B::CONSTANT, r}, {DType::kBool, {}, B::CONSTANT, on}},
                        {{t, d}, {DType::kBool, d}},
                        [&](plan::Kernel* k) {
                          if (seeded) PlanBuilder::Int(k, "seed", 1234567);
                        }),
              {}, 0, 0, 2);
        }
        // Computed ratio and training flag; no mask output.
        ExpectEmuMatchesCpu(OneKernel("Dropout", {{t, d}, {rt, {}}, {DType::kBool, {}}}, {{t, d}}),
                            {{"x1", r}, {"x2", on}}, 0, 0);
        // Inference.
        ExpectEmuMatchesCpu(OneKernel("Dropout", {{t, d}, {rt, {}}, {DType::kBool, {}}},
                                      {{t, d}, {DType::kBool, d}}),
                            {{"x1", r}, {"x2", off}}, 0, 0);
      }
    }
    ExpectEmuMatchesCpu(OneKernel("Dropout", {{t, {13}}}, {{t, {13}}, {DType::kBool, {13}}}), {}, 0,
                        0);
  }
  ExpectSameError(OneKernel("Dropout",
                            {{DType::kF32, {5}},
                             {DType::kF32, {}, B::CONSTANT, FromDoubles(DType::kF32, {1.0})}},
                            {{DType::kF32, {5}}}),
                  "Dropout: ratio 1 is not in [0, 1)");
}

// The kernel alone with a step and seed the executor tests do not reach: the CPU kernel's mask
// from (DropoutStreamKey(seed, node), step).
TEST(DeviceElementwiseTest, DropoutReadsStepAndSeedOnTheDevice) {
  const int64_t n = 1001;
  std::vector<float> x(n), y(n), want_y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = 0.25f + static_cast<float>(i % 17);
  bool mask[1001], want_mask[1001];
  const float ratio = 0.37f;
  const bool training = true;
  emu::StepDev step;
  step.step = 123456789012345;
  step.seed = 0x9e3779b97f4a7c15ull;
  emu::DevCtx ctx;
  ctx.step = &step;
  emu::DropoutParams p;
  p.n = n;
  p.x = x.data();
  p.y = y.data();
  p.mask = mask;
  p.ratio = &ratio;
  p.training = &training;
  const std::string node = "dropout_node/7";
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : node) h = (h ^ c) * 0x100000001b3ull;
  p.node_hash = h;
  ASSERT_TRUE(emu::Dropout(ctx, p).ok());
  uint64_t z = step.seed ^ h;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  ASSERT_TRUE(cpu::Dropout(DType::kF32, n, x.data(), ratio, true, z,
                           static_cast<uint64_t>(step.step), want_y.data(), want_mask)
                  .ok());
  int kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(mask[i], want_mask[i]) << i;
    ASSERT_EQ(y[i], want_y[i]) << i;
    kept += mask[i];
  }
  EXPECT_GT(kept, n / 2);
  EXPECT_LT(kept, n * 3 / 4);
  // An evaluation step passes through.
  step.eval = 1;
  ASSERT_TRUE(emu::Dropout(ctx, p).ok());
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(mask[i] && y[i] == x[i]) << i;
  // A computed ratio outside [0, 1) (the host cannot check it): NaN outputs, nothing kept.
  const float bad = 1.5f;
  p.ratio = &bad;
  ASSERT_TRUE(emu::Dropout(ctx, p).ok());
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(!mask[i] && std::isnan(y[i])) << i;
}

TEST(DeviceElementwiseTest, DropoutGrad) {
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(Name(t));
    const Dims d = {7, 9};
    const std::vector<uint8_t> r = FromDoubles(DType::kF32, {0.3});
    ExpectEmuMatchesCpu(
        OneKernel(
            "a8.DropoutGrad",
            {{t, d}, {DType::kBool, d}, {DType::kF32, {}, B::CONSTANT, r}, {DType::kBool, {}}},
            {{t, d}}),
        {{"x3", {1}}}, 0, 0);
    ExpectEmuMatchesCpu(
        OneKernel("a8.DropoutGrad",
                  {{t, d}, {DType::kBool, d}, {DType::kF64, {}}, {DType::kBool, {}}}, {{t, d}}),
        {{"x2", FromDoubles(DType::kF64, {0.6})}, {"x3", {0}}}, 0, 0);
    ExpectEmuMatchesCpu(OneKernel("a8.DropoutGrad", {{t, d}, {DType::kBool, d}}, {{t, d}}), {}, 0,
                        0);
  }
}

TEST(DeviceElementwiseTest, ActivationGradients) {
  const RangeCase cases[] = {
      // lo, hi: of the saved operand
      {"a8.ReluGrad", -2, 2, {}},
      {"a8.SigmoidGrad", 0.01, 0.99, {}},
      {"a8.TanhGrad", -0.99, 0.99, {}},
      {"a8.LeakyReluGrad", -2, 2, {}},
      {"a8.LeakyReluGrad", -2, 2, AlphaAttr(0.2f)},
      {"a8.EluGrad", -3, 3, AlphaAttr(0.6f)},
      {"a8.EluGrad", -3, 3, {}},
      {"a8.GeluGrad", -5, 5, {}},
      {"a8.GeluGrad", -5, 5, [](plan::Kernel* k) { Str(k, "approximate", "tanh"); }},
      {"a8.ErfGrad", -3, 3, {}},
      {"a8.SoftplusGrad", -20, 20, {}},
      {"a8.HardSigmoidGrad", -5, 5, {}},
      {"a8.HardSigmoidGrad", -5, 5, AlphaBetaAttrs(0.25f, 0.6f)},
  };
  for (const RangeCase& c : cases) {
    for (DType t : kFloatTypes) {
      SCOPED_TRACE(std::string(c.op) + " " + Name(t));
      const Dims d = {5, 23};
      Inputs in = {{"x0", RandomBytes(t, Count(d), 51, -3, 3)},
                   {"x1", RandomBytes(t, Count(d), 52, c.lo, c.hi)}};
      ExpectEmuMatchesCpu(OneKernel(c.op, {{t, d}, {t, d}}, {{t, d}}, c.attrs), in, 0, 0);
    }
  }
}

TEST(DeviceElementwiseTest, FusedElementwise) {
  // r3 = r0 * r1; r4 = gelu(r3); r5 = const 0.5; r6 = r4 + r5; r7 = sigmoid_grad(r6, r2);
  // r8 = round_f16(r7); r9 = tanh(r8); r10 = r9 / r0.
  const std::vector<int64_t> program = {kFusedMul,         3, 0, 1, kFusedGelu,     4,  3, 0,
                                        kFusedConst,       5, 0, 0, kFusedAdd,      6,  4, 5,
                                        kFusedSigmoidGrad, 7, 6, 2, kFusedRoundF16, 8,  7, 0,
                                        kFusedTanh,        9, 8, 0, kFusedDiv,      10, 9, 0};
  for (DType t : kFloatTypes) {
    for (DType u : kFloatTypes) {
      SCOPED_TRACE(Name(t) + " -> " + Name(u));
      const Dims d = {3, 41};
      const auto attrs = [&](plan::Kernel* k) {
        PlanBuilder::Ints(k, "program", program);
        plan::Attribute* a = k->add_attrs();
        a->set_name("constants");
        a->mutable_floats()->add_values(0.5f);
      };
      ExpectEmuMatchesCpu(
          OneKernel("a8.FusedElementwise", {{t, d}, {t, {1}}, {t, d}}, {{u, d}}, attrs), {}, 0, 0);
    }
  }
}

TEST(DeviceElementwiseTest, ErrorsMatchTheCpu) {
  const DType f = DType::kF32;
  ExpectSameError(OneKernel("Gelu", {{f, {4}}}, {{f, {4}}},
                            [](plan::Kernel* k) { Str(k, "approximate", "cubic"); }),
                  "Gelu: approximate: unknown value 'cubic'");
  ExpectSameError(OneKernel("a8.GeluGrad", {{f, {4}}, {f, {4}}}, {{f, {4}}},
                            [](plan::Kernel* k) { Str(k, "approximate", "x"); }),
                  "a8.GeluGrad: approximate: unknown value 'x'");
  ExpectSameError(OneKernel("Add", {{f, {3, 4}}, {f, {5}}}, {{f, {3, 4}}}), "do not broadcast");
  ExpectSameError(
      OneKernel("a8.DropoutGrad",
                {{f, {4}}, {DType::kBool, {4}}, {f, {}, B::CONSTANT, FromDoubles(f, {-0.5})}},
                {{f, {4}}}),
      "a8.DropoutGrad: ratio -0.5 is not in [0, 1)");
}

// A ratio fed during the step, not a constant: the CPU backend and cuda-emu can read it on the
// host (HostBytes) and name it, as the CPU's own DropoutGrad entry did; on a GPU the kernel
// writes NaN instead.
TEST(DeviceElementwiseTest, AFedDropoutRatioOutsideTheRangeIsNamedOnBoth) {
  const DType f = DType::kF32;
  testing::OneKernelPlan p = testing::BuildOneKernelPlan(
      "a8.DropoutGrad", {{f, {4}}, {DType::kBool, {4}}, {f, {}}}, {{f, {4}}}, [](plan::Kernel*) {},
      5, 1, {{2, FromDoubles(f, {-0.5})}});
  for (bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu" : "cuda-emu");
    StatusOr<std::unique_ptr<Backend>> be = MakeCudaEmuBackend();
    if (cpu) be = MakeCpuBackend();
    ASSERT_TRUE(be.ok());
    auto ex = Executor::Create(p.plan, std::move(be).value());
    ASSERT_TRUE(ex.ok()) << ex.status().message();
    for (const auto& [name, bytes] : p.inputs)
      ASSERT_TRUE((*ex)->SetInput(name, bytes.data(), bytes.size()).ok()) << name;
    Status s = (*ex)->Run();
    EXPECT_NE(s.message().find("a8.DropoutGrad: ratio -0.5 is not in [0, 1)"), std::string::npos)
        << s.message();
  }
}

}  // namespace
}  // namespace a8

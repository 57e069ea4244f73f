// TF32 as a per-kernel decision of the plan (plan.proto Kernel.tf32_inputs): the rounding helper
// (kernels/common/tf32.h), lower writing the field in --precision=tf32 only, the validator's
// check, and both host backends (the CPU backend and cuda-emu) computing a tf32 kernel as the
// same kernel in FP32 on operands rounded to TF32, and not as plain FP32.
#include "kernels/common/tf32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "passes/lowering/lower.h"
#include "tests/unit/device_test_util.h"

namespace a8::testing {
namespace {

using Dims = std::vector<int64_t>;
using Outputs = std::map<std::string, std::vector<uint8_t>>;

float Bits(uint32_t u) { return BitsToFloat(u); }

TEST(Tf32Test, RoundsToNearestTiesToEven) {
  // TF32 keeps 10 mantissa bits: next to 1.0 the spacing is 2^-10.
  const float ulp = std::ldexp(1.0f, -10);
  EXPECT_EQ(RoundToTf32(1.0f), 1.0f);
  EXPECT_EQ(RoundToTf32(1.0f + ulp), 1.0f + ulp);              // already TF32
  EXPECT_EQ(RoundToTf32(1.0f + ulp / 2), 1.0f);                // tie: to even (down)
  EXPECT_EQ(RoundToTf32(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp);  // tie: to even (up)
  EXPECT_EQ(RoundToTf32(1.0f + ulp / 2 + std::ldexp(1.0f, -23)), 1.0f + ulp);  // past the tie
  EXPECT_EQ(RoundToTf32(1.0f + ulp / 2 - std::ldexp(1.0f, -23)), 1.0f);        // short of it
  EXPECT_EQ(RoundToTf32(-(1.0f + 3 * ulp / 2)), -(1.0f + 2 * ulp));            // sign kept
  EXPECT_EQ(RoundToTf32(2.0f - ulp / 4), 2.0f);  // the carry moves into the exponent
  // Overflow: FLT_MAX is past the midpoint of TF32's largest finite value and 2^128.
  EXPECT_EQ(RoundToTf32(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(RoundToTf32(-std::numeric_limits<float>::infinity()),
            -std::numeric_limits<float>::infinity());
  EXPECT_EQ(RoundToTf32(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(RoundToTf32(-0.0f)));
  // Subnormals round on the same 2^-13 grid of the bits.
  EXPECT_EQ(FloatToBits(RoundToTf32(Bits(0x00001000u))), 0u);       // tie to even: 0
  EXPECT_EQ(FloatToBits(RoundToTf32(Bits(0x00003000u))), 0x4000u);  // tie to even: up
  // NaN stays NaN with its sign, whatever its payload (a payload only in the low bits would
  // round to Inf, and an all-ones one would carry into the sign).
  for (uint32_t nan : {0x7f800001u, 0x7fffffffu, 0xffc00000u, 0xff800fffu}) {
    const float r = RoundToTf32(Bits(nan));
    EXPECT_TRUE(std::isnan(r)) << std::hex << nan;
    EXPECT_EQ(std::signbit(r), (nan >> 31) != 0) << std::hex << nan;
  }
  // Every result has its low 13 bits clear.
  for (uint32_t u = 0x3f800000u; u < 0x3f900000u; u += 0x777u)
    EXPECT_EQ(FloatToBits(RoundToTf32(Bits(u))) & 0x1fffu, 0u) << std::hex << u;
}

// One f32 kernel of `op` whose inputs 0 and 1 are what it multiplies.
struct Case {
  std::string op;
  std::vector<Dims> ins, outs;
  std::function<void(plan::Kernel*)> attrs;
};

std::vector<Case> Cases() {
  auto conv = [](plan::Kernel* k) { PlanBuilder::Ints(k, "pads", {1, 1, 1, 1}); };
  return {
      {"MatMul", {{2, 6, 40}, {40, 7}}, {{2, 6, 7}}, nullptr},
      {"Gemm",
       {{30, 5}, {7, 30}, {5, 7}},
       {{5, 7}},
       [](plan::Kernel* k) {
         PlanBuilder::Int(k, "transA", 1);
         PlanBuilder::Int(k, "transB", 1);
       }},
      {"Conv", {{2, 4, 9, 8}, {6, 4, 3, 3}, {6}}, {{2, 6, 9, 8}}, conv},
      {"ConvTranspose", {{2, 6, 5, 5}, {6, 4, 3, 3}}, {{2, 4, 7, 7}}, nullptr},
      {"a8.ConvGradFilter",
       {{2, 6, 9, 8}, {2, 4, 9, 8}},
       {{6, 4, 3, 3}},
       [conv](plan::Kernel* k) {
         conv(k);
         PlanBuilder::Ints(k, "kernel_shape", {3, 3});
       }},
      {"a8.FusedConv",
       {{2, 4, 9, 8}, {6, 4, 3, 3}, {6}, {2, 6, 9, 8}},
       {{2, 6, 9, 8}},
       [conv](plan::Kernel* k) {
         conv(k);
         plan::Attribute* a = k->add_attrs();
         a->set_name("activation");
         a->set_s("relu");
       }},
      {"a8.FusedMatMul",
       {{6, 40}, {40, 7}, {7}},
       {{6, 7}},
       [](plan::Kernel* k) {
         plan::Attribute* a = k->add_attrs();
         a->set_name("epilogue");
         a->set_s("bias_relu");
       }},
  };
}

// The case as a plan; `tf32`: a --precision=tf32 plan whose kernel lists inputs 0 and 1.
PlanFile CasePlan(const Case& c, bool tf32) {
  PlanBuilder b;
  std::vector<int> in, out;
  for (size_t i = 0; i < c.ins.size(); ++i)
    in.push_back(b.Buffer("in" + std::to_string(i), DType::kF32, c.ins[i], plan::Buffer::INPUT));
  for (size_t i = 0; i < c.outs.size(); ++i) {
    out.push_back(
        b.Buffer("out" + std::to_string(i), DType::kF32, c.outs[i], plan::Buffer::OUTPUT));
  }
  plan::Kernel* k = b.Kernel(c.op, in, out);
  if (c.attrs) c.attrs(k);
  PlanFile f = b.Finish();
  if (tf32) {
    f.plan.set_precision("tf32");
    f.plan.mutable_kernels(0)->add_tf32_inputs(0);
    f.plan.mutable_kernels(0)->add_tf32_inputs(1);
  }
  return f;
}

Outputs CaseInputs(const Case& c, bool rounded) {
  Outputs in;
  for (size_t i = 0; i < c.ins.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : c.ins[i]) n *= d;
    std::vector<uint8_t> bytes = RandomBytes(DType::kF32, n, 7 + 13 * static_cast<uint32_t>(i));
    if (rounded && i < 2) {
      for (int64_t j = 0; j < n; ++j) {
        float v;
        std::memcpy(&v, bytes.data() + 4 * j, 4);
        v = RoundToTf32(v);
        std::memcpy(bytes.data() + 4 * j, &v, 4);
      }
    }
    in["in" + std::to_string(i)] = std::move(bytes);
  }
  return in;
}

double MaxDiff(const Outputs& a, const Outputs& b) {
  double worst = 0;
  for (const auto& [name, bytes] : a) {
    const std::vector<double> x = AsDoubles(DType::kF32, bytes),
                              y = AsDoubles(DType::kF32, b.at(name));
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  }
  return worst;
}

std::unique_ptr<Backend> Emu() {
  auto b = MakeCudaEmuBackend();
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? std::move(b).value() : nullptr;
}

TEST(Tf32Test, BothHostBackendsRoundTheListedOperands) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.op);
    const Outputs raw = CaseInputs(c, false), rounded = CaseInputs(c, true);
    const Outputs cpu = RunOn(CasePlan(c, true), MakeCpuBackend(), raw);
    const Outputs emu = RunOn(CasePlan(c, true), Emu(), raw);
    ASSERT_FALSE(cpu.empty());
    ASSERT_FALSE(emu.empty());
    // Each backend computes the FP32 kernel on the operands rounded to TF32 (the bias, input 2,
    // is not rounded: its values are the raw ones in both runs), to the bit.
    EXPECT_EQ(cpu, RunOn(CasePlan(c, false), MakeCpuBackend(), rounded));
    EXPECT_EQ(emu, RunOn(CasePlan(c, false), Emu(), rounded));
    // The two backends agree as in FP32 (device_gemm_conv_test.cc: the emulated convolutions sum
    // in other orders than the CPU's direct ones) ...
    EXPECT_LE(MaxDiff(cpu, emu), 2e-4);
    // ... and TF32 is not FP32: inputs in [-2, 2] lose ~2^-11 of each product.
    const Outputs fp32 = RunOn(CasePlan(c, false), MakeCpuBackend(), raw);
    EXPECT_GT(MaxDiff(cpu, fp32), 1e-3);
  }
}

TEST(Tf32Test, GemmsAreBitIdenticalOnCpuAndEmu) {
  // MatMul and Gemm run the same reference GEMM on both (kernels/emu/blas.cc).
  for (const Case& c : Cases()) {
    if (c.op != "MatMul" && c.op != "Gemm") continue;
    SCOPED_TRACE(c.op);
    const Outputs raw = CaseInputs(c, false);
    EXPECT_EQ(RunOn(CasePlan(c, true), MakeCpuBackend(), raw),
              RunOn(CasePlan(c, true), Emu(), raw));
  }
}

TEST(Tf32Test, EveryOpThatMultipliesIsCheckedOnBothBackends) {
  // OpDef::tf32_inputs names real inputs, ascending, and each such op has a case above (a new
  // GEMM-like op must show that both host backends round what it lists).
  std::set<std::string> covered;
  for (const Case& c : Cases()) covered.insert(c.op);
  int ops = 0;
  for (const OpDef& op : AllOps()) {
    if (op.tf32_inputs.empty()) continue;
    ++ops;
    EXPECT_TRUE(covered.count(QualifiedName(op))) << QualifiedName(op) << " has no case";
    for (size_t j = 0; j < op.tf32_inputs.size(); ++j) {
      const int i = op.tf32_inputs[j];
      EXPECT_TRUE(i >= 0 && (op.max_inputs < 0 || i < op.max_inputs)) << op.name << " " << i;
      if (j > 0) {
        EXPECT_LT(op.tf32_inputs[j - 1], i) << op.name;
      }
    }
  }
  EXPECT_EQ(ops, static_cast<int>(covered.size()));
}

TEST(Tf32Test, ValidatorWantsExactlyTheF32MultiplicandsOfATf32Plan) {
  const Case c = Cases()[0];  // MatMul
  PlanFile fp32 = CasePlan(c, false);
  fp32.plan.mutable_kernels(0)->add_tf32_inputs(0);
  Status s = ValidatePlan(fp32, "t.plan");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "t.plan: kernel 0 ('MatMul:f32,f32->f32'): tf32_inputs [0] in a 'fp32' plan (only "
            "--precision=tf32 reads operands as TF32)");

  PlanFile old = CasePlan(c, true);
  old.plan.mutable_kernels(0)->clear_tf32_inputs();
  s = ValidatePlan(old, "t.plan");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "t.plan: kernel 0 ('MatMul:f32,f32->f32'): tf32_inputs [], expected [0, 1] (the f32 "
            "inputs that op 'MatMul' multiplies; a tf32 plan from an older a800c lists none: "
            "recompile it)");

  EXPECT_TRUE(ValidatePlan(CasePlan(c, true), "t.plan").ok());
}

TEST(Tf32Test, LowerListsTheF32MultiplicandsInTf32PlansOnly) {
  auto g = ParseIr(R"(graph @t opsets {"" = 17} {
  input %x : f32[2,3]
  param %w : f32[3,4] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
  param %b : f32[4] = [1, 2, 3, 4]
  %h = Gemm(%x, %w, %b) : f32[2,4] loc("gemm0")
  %y = Relu(%h) : f32[2,4] loc("relu0")
  output %y
  memory {alignment=64, arena=128, lower_bound=64} {
    %x offset=0 bytes=24 live=[-1, 0]
    %h offset=64 bytes=32 live=[0, 1]
    %y offset=0 bytes=32 live=[1, 2]
  }
}
)",
                   "t.a8ir");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_TRUE(Verify(**g).ok());
  for (PrecisionMode mode : {PrecisionMode::kFp32, PrecisionMode::kTf32, PrecisionMode::kAmp}) {
    SCOPED_TRACE(PrecisionModeName(mode));
    CompileConfig config;
    config.precision = PrecisionConfig{};
    config.precision->mode = mode;
    LowerOptions lower;
    lower.config = &config;
    auto pf = LowerToPlan(**g, lower);
    ASSERT_TRUE(pf.ok()) << pf.status().message();
    ASSERT_EQ(pf->plan.kernels_size(), 2);
    const plan::Kernel& gemm = pf->plan.kernels(0);
    EXPECT_EQ(std::vector<int>(gemm.tf32_inputs().begin(), gemm.tf32_inputs().end()),
              mode == PrecisionMode::kTf32 ? std::vector<int>({0, 1}) : std::vector<int>{});
    EXPECT_EQ(pf->plan.kernels(1).tf32_inputs_size(), 0);  // Relu multiplies nothing
    EXPECT_TRUE(ValidatePlan(*pf, "t.plan").ok());
  }
}

}  // namespace
}  // namespace a8::testing

// The GEMM / convolution family of the CUDA backend (runtime/device/ops_gemm_conv.cc, the BLAS
// engine of kernels/device/blas.h and its fallbacks in gemm_conv*_impl.h), run through the host
// emulation against the CPU backend, and the engine's GemmDesc semantics against float64.
//
// Tolerances: the emulated engine accumulates in the CPU's compute type (float for f32/f16/bf16,
// double for f64) but not always in the CPU kernels' order (the CPU's direct convolution and its
// per-sample GEMMs sum in other orders than im2col over a chunk of samples, the filter gradient
// sums the batch in one GEMM), so float results differ by a few float ulps and f16/bf16 results,
// rounded once from such floats, may differ by one ulp of their type. Integers are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kernels/common/fused_elementwise.h"
#include "kernels/device/blas.h"
#include "kernels/device/gemm_conv.h"
#include "kernels/device/launch.h"
#include "tests/unit/device_test_util.h"

namespace a8::testing {
namespace {

using Dims = std::vector<int64_t>;
using AttrFn = std::function<void(plan::Kernel*)>;

constexpr DType kF32 = DType::kF32, kF16 = DType::kF16, kBF16 = DType::kBF16, kF64 = DType::kF64;
constexpr DType kI32 = DType::kI32, kI64 = DType::kI64;
const DType kFloats[] = {kF32, kF16, kBF16, kF64};

struct Operand {
  Dims dims;
  bool absent = false;
};
Operand D(Dims d) { return {std::move(d)}; }
Operand None() { return {{}, true}; }

// Relative tolerance per dtype (see the file comment); absolute = the same times `scale`, the
// typical magnitude of a sum (sums near zero lose the relative bound to cancellation).
double Tol(DType t) {
  switch (t) {
    case kF32:
      return 2e-5;
    case kF16:
      return 2e-3;
    case kBF16:
      return 1.6e-2;
    case kF64:
      return 1e-12;
    default:
      return 0;
  }
}

// Runs `op` with every operand of dtype `t` (integer inputs in [-4, 4]) on the CPU backend and
// on cuda-emu; every output must agree within Tol(t).
// exact: bit for bit (no tolerance).
void Expect(const std::string& op, DType t, const std::vector<Operand>& ins,
            const std::vector<Operand>& outs, const AttrFn& attrs = nullptr, double scale = 8,
            bool exact = false) {
  SCOPED_TRACE(op + " " + std::string(DTypeName(t)));
  const double range = IsFloat(t) ? 2 : 4;
  std::vector<KernelOperand> kernel_ins, kernel_outs;
  for (const Operand& in : ins) kernel_ins.push_back({t, in.dims, -range, range, in.absent});
  for (const Operand& out : outs) kernel_outs.push_back({t, out.dims});
  const OneKernelPlan p = BuildOneKernelPlan(op, kernel_ins, kernel_outs, attrs, 31, 17);
  ExpectEmuMatchesCpu(p.plan, p.inputs, exact ? 0 : Tol(t), exact ? 0 : Tol(t) * scale);
}

// ---- MatMul

TEST(DeviceGemmConvTest, MatMulShapes) {
  struct Case {
    Dims a, b, y;
  };
  const Case cases[] = {
      {{7, 5}, {5, 9}, {7, 9}},                    // plain
      {{3, 4, 6}, {3, 6, 5}, {3, 4, 5}},           // strided batch
      {{2, 3, 4, 6}, {6, 5}, {2, 3, 4, 5}},        // B shared: batch folded into M
      {{4, 6}, {2, 3, 6, 5}, {2, 3, 4, 5}},        // A broadcast: stride 0
      {{2, 1, 4, 6}, {1, 3, 6, 5}, {2, 3, 4, 5}},  // both broadcast: host loop + batch
      {{3, 1, 4, 6}, {5, 6, 7}, {3, 5, 4, 7}},     // rank differs
      {{2, 3, 1, 4, 6}, {3, 2, 6, 5}, {2, 3, 2, 4, 5}},
      {{6}, {6, 5}, {5}},  // 1-D operands
      {{4, 6}, {6}, {4}},
      {{2, 4, 6}, {6}, {2, 4}},
      {{6}, {3, 6, 2}, {3, 2}},
      {{6}, {6}, {}},
      {{3, 70, 96}, {96, 65}, {3, 70, 65}},  // the CPU GEMM's vector tiles and thread split
      {{2, 64, 33}, {2, 33, 130}, {2, 64, 130}},
  };
  for (const Case& c : cases) {
    for (DType t : {kF32, kF16, kBF16, kF64, kI32, kI64})
      Expect("MatMul", t, {D(c.a), D(c.b)}, {D(c.y)});
  }
}

// ---- Gemm

TEST(DeviceGemmConvTest, GemmTransposesAlphaBetaC) {
  const int64_t m = 5, n = 7, k = 3;
  const Dims c_shapes[] = {{}, {n}, {1, n}, {m, 1}, {m, n}, {1, 1}};
  for (DType t : {kF32, kF16, kBF16, kF64, kI32, kI64}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        const Dims a = ta ? Dims{k, m} : Dims{m, k}, b = tb ? Dims{n, k} : Dims{k, n};
        const auto attrs = [&](float alpha, float beta) {
          return [=](plan::Kernel* kn) {
            PlanBuilder::Int(kn, "transA", ta);
            PlanBuilder::Int(kn, "transB", tb);
            PlanBuilder::Float(kn, "alpha", alpha);
            PlanBuilder::Float(kn, "beta", beta);
          };
        };
        Expect("Gemm", t, {D(a), D(b)}, {D({m, n})}, attrs(1.0f, 1.0f));
        for (const Dims& c : c_shapes)
          Expect("Gemm", t, {D(a), D(b), D(c)}, {D({m, n})}, attrs(0.5f, 2.0f));
        Expect("Gemm", t, {D(a), D(b), D({m, n})}, {D({m, n})}, attrs(3.0f, 0.0f));
        Expect("Gemm", t, {D(a), D(b), D({n})}, {D({m, n})}, attrs(-2.0f, 1.0f));
      }
    }
  }
}

// ---- convolutions

struct ConvCase {
  Dims x = {}, w = {}, y = {};
  Dims strides = {}, dilations = {}, pads = {}, output_padding = {};
  int64_t group = 1;
  bool bias = true;
};

AttrFn ConvAttrs(const ConvCase& c) {
  return [c](plan::Kernel* k) {
    if (!c.strides.empty()) PlanBuilder::Ints(k, "strides", c.strides);
    if (!c.dilations.empty()) PlanBuilder::Ints(k, "dilations", c.dilations);
    if (!c.pads.empty()) PlanBuilder::Ints(k, "pads", c.pads);
    if (!c.output_padding.empty()) PlanBuilder::Ints(k, "output_padding", c.output_padding);
    if (c.group != 1) PlanBuilder::Int(k, "group", c.group);
  };
}

// a8.ConvGradFilter's attributes: the Conv's, and the filter's spatial dims.
AttrFn ConvGradFilterAttrs(const ConvCase& c) {
  return [c](plan::Kernel* k) {
    ConvAttrs(c)(k);
    PlanBuilder::Ints(k, "kernel_shape", Dims(c.w.begin() + 2, c.w.end()));
  };
}

// Conv cases: y = conv(x, w); the filter-gradient test reuses them (dW of w's dims).
const std::vector<ConvCase>& ConvCases() {
  static const std::vector<ConvCase> cases = {
      {{2, 4, 9, 8}, {6, 4, 3, 3}, {2, 6, 9, 8}, {}, {}, {1, 1, 1, 1}},
      {{2, 3, 9, 10}, {5, 3, 3, 2}, {2, 5, 4, 5}, {2, 2}, {2, 1}, {0, 1, 2, 0}},  // asymmetric
      {{2, 4, 7, 7}, {6, 2, 3, 3}, {2, 6, 4, 4}, {2, 2}, {}, {1, 1, 1, 1}, {}, 2},
      {{1, 6, 6, 5}, {6, 1, 3, 3}, {1, 6, 6, 5}, {}, {}, {1, 1, 1, 1}, {}, 6},  // depthwise
      {{2, 6, 5, 5}, {4, 6, 1, 1}, {2, 4, 5, 5}},                               // pointwise
      {{3, 3, 11}, {5, 3, 3}, {3, 5, 6}, {2}, {}, {1, 2}},                      // 1-D
      {{2, 2, 9}, {4, 1, 2}, {2, 4, 3}, {2}, {3}, {0, 0}, {}, 2, false},
      {{1, 2, 5, 6, 4}, {3, 2, 3, 2, 2}, {1, 3, 5, 3, 4}, {1, 2, 1}, {1, 2, 1}, {1, 0, 0, 1, 1, 1}},
      {{2, 3, 4, 4}, {2, 3, 2, 2}, {2, 2, 3, 3}, {}, {}, {}, {}, 1, false},
      {{3, 16, 14, 13}, {24, 16, 3, 3}, {3, 24, 7, 7}, {2, 2}, {}, {1, 1, 1, 1}},  // bigger
  };
  return cases;
}

TEST(DeviceGemmConvTest, Conv) {
  for (const ConvCase& c : ConvCases()) {
    for (DType t : kFloats) {
      const Operand bias = c.bias ? D({c.w[0]}) : None();
      Expect("Conv", t, {D(c.x), D(c.w), bias}, {D(c.y)}, ConvAttrs(c), 16);
    }
  }
}

// a8.FusedConv: Conv's cases with the residual Z (with and without bias) and with Relu.
TEST(DeviceGemmConvTest, FusedConv) {
  for (const ConvCase& c : ConvCases()) {
    for (DType t : kFloats) {
      for (const char* activation : {"relu", "none"}) {
        const Operand bias = c.bias ? D({c.w[0]}) : None();
        const AttrFn conv = ConvAttrs(c);
        Expect(
            "a8.FusedConv", t, {D(c.x), D(c.w), bias, D(c.y)}, {D(c.y)},
            [&](plan::Kernel* k) {
              conv(k);
              plan::Attribute* a = k->add_attrs();
              a->set_name("activation");
              a->set_s(activation);
            },
            16);
      }
    }
  }
}

TEST(DeviceGemmConvTest, ConvGradFilter) {
  for (const ConvCase& c : ConvCases()) {
    for (DType t : kFloats) {
      // dW sums over batch and positions: up to ~2 * 4 * 9 * 8 products of magnitude <= 4.
      Expect("a8.ConvGradFilter", t, {D(c.y), D(c.x)}, {D(c.w)}, ConvGradFilterAttrs(c), 64);
    }
  }
}

// The filter gradient's sum over samples x positions is one GEMM per chunk of samples on both
// sides (kernels/common/conv_batch_chunk.h), so cuda-emu equals the CPU reference bit for bit,
// also where several samples share a GEMM (small images: EfficientNet's squeeze-excitation 1x1
// convs on [N, C, 1, 1] and its depthwise convs differed in the last bit when the CPU summed
// each sample's GEMM into dW).
TEST(DeviceGemmConvTest, ConvGradFilterBitForBitOverTheBatch) {
  const ConvCase cases[] = {
      {{16, 24, 1, 1}, {6, 24, 1, 1}, {16, 6, 1, 1}},                               // SE 1x1
      {{8, 12, 4, 4}, {12, 1, 3, 3}, {8, 12, 4, 4}, {}, {}, {1, 1, 1, 1}, {}, 12},  // depthwise
      {{8, 4, 6, 6}, {6, 4, 3, 3}, {8, 6, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
  };
  for (const ConvCase& c : cases) {
    for (DType t : kFloats) {
      Expect("a8.ConvGradFilter", t, {D(c.y), D(c.x)}, {D(c.w)}, ConvGradFilterAttrs(c), 0,
             /*exact=*/true);
    }
  }
}

TEST(DeviceGemmConvTest, ConvTranspose) {
  // x [N, C, in...], w [C, M / group, k...], y [N, M, out...].
  const ConvCase cases[] = {
      {{2, 4, 5, 5}, {4, 3, 3, 3}, {2, 3, 10, 10}, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}},
      {{2, 4, 4, 3}, {4, 2, 2, 3}, {2, 4, 9, 4}, {2, 1}, {2, 1}, {0, 1, 0, 0}, {}, 2},
      {{1, 3, 6}, {3, 2, 3}, {1, 2, 13}, {2}, {}, {0, 0}, {}},
      {{2, 3, 7}, {3, 4, 2}, {2, 4, 21}, {3}, {}, {1, 0}, {2}, 1, false},
      {{1, 2, 3, 3, 2},
       {2, 2, 2, 2, 2},
       {1, 2, 6, 4, 3},
       {2, 1, 1},
       {},
       {0, 0, 0, 0, 0, 0},
       {0, 0, 0}},
      {{2, 6, 4, 4}, {6, 3, 1, 1}, {2, 3, 4, 4}},  // pointwise
      {{2, 6, 4, 4}, {6, 2, 1, 1}, {2, 6, 4, 4}, {}, {}, {}, {}, 3, false},
  };
  for (const ConvCase& c : cases) {
    for (DType t : kFloats) {
      const Operand bias = c.bias ? D({c.y[1]}) : None();
      Expect("ConvTranspose", t, {D(c.x), D(c.w), bias}, {D(c.y)}, ConvAttrs(c), 16);
    }
  }
}

// Bad attributes fail on the device backend as on the CPU, with the CPU's message.
Status RunPlan(const PlanFile& f, std::unique_ptr<Backend> backend) {
  A8_ASSIGN_OR_RETURN(auto ex, Executor::Create(f, std::move(backend)));
  for (const plan::Binding& b : ex->plan().inputs()) {
    const plan::Buffer& buf = ex->plan().buffers(b.buffer());
    const DType t = static_cast<DType>(buf.type().dtype());
    const std::vector<uint8_t> bytes = RandomBytes(t, buf.bytes() / DTypeSize(t), 5);
    A8_RETURN_IF_ERROR(ex->SetInput(b.name(), bytes.data(), bytes.size()));
  }
  return ex->Run();
}

TEST(DeviceGemmConvTest, BadAttributesFailLikeTheCpu) {
  struct Case {
    std::string op;
    std::vector<Dims> ins;
    Dims out;
    AttrFn attrs;
    std::string message;
  };
  const Case cases[] = {
      {"Gemm", {{4, 3}, {3, 5}, {2, 5}}, {4, 5}, nullptr, "do not broadcast"},
      {"Gemm", {{4, 3, 1}, {3, 5}}, {4, 5}, nullptr, "must be 2-D"},
      {"MatMul", {{4, 3}, {4, 5}}, {4, 5}, nullptr, "inner dims differ"},
      {"Conv",
       {{1, 2, 5, 5}, {3, 2, 3, 3}},
       {1, 3, 3, 3},
       [](plan::Kernel* k) {
         PlanBuilder::Ints(k, "strides", {1, 1, 1});
       },
       "strides has 3 values"},
      {"Conv",
       {{1, 4, 5, 5}, {3, 2, 3, 3}},
       {1, 3, 3, 3},
       [](plan::Kernel* k) { PlanBuilder::Int(k, "group", 3); },
       "group 3 does not divide"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + ": " + c.message);
    PlanBuilder b;
    std::vector<int> ins;
    for (size_t i = 0; i < c.ins.size(); ++i)
      ins.push_back(b.Buffer("in" + std::to_string(i), kF32, c.ins[i], plan::Buffer::INPUT));
    plan::Kernel* k = b.Kernel(c.op, ins, {b.Buffer("out", kF32, c.out, plan::Buffer::OUTPUT)});
    if (c.attrs) c.attrs(k);
    const PlanFile f = b.Finish();
    auto emu = MakeCudaEmuBackend();
    ASSERT_TRUE(emu.ok());
    const Status cpu_status = RunPlan(f, MakeCpuBackend());
    const Status dev_status = RunPlan(f, std::move(emu).value());
    EXPECT_FALSE(cpu_status.ok());
    EXPECT_FALSE(dev_status.ok());
    EXPECT_NE(cpu_status.message().find(c.message), std::string::npos) << cpu_status.message();
    EXPECT_NE(dev_status.message().find(c.message), std::string::npos) << dev_status.message();
  }
}

// ---- the engine's GemmDesc semantics against float64 (padded leading dims, transposes, batch
// strides of 0, an f32 output of 16-bit inputs, epilogues with bias, aux, pre and bias_grad)

struct EngineCase {
  bool trans_a, trans_b;
  int64_t batch;
  bool shared_b;  // stride_b = 0
  double alpha, beta;
  emu::GemmEpilogue epilogue;
  bool tanh_form, pre, bgrad, wide_out;
};

void CheckEngineCase(DType t, const EngineCase& c) {
  using emu::GemmEpilogue;
  const int64_t m = 5, n = 6, k = 7, pad = 3;
  emu::GemmDesc d;
  d.a_type = d.b_type = t;
  d.c_type = c.wide_out ? kF32 : t;
  d.trans_a = c.trans_a;
  d.trans_b = c.trans_b;
  d.m = m;
  d.n = n;
  d.k = k;
  d.lda = (c.trans_a ? m : k) + pad;
  d.ldb = (c.trans_b ? k : n) + pad;
  d.ldc = n + pad;
  d.batch = c.batch;
  const int64_t a_rows = c.trans_a ? k : m, b_rows = c.trans_b ? n : k;
  d.stride_a = a_rows * d.lda;
  d.stride_b = c.shared_b ? 0 : b_rows * d.ldb + 1;
  d.stride_c = m * d.ldc + 2;
  d.alpha = c.alpha;
  d.beta = c.beta;
  d.epilogue = c.epilogue;
  d.gelu_tanh = c.tanh_form;
  const int32_t fe = FusedEpilogueOf(c.epilogue);  // the FusedEpilogue of the case; -1: none
  const bool has_bias = fe >= 0 && EpilogueHasBias(fe),
             backward = fe >= 0 && EpilogueIsBackward(fe);
  auto rand = [](DType dt, int64_t count, uint32_t seed) { return RandomBytes(dt, count, seed); };
  const DType ct = d.c_type;
  std::vector<uint8_t> a = rand(t, c.batch * d.stride_a, 1),
                       b = rand(t, c.batch * b_rows * d.ldb + c.batch, 2),
                       y = rand(ct, c.batch * d.stride_c, 3), bias = rand(ct, n, 4),
                       aux = rand(ct, m * n, 5),
                       pre(static_cast<size_t>(m * d.ldc * c.batch + 2 * c.batch) * DTypeSize(ct)),
                       bgrad(static_cast<size_t>(n) * DTypeSize(ct));
  const std::vector<double> av = AsDoubles(t, a), bv = AsDoubles(t, b), y0 = AsDoubles(ct, y),
                            biasv = AsDoubles(ct, bias), auxv = AsDoubles(ct, aux);
  d.a = a.data();
  d.b = b.data();
  d.c = y.data();
  if (has_bias) d.bias = bias.data();
  if (backward) {
    d.aux = aux.data();
    d.ldaux = n;
  }
  if (c.pre) d.pre = pre.data();
  if (c.bgrad) d.bias_grad = bgrad.data();
  std::unique_ptr<emu::BlasEngine> engine;
  ASSERT_TRUE(emu::MakeBlasEngine(nullptr, &engine).ok());
  emu::DevCtx ctx;
  ctx.blas = engine.get();
  const emu::DevStatus s = engine->Gemm(ctx, d);
  ASSERT_TRUE(s.ok()) << s.what;
  const std::vector<double> got = AsDoubles(ct, y), got_pre = AsDoubles(ct, pre),
                            got_bgrad = AsDoubles(ct, bgrad);
  std::vector<double> col_sum(static_cast<size_t>(n), 0.0);
  for (int64_t bi = 0; bi < c.batch; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double x = av[bi * d.stride_a + (c.trans_a ? l * d.lda + i : i * d.lda + l)];
          const double w = bv[bi * d.stride_b + (c.trans_b ? j * d.ldb + l : l * d.ldb + j)];
          sum += x * w;
        }
        const int64_t at = bi * d.stride_c + i * d.ldc + j;
        const double acc = c.alpha * sum + (c.beta != 0 ? c.beta * y0[at] : 0.0);
        double want = acc, want_pre = acc;
        if (fe >= 0)
          want = ApplyEpilogue<double>(fe, c.tanh_form, acc, has_bias ? biasv[j] : 0.0,
                                       backward ? auxv[i * n + j] : 0.0, &want_pre);
        col_sum[j] += want;
        EXPECT_NEAR(got[at], want, Tol(ct) * 16 + Tol(t) * std::fabs(want) * 2)
            << "b " << bi << " i " << i << " j " << j;
        if (c.pre) {
          EXPECT_NEAR(got_pre[at], want_pre, Tol(ct) * 16 + Tol(t) * std::fabs(want_pre) * 2);
        }
      }
    }
  }
  for (int64_t j = 0; c.bgrad && j < n; ++j) {
    EXPECT_NEAR(got_bgrad[j], col_sum[j], Tol(t) * 64 + Tol(t) * std::fabs(col_sum[j]) * 2);
  }
  // Padding between rows and batches is never written.
  for (int64_t bi = 0; bi < c.batch; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = n;
           j < d.ldc && bi * d.stride_c + i * d.ldc + j < static_cast<int64_t>(got.size()); ++j) {
        const int64_t at = bi * d.stride_c + i * d.ldc + j;
        EXPECT_EQ(got[at], y0[at]);
      }
    }
  }
}

TEST(DeviceGemmConvTest, EngineGemmDescAgainstFloat64) {
  using emu::GemmEpilogue;
  const EngineCase cases[] = {
      {false, false, 1, false, 1.0, 0.0, GemmEpilogue::kNone, false, false, false, false},
      {true, false, 3, false, 0.5, 2.0, GemmEpilogue::kNone, false, false, false, false},
      {false, true, 3, true, -1.5, 0.0, GemmEpilogue::kNone, false, false, false, false},
      {true, true, 2, false, 1.0, 1.0, GemmEpilogue::kNone, false, false, false, true},
      {false, true, 2, true, 1.0, 0.0, GemmEpilogue::kBias, false, false, false, false},
      {true, false, 2, false, 2.0, 1.0, GemmEpilogue::kBiasRelu, false, true, false, false},
      {false, false, 1, false, 1.0, 0.0, GemmEpilogue::kBiasGelu, true, true, false, true},
      {false, false, 3, true, 1.0, 0.0, GemmEpilogue::kGelu, false, false, false, false},
      {false, true, 1, false, 1.0, 0.0, GemmEpilogue::kRelu, false, true, false, false},
      {false, false, 1, false, 1.0, 0.0, GemmEpilogue::kDRelu, false, false, true, false},
      {true, true, 1, false, 1.0, 0.0, GemmEpilogue::kDGelu, false, false, true, false},
      {false, true, 1, false, 1.0, 0.0, GemmEpilogue::kDGelu, true, false, false, true},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    for (DType t : kFloats) {
      if (t == kF64 && cases[i].wide_out) continue;  // f64 products have f64 outputs only
      CheckEngineCase(t, cases[i]);
    }
  }
}

// ---- a8.FusedMatMul

TEST(DeviceGemmConvTest, FusedMatMulEpilogues) {
  const int64_t m1 = 2, m2 = 3, k = 8, n = 5;
  const char* const kNames[] = {"bias",  "bias_relu", "bias_gelu",   "relu",       "gelu",
                                "drelu", "dgelu",     "drelu_bgrad", "dgelu_bgrad"};
  for (DType t : kFloats) {
    for (const char* name : kNames) {
      const std::string e = name;
      const bool has_bias = e.rfind("bias", 0) == 0;
      const bool backward = e[0] == 'd';
      const bool bgrad = e.find("_bgrad") != std::string::npos;
      for (int trans_b = 0; trans_b < 2; ++trans_b) {
        for (const char* approx : {"none", "tanh"}) {
          const std::vector<Operand> ins = {D({m1, m2, k}), D(trans_b ? Dims{n, k} : Dims{k, n}),
                                            has_bias ? D({n}) : None(),
                                            backward ? D({m1, m2, n}) : None()};
          std::vector<Operand> outs = {D({m1, m2, n})};
          if (bgrad) outs.push_back(D({n}));
          if (!backward && e != "bias") outs.push_back(D({m1, m2, n}));  // pre-activation
          Expect(
              "a8.FusedMatMul", t, ins, outs,
              [&](plan::Kernel* kn) {
                plan::Attribute* a = kn->add_attrs();
                a->set_name("epilogue");
                a->set_s(e);
                plan::Attribute* ap = kn->add_attrs();
                ap->set_name("approximate");
                ap->set_s(approx);
                PlanBuilder::Int(kn, "trans_b", trans_b);
              },
              bgrad ? 32 : 8);
        }
      }
    }
  }
}

}  // namespace
}  // namespace a8::testing

// The fuse pass's CPU kernels (kernels/cpu/fused.h) against float64 references on random data:
// every epilogue of a8.FusedMatMul and every opcode of a8.FusedElementwise, all float dtypes,
// odd sizes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/fused.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using testing::Buffer;
using testing::ExpectClose;
using testing::RandomBuffer;
using testing::RoundTo;
using testing::ToleranceFor;
using testing::Values;

const DType kDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};

double Gelu(double x, bool tanh_form) {
  if (tanh_form) return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

double GeluGrad(double dy, double x, bool tanh_form) {
  if (tanh_form) {
    const double k = 0.7978845608028654, c = 0.044715;
    const double t = std::tanh(k * (x + c * x * x * x));
    return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x));
  }
  return dy *
         (0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI));
}

struct MatMulCase {
  const char* epilogue;
  bool trans_b;
  bool tanh_form;
};

TEST(FusedMatMulKernelTest, EveryEpilogueMatchesFloat64) {
  const MatMulCase cases[] = {
      {"bias", false, false},        {"bias_relu", true, false}, {"bias_gelu", false, false},
      {"bias_gelu", true, true},     {"relu", false, false},     {"gelu", true, false},
      {"drelu", false, false},       {"dgelu", true, true},      {"drelu_bgrad", true, false},
      {"dgelu_bgrad", false, false},
  };
  std::mt19937_64 rng(7);
  for (DType dtype : kDTypes) {
    for (const MatMulCase& c : cases) {
      for (const Dims& a_dims : {Dims{1, 1}, Dims{3, 5, 7}, Dims{13, 33}}) {
        SCOPED_TRACE(std::string(c.epilogue) + " " + ElemName(dtype) +
                     " k=" + std::to_string(a_dims.back()));
        const int64_t k = a_dims.back(), n = 9;
        const int64_t m = NumElements(a_dims) / k;
        FusedMatMulParams p;
        p.dtype = dtype;
        p.m = m;
        p.n = n;
        p.k = k;
        p.trans_b = c.trans_b;
        p.tanh_form = c.tanh_form;
        p.epilogue = ParseFusedEpilogue(c.epilogue, &p.bgrad);
        ASSERT_GE(p.epilogue, 0);
        Buffer a = RandomBuffer(dtype, a_dims, rng);
        Buffer b = RandomBuffer(dtype, c.trans_b ? Dims{n, k} : Dims{k, n}, rng);
        Buffer bias = RandomBuffer(dtype, {n}, rng);
        Buffer aux = RandomBuffer(dtype, {m, n}, rng);
        Buffer y = testing::MakeBuffer(dtype, {m, n});
        Buffer out1 = testing::MakeBuffer(dtype, p.bgrad ? Dims{n} : Dims{m, n});
        const bool has_bias = EpilogueHasBias(p.epilogue),
                   backward = EpilogueIsBackward(p.epilogue);
        const bool has_out1 = p.bgrad || (!backward && p.epilogue != kEpilogueBias);
        ASSERT_TRUE(FusedMatMul(p, a.data(), b.data(), has_bias ? bias.data() : nullptr,
                                backward ? aux.data() : nullptr, y.data(),
                                has_out1 ? out1.data() : nullptr)
                        .ok());
        const std::vector<double> av = Values(a), bv = Values(b), biasv = Values(bias),
                                  auxv = Values(aux);
        std::vector<double> want(m * n), mag(m * n), pre(m * n), pre_mag(m * n), bgrad(n, 0.0),
            bgrad_mag(n, 0.0);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double acc = 0, sum_abs = 0;
            for (int64_t l = 0; l < k; ++l) {
              const double t = av[i * k + l] * (c.trans_b ? bv[j * k + l] : bv[l * n + j]);
              acc += t;
              sum_abs += std::fabs(t);
            }
            const double x = has_bias ? acc + biasv[j] : acc;
            const double s = sum_abs + (has_bias ? std::fabs(biasv[j]) : 0.0);
            const std::string e = c.epilogue;
            double v = x, vmag = s;
            if (e == "bias_relu" || e == "relu") v = x > 0 ? x : 0;
            if (e == "bias_gelu" || e == "gelu") v = Gelu(x, c.tanh_form);
            if (e.rfind("drelu", 0) == 0) v = auxv[i * n + j] > 0 ? acc : 0;
            if (e.rfind("dgelu", 0) == 0) {
              v = GeluGrad(acc, auxv[i * n + j], c.tanh_form);
              vmag = std::fabs(GeluGrad(s, auxv[i * n + j], c.tanh_form));
            }
            if (e.find("gelu") != std::string::npos && !backward) vmag = 1.2 * s;
            want[i * n + j] = RoundTo(dtype, v);
            mag[i * n + j] = vmag;
            pre[i * n + j] = RoundTo(dtype, x);
            pre_mag[i * n + j] = s;
            bgrad[j] += v;
            bgrad_mag[j] += vmag;
          }
        }
        const double tol = ToleranceFor(dtype);
        ExpectClose(y, want, tol, &mag);
        if (p.bgrad) {
          for (int64_t j = 0; j < n; ++j) bgrad[j] = RoundTo(dtype, bgrad[j]);
          ExpectClose(out1, bgrad, tol, &bgrad_mag);
        } else if (has_out1) {
          ExpectClose(out1, pre, tol, &pre_mag);
        }
      }
    }
  }
}

TEST(FusedMatMulKernelTest, RejectsMismatchedOperands) {
  FusedMatMulParams p;
  p.m = p.n = p.k = 2;
  p.epilogue = kEpilogueBias;
  float a[4] = {1, 2, 3, 4}, y[4];
  auto message = [&] {
    Status s = FusedMatMul(p, a, a, nullptr, nullptr, y, nullptr);
    return s.ok() ? std::string("ok") : s.message();
  };
  const std::string want = "got the wrong bias/aux operands";
  EXPECT_THAT(message(), ::testing::HasSubstr("epilogue " + std::to_string(p.epilogue) + " " +
                                              want));  // bias missing
  p.epilogue = kEpilogueDRelu;
  EXPECT_THAT(message(), ::testing::HasSubstr("epilogue " + std::to_string(p.epilogue) + " " +
                                              want));  // aux missing
}

// One opcode through a program: r0, r1 inputs, r2 = op(r0, r1).
double Reference(int32_t op, double a, double b) {
  switch (op) {
    case kFusedRelu:
      return a > 0 ? a : 0;
    case kFusedGelu:
      return Gelu(a, false);
    case kFusedGeluTanh:
      return Gelu(a, true);
    case kFusedSigmoid:
      return 1 / (1 + std::exp(-a));
    case kFusedTanh:
      return std::tanh(a);
    case kFusedExp:
      return std::exp(a);
    case kFusedLog:
      return std::log(std::fabs(a));
    case kFusedNeg:
      return -a;
    case kFusedAbs:
      return std::fabs(a);
    case kFusedSqrt:
      return std::sqrt(std::fabs(a));
    case kFusedReciprocal:
      return 1 / a;
    case kFusedErf:
      return std::erf(a);
    case kFusedAdd:
      return a + b;
    case kFusedSub:
      return a - b;
    case kFusedMul:
      return a * b;
    case kFusedDiv:
      return a / b;
    case kFusedReluGrad:
      return b > 0 ? a : 0;
    case kFusedGeluGrad:
      return GeluGrad(a, b, false);
    case kFusedGeluTanhGrad:
      return GeluGrad(a, b, true);
    case kFusedSigmoidGrad:
      return a * b * (1 - b);
    case kFusedTanhGrad:
      return a * (1 - b * b);
    default:  // opcodes added with their op (Mish): the shared body in double
      return EvalFusedUnary<double>(op, a, b);
  }
}

TEST(FusedElementwiseKernelTest, EveryOpcodeMatchesFloat64) {
  std::mt19937_64 rng(11);
  for (DType dtype : kDTypes) {
    for (int32_t op = kFusedRelu; op < kFusedNumOpcodes; ++op) {
      if (op >= kFusedRoundF16 && op <= kFusedRoundF32) continue;  // RoundingCasts below
      SCOPED_TRACE("opcode " + std::to_string(op) + " " + ElemName(dtype));
      const int64_t count = 37;
      // Inputs away from 0 for Log/Sqrt/Reciprocal/Div (abs taken by Log/Sqrt in the program).
      Buffer x = RandomBuffer(dtype, {count}, rng, 0.25, 2.0);
      Buffer w = RandomBuffer(dtype, {count}, rng, -2.0, 2.0);
      for (int64_t i = 0; i < count; i += 2) testing::SetValue(x, i, -testing::GetValue(x, i));
      std::vector<int64_t> code;
      const bool needs_abs = op == kFusedLog || op == kFusedSqrt;
      if (needs_abs) {
        code = {kFusedAbs, 2, 0, 0, op, 3, 2, 0};
      } else {
        code = {op, 2, 0, 1};
      }
      FusedProgram program;
      ASSERT_TRUE(DecodeFusedProgram(code.data(), static_cast<int64_t>(code.size()), nullptr, 0, 2,
                                     &program));
      const void* ins[2] = {x.data(), w.data()};
      const int64_t counts[2] = {count, count};
      Buffer y = testing::MakeBuffer(dtype, {count});
      ASSERT_TRUE(FusedElementwise(program, dtype, ins, counts, dtype, count, y.data()).ok());
      const std::vector<double> xv = Values(x), wv = Values(w);
      std::vector<double> want(count);
      for (int64_t i = 0; i < count; ++i) want[i] = RoundTo(dtype, Reference(op, xv[i], wv[i]));
      ExpectClose(y, want, 4 * ToleranceFor(dtype));
    }
  }
}

TEST(FusedElementwiseKernelTest, ChainWithConstantsBroadcastAndCast) {
  // y = f16(relu(x * 0.5 + s) ) - x, with s a one-element input, x f32 [5,7], y f16.
  std::mt19937_64 rng(3);
  Buffer x = RandomBuffer(DType::kF32, {5, 7}, rng);
  Buffer s = RandomBuffer(DType::kF32, {1}, rng);
  const std::vector<int64_t> code = {kFusedConst,    2, 0, 0, kFusedMul,  3, 0, 2,
                                     kFusedAdd,      4, 3, 1, kFusedRelu, 5, 4, 0,
                                     kFusedRoundF16, 6, 5, 0, kFusedSub,  7, 6, 0};
  const float consts[] = {0.5f};
  FusedProgram program;
  ASSERT_TRUE(
      DecodeFusedProgram(code.data(), static_cast<int64_t>(code.size()), consts, 1, 2, &program));
  const void* ins[2] = {x.data(), s.data()};
  const int64_t counts[2] = {35, 1};
  Buffer y = testing::MakeBuffer(DType::kF16, {5, 7});
  ASSERT_TRUE(FusedElementwise(program, DType::kF32, ins, counts, DType::kF16, 35, y.data()).ok());
  const std::vector<double> xv = Values(x);
  const double sv = Values(s)[0];
  std::vector<double> want(35);
  for (int i = 0; i < 35; ++i) {
    const double r = std::max(0.0, static_cast<double>(static_cast<float>(xv[i] * 0.5 + sv)));
    want[i] = RoundTo(DType::kF16, RoundTo(DType::kF16, r) - xv[i]);
  }
  ExpectClose(y, want, ToleranceFor(DType::kF16));
}

TEST(FusedElementwiseKernelTest, InvalidProgramsAreRejected) {
  FusedProgram p;
  const std::vector<int64_t> use_before_def = {kFusedAdd, 1, 0, 1};
  EXPECT_FALSE(DecodeFusedProgram(use_before_def.data(), 4, nullptr, 0, 1, &p));
  const std::vector<int64_t> bad_dst = {kFusedNeg, 5, 0, 0};
  EXPECT_FALSE(DecodeFusedProgram(bad_dst.data(), 4, nullptr, 0, 1, &p));
  const std::vector<int64_t> bad_const = {kFusedConst, 1, 0, 0};
  EXPECT_FALSE(DecodeFusedProgram(bad_const.data(), 4, nullptr, 0, 1, &p));
  const std::vector<int64_t> bad_op = {99, 1, 0, 0};
  EXPECT_FALSE(DecodeFusedProgram(bad_op.data(), 4, nullptr, 0, 1, &p));
  EXPECT_FALSE(DecodeFusedProgram(bad_op.data(), 3, nullptr, 0, 1, &p));
  const int64_t in[2] = {1, 3};
  float x[3] = {1, 2, 3}, y[3];
  const std::vector<int64_t> ok = {kFusedAdd, 2, 0, 1};
  ASSERT_TRUE(DecodeFusedProgram(ok.data(), 4, nullptr, 0, 2, &p));
  const void* ins[2] = {x, x};
  const int64_t wrong[2] = {2, 3};
  EXPECT_FALSE(FusedElementwise(p, DType::kF32, ins, wrong, DType::kF32, 3, y).ok());
  EXPECT_TRUE(FusedElementwise(p, DType::kF32, ins, in, DType::kF32, 3, y).ok());
  EXPECT_EQ(y[2], 4.0f);
}

}  // namespace
}  // namespace a8::cpu

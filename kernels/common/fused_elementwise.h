// The per-element math of the fused kernels (passes/fusion/fuse.h), one host/device body (A8_HD,
// as in float16.h) so the CPU reference and the CUDA kernels evaluate the same program the same
// way.
//
// - a8.FusedElementwise carries a small register program: registers r0..r(n-1) hold the n inputs'
//   elements, instruction i writes register n + i (SSA), and the last instruction's register is
//   the result. Encoding (the node's attributes): `program` = ints, four per instruction
//   (opcode, dst, src0, src1); `constants` = floats, read by kFusedConst (dst = constants[src0]).
//   Unary opcodes ignore src1. Math is in A (float for f32/f16/bf16, double for f64); kFusedRound*
//   round to a narrower type exactly as a Cast would, so the only roundings the unfused plan does
//   that the fused one drops are those of f16/bf16 intermediate results.
// - a8.FusedMatMul's epilogue functions (FusedGelu, FusedGeluGrad, ...) are the same formulas as
//   the unfused Gelu / a8.GeluGrad kernels (kernels/cpu/elementwise.cc, grad_math.cc).
//
// Plain arrays and ::expf-style math only: no std:: containers, no exceptions.
#pragma once

#include <math.h>
#include <stdint.h>

#include "kernels/common/float16.h"

namespace a8 {

// Limits of one program; the fuse pass never builds a bigger one.
inline constexpr int kFusedMaxInputs = 16;
inline constexpr int kFusedMaxInstrs = 48;
inline constexpr int kFusedMaxRegs = kFusedMaxInputs + kFusedMaxInstrs;
inline constexpr int kFusedMaxConsts = 16;

enum FusedOpcode : int32_t {
  kFusedConst = 0,  // dst = constants[src0]
  // Unary: dst = f(src0).
  kFusedRelu = 1,
  kFusedGelu = 2,      // 0.5 x erfc(-x / sqrt 2)
  kFusedGeluTanh = 3,  // Gelu approximate="tanh"
  kFusedSigmoid = 4,
  kFusedTanh = 5,
  kFusedExp = 6,
  kFusedLog = 7,
  kFusedNeg = 8,
  kFusedAbs = 9,
  kFusedSqrt = 10,
  kFusedReciprocal = 11,
  kFusedErf = 12,
  kFusedRoundF16 = 13,   // Cast to f16 and back: rounds to nearest even
  kFusedRoundBF16 = 14,  // Cast to bf16 and back
  kFusedRoundF32 = 15,   // Cast to f32 and back (changes something only when A is double)
  // Binary: dst = f(src0, src1).
  kFusedAdd = 16,
  kFusedSub = 17,
  kFusedMul = 18,
  kFusedDiv = 19,
  // Activation gradients (a8.*Grad): src0 = dy, src1 = the saved tensor the op reads.
  kFusedReluGrad = 20,      // src1 = y: y > 0 ? dy : 0
  kFusedGeluGrad = 21,      // src1 = x
  kFusedGeluTanhGrad = 22,  // src1 = x
  kFusedSigmoidGrad = 23,   // src1 = y: dy y (1 - y)
  kFusedTanhGrad = 24,      // src1 = y: dy (1 - y^2)
  kFusedNumOpcodes = 25,
};

A8_HD bool FusedOpcodeIsBinary(int32_t op) { return op >= kFusedAdd && op < kFusedNumOpcodes; }

struct FusedProgram {
  int32_t num_inputs;
  int32_t num_instrs;
  int32_t num_consts;
  int32_t code[kFusedMaxInstrs][4];  // (opcode, dst, src0, src1)
  float consts[kFusedMaxConsts];
};

// Decodes and checks a program (attribute `program`, `constants`) for `num_inputs` inputs: the
// limits, opcodes, SSA destinations and sources defined before use. False when invalid.
A8_HD bool DecodeFusedProgram(const int64_t* code, int64_t code_len, const float* consts,
                              int64_t num_consts, int64_t num_inputs, FusedProgram* p) {
  if (num_inputs < 1 || num_inputs > kFusedMaxInputs || code_len % 4 != 0) return false;
  const int64_t n = code_len / 4;
  if (n < 1 || n > kFusedMaxInstrs || num_consts < 0 || num_consts > kFusedMaxConsts) return false;
  p->num_inputs = static_cast<int32_t>(num_inputs);
  p->num_instrs = static_cast<int32_t>(n);
  p->num_consts = static_cast<int32_t>(num_consts);
  for (int64_t c = 0; c < num_consts; ++c) p->consts[c] = consts[c];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t op = code[4 * i], dst = code[4 * i + 1], s0 = code[4 * i + 2],
                  s1 = code[4 * i + 3];
    if (op < 0 || op >= kFusedNumOpcodes || dst != num_inputs + i) return false;
    if (op == kFusedConst) {
      if (s0 < 0 || s0 >= num_consts) return false;
    } else {
      if (s0 < 0 || s0 >= dst) return false;
      if (FusedOpcodeIsBinary(static_cast<int32_t>(op)) && (s1 < 0 || s1 >= dst)) return false;
    }
    for (int k = 0; k < 4; ++k) p->code[i][k] = static_cast<int32_t>(code[4 * i + k]);
  }
  return true;
}

// libm by overload: float calls the f-suffixed function (a device intrinsic under nvcc).
A8_HD float FusedExpOf(float x) { return ::expf(x); }
A8_HD double FusedExpOf(double x) { return ::exp(x); }
A8_HD float FusedLogOf(float x) { return ::logf(x); }
A8_HD double FusedLogOf(double x) { return ::log(x); }
A8_HD float FusedTanhOf(float x) { return ::tanhf(x); }
A8_HD double FusedTanhOf(double x) { return ::tanh(x); }
A8_HD float FusedErfOf(float x) { return ::erff(x); }
A8_HD double FusedErfOf(double x) { return ::erf(x); }
A8_HD float FusedErfcOf(float x) { return ::erfcf(x); }
A8_HD double FusedErfcOf(double x) { return ::erfc(x); }
A8_HD float FusedSqrtOf(float x) { return ::sqrtf(x); }
A8_HD double FusedSqrtOf(double x) { return ::sqrt(x); }
A8_HD float FusedAbsOf(float x) { return ::fabsf(x); }
A8_HD double FusedAbsOf(double x) { return ::fabs(x); }

template <typename A>
A8_HD A FusedRelu(A x) {
  return x > A(0) ? x : (x == x ? A(0) : x);
}

template <typename A>
A8_HD A FusedSigmoid(A x) {
  if (x >= A(0)) return A(1) / (A(1) + FusedExpOf(-x));
  const A e = FusedExpOf(x);
  return e / (A(1) + e);
}

// Gelu: 0.5 x erfc(-x / sqrt 2) (no cancellation for x < 0); tanh form x / (1 + exp(-2u)).
template <typename A>
A8_HD A FusedGelu(A x, bool tanh_form) {
  if (tanh_form) {
    const A u = A(0.79788456080286535588) * (x + A(0.044715) * x * x * x);
    return x / (A(1) + FusedExpOf(A(-2) * u));
  }
  // erfc(+Inf) is 0 and (-Inf) * 0 is NaN: Gelu(-Inf) is -0.
  const A c = FusedErfcOf(-x * A(0.70710678118654752440));
  return c == A(0) ? (x < A(0) ? -A(0) : A(0)) : A(0.5) * x * c;
}

// d/dx Gelu(x) times dy, as a8.GeluGrad computes it.
template <typename A>
A8_HD A FusedGeluGrad(A dy, A x, bool tanh_form) {
  if (tanh_form) {
    const A k = A(0.79788456080286535588), c = A(0.044715);
    const A u = k * (x + c * x * x * x);
    const A s = FusedSigmoid(A(2) * u);
    const A du = k * (A(1) + A(3) * c * x * x);
    return dy * (s + A(2) * x * s * (A(1) - s) * du);
  }
  const A cdf = A(0.5) * FusedErfcOf(-x * A(0.70710678118654752440));
  const A pdf = FusedExpOf(A(-0.5) * x * x) * A(0.39894228040143267794);
  return dy * (cdf + x * pdf);
}

template <typename A>
A8_HD A FusedRound(int32_t op, A x) {
  const float f = static_cast<float>(x);
  if (op == kFusedRoundF16) return static_cast<A>(HalfBitsToFloat(FloatToHalfBits(f)));
  if (op == kFusedRoundBF16) return static_cast<A>(BFloat16BitsToFloat(FloatToBFloat16Bits(f)));
  return static_cast<A>(f);
}

// One program on one element: in_vals[i] is input i's element (converted to A).
template <typename A>
A8_HD A EvalFused(const FusedProgram& p, const A* in_vals) {
  A r[kFusedMaxRegs];
  for (int i = 0; i < p.num_inputs; ++i) r[i] = in_vals[i];
  int32_t dst = 0;
  for (int i = 0; i < p.num_instrs; ++i) {
    const int32_t op = p.code[i][0];
    dst = p.code[i][1];
    const A a = op == kFusedConst ? static_cast<A>(p.consts[p.code[i][2]]) : r[p.code[i][2]];
    const A b = FusedOpcodeIsBinary(op) ? r[p.code[i][3]] : A(0);
    A v = a;
    switch (op) {
      case kFusedRelu:
        v = FusedRelu(a);
        break;
      case kFusedGelu:
        v = FusedGelu(a, false);
        break;
      case kFusedGeluTanh:
        v = FusedGelu(a, true);
        break;
      case kFusedSigmoid:
        v = FusedSigmoid(a);
        break;
      case kFusedTanh:
        v = FusedTanhOf(a);
        break;
      case kFusedExp:
        v = FusedExpOf(a);
        break;
      case kFusedLog:
        v = FusedLogOf(a);
        break;
      case kFusedNeg:
        v = -a;
        break;
      case kFusedAbs:
        v = FusedAbsOf(a);
        break;
      case kFusedSqrt:
        v = FusedSqrtOf(a);
        break;
      case kFusedReciprocal:
        v = A(1) / a;
        break;
      case kFusedErf:
        v = FusedErfOf(a);
        break;
      case kFusedRoundF16:
      case kFusedRoundBF16:
      case kFusedRoundF32:
        v = FusedRound(op, a);
        break;
      case kFusedAdd:
        v = a + b;
        break;
      case kFusedSub:
        v = a - b;
        break;
      case kFusedMul:
        v = a * b;
        break;
      case kFusedDiv:
        v = a / b;
        break;
      case kFusedReluGrad:
        v = b > A(0) ? a : A(0);
        break;
      case kFusedGeluGrad:
        v = FusedGeluGrad(a, b, false);
        break;
      case kFusedGeluTanhGrad:
        v = FusedGeluGrad(a, b, true);
        break;
      case kFusedSigmoidGrad:
        v = a * b * (A(1) - b);
        break;
      case kFusedTanhGrad:
        v = a * (A(1) - b * b);
        break;
      default:
        break;  // kFusedConst
    }
    r[dst] = v;
  }
  return r[dst];
}

// a8.FusedMatMul's epilogues (attribute `epilogue`), applied to acc = (A @ B)[i, j] in float.
enum FusedEpilogue : int32_t {
  kEpilogueBias = 0,      // acc + bias[j]
  kEpilogueBiasRelu = 1,  // relu(acc + bias[j])
  kEpilogueBiasGelu = 2,  // gelu(acc + bias[j])
  kEpilogueRelu = 3,      // relu(acc)
  kEpilogueGelu = 4,      // gelu(acc)
  kEpilogueDRelu = 5,     // aux > 0 ? acc : 0 (aux = the forward Relu's output)
  kEpilogueDGelu = 6,     // acc * gelu'(aux) (aux = the forward Gelu's input)
};

// The epilogue named `name` ("bias", "bias_relu", "bias_gelu", "relu", "gelu", "drelu", "dgelu",
// "drelu_bgrad", "dgelu_bgrad"); *bgrad says whether the bias gradient is output 1. -1: unknown.
A8_HD int32_t ParseFusedEpilogue(const char* name, bool* bgrad) {
  const char* const kNames[] = {"bias",  "bias_relu", "bias_gelu",   "relu",       "gelu",
                                "drelu", "dgelu",     "drelu_bgrad", "dgelu_bgrad"};
  for (int32_t i = 0; i < 9; ++i) {
    const char* a = name;
    const char* b = kNames[i];
    while (*a != 0 && *a == *b) ++a, ++b;
    if (*a == 0 && *b == 0) {
      *bgrad = i >= 7;
      return i >= 7 ? i - 2 : i;
    }
  }
  return -1;
}

A8_HD bool EpilogueHasBias(int32_t e) { return e <= kEpilogueBiasGelu; }
A8_HD bool EpilogueIsBackward(int32_t e) { return e >= kEpilogueDRelu; }

// The epilogue value of one element; *pre gets the pre-activation (forward epilogues).
template <typename A>
A8_HD A ApplyEpilogue(int32_t e, bool tanh_form, A acc, A bias, A aux, A* pre) {
  const A x = EpilogueHasBias(e) ? acc + bias : acc;
  *pre = x;
  switch (e) {
    case kEpilogueBiasRelu:
    case kEpilogueRelu:
      return FusedRelu(x);
    case kEpilogueBiasGelu:
    case kEpilogueGelu:
      return FusedGelu(x, tanh_form);
    case kEpilogueDRelu:
      return aux > A(0) ? acc : A(0);
    case kEpilogueDGelu:
      return FusedGeluGrad(acc, aux, tanh_form);
    default:
      return x;  // kEpilogueBias
  }
}

}  // namespace a8

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
// - a8.FusedMatMul's epilogue functions (FusedGelu, FusedGeluGrad) run the same bodies as the
//   unfused Gelu / a8.GeluGrad kernels (kernels/common/unary_math.h).
//
// The per-op math is kernels/common/unary_math.h's. Plain arrays only: no std:: containers, no
// exceptions.
#pragma once

#include <math.h>
#include <stdint.h>

#include "kernels/common/float16.h"
#include "kernels/common/unary_math.h"

namespace a8 {

// Limits of one program; the fuse pass never builds a bigger one.
inline constexpr int kFusedMaxInputs = 16;
inline constexpr int kFusedMaxInstrs = 48;
inline constexpr int kFusedMaxRegs = kFusedMaxInputs + kFusedMaxInstrs;
inline constexpr int kFusedMaxConsts = 16;

// Opcodes: the fixed ones below, and one per fusable unary op and activation gradient, the Fused
// column of kernels/common/unary_math.h's lists (-1 there: not fusable). Opcodes are part of the
// plan format: never renumber, only append.
enum FusedOpcode : int32_t {
  kFusedConst = 0,       // dst = constants[src0]
  kFusedRoundF16 = 13,   // Cast to f16 and back: rounds to nearest even
  kFusedRoundBF16 = 14,  // Cast to bf16 and back
  kFusedRoundF32 = 15,   // Cast to f32 and back (changes something only when A is double)
  // Binary: dst = f(src0, src1).
  kFusedAdd = 16,
  kFusedSub = 17,
  kFusedMul = 18,
  kFusedDiv = 19,
// Unary: dst = NameF(src0).
#define A8_X(Name, Types, Cost, Fused) kFused##Name = Fused,
  A8_UNARY_OPS(A8_X)
#undef A8_X
// Activation gradients (a8.*Grad): dst = NameGradF(src0 = dy, src1 = the saved tensor).
#define A8_X(Name, Reads, Cost, Fused) kFused##Name##Grad = Fused,
      A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
};

// One past the largest opcode.
constexpr int32_t FusedOpcodeEnd() {
  int32_t end = kFusedDiv + 1;
#define A8_X(Name, Kind, Cost, Fused) end = Fused + 1 > end ? Fused + 1 : end;
  A8_UNARY_OPS(A8_X)
  A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
  return end;
}
inline constexpr int32_t kFusedNumOpcodes = FusedOpcodeEnd();

// Whether `op` is a defined opcode.
A8_HD bool FusedOpcodeIsValid(int32_t op) {
  if (op == kFusedConst || (op >= kFusedRoundF16 && op <= kFusedDiv)) return true;
#define A8_X(Name, Kind, Cost, Fused) \
  if (Fused > 0 && op == Fused) return true;
  A8_UNARY_OPS(A8_X)
  A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
  return false;
}

// Binary opcodes: arithmetic and the activation gradients.
A8_HD bool FusedOpcodeIsBinary(int32_t op) {
  if (op >= kFusedAdd && op <= kFusedDiv) return true;
#define A8_X(Name, Reads, Cost, Fused) \
  if (Fused > 0 && op == Fused) return true;
  A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
  return false;
}

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
    if (!FusedOpcodeIsValid(static_cast<int32_t>(op)) || dst != num_inputs + i) return false;
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

// a8.FusedConv's epilogue as a program over (Y[, Z]) (compiler/ir/op_table_fused.cc): + Z where
// `z`, then Relu where `relu`; at least one of them. The backends run it over Y in place where
// the convolution did not apply it as it stored Y.
inline void FusedConvEpilogue(bool z, bool relu, FusedProgram* p) {
  const int32_t n = z ? 2 : 1;  // registers 0 (Y) and 1 (Z)
  const int32_t add[4] = {kFusedAdd, n, 0, 1};
  const int32_t act[4] = {kFusedRelu, n + (z ? 1 : 0), z ? n : 0, 0};
  p->num_inputs = n;
  p->num_instrs = 0;
  p->num_consts = 0;
  const int32_t* steps[2] = {z ? add : nullptr, relu ? act : nullptr};
  for (const int32_t* c : steps) {
    if (c == nullptr) continue;
    for (int k = 0; k < 4; ++k) p->code[p->num_instrs][k] = c[k];
    ++p->num_instrs;
  }
}

// Gelu and its gradient (approximate="tanh" or not), as the unfused kernels compute them.
template <typename A>
A8_HD A FusedGelu(A x, bool tanh_form) {
  return tanh_form ? GeluTanhF{}(x) : GeluF{}(x);
}
template <typename A>
A8_HD A FusedGeluGrad(A dy, A x, bool tanh_form) {
  return tanh_form ? GeluTanhGradF{}(dy, x) : GeluGradF{}(dy, x);
}

// The unary and activation-gradient opcodes: the shared bodies of kernels/common/unary_math.h.
// (Labels of ops that are not fusable are distinct negative numbers no program contains.)
template <typename A>
A8_HD A EvalFusedUnary(int32_t op, A a, A b) {
  switch (op) {
#define A8_X(Name, Types, Cost, Fused)                                      \
  case (Fused > 0 ? Fused : -2 - static_cast<int32_t>(UnaryKind::k##Name)): \
    if constexpr (Fused > 0) return static_cast<A>(Name##F{}(a));           \
    break;
    A8_UNARY_OPS(A8_X)
#undef A8_X
#define A8_X(Name, Reads, Cost, Fused)                                           \
  case (Fused > 0 ? Fused : -1000 - static_cast<int32_t>(ActGradKind::k##Name)): \
    if constexpr (Fused > 0) return Name##GradF{}(a, b);                         \
    break;
    A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
    default:
      break;
  }
  return a;
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
      case kFusedConst:
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
      default:
        v = EvalFusedUnary(op, a, b);
        break;
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
      return ReluF{}(x);
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

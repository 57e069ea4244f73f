#include "kernels/cpu/fused.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

// The fast mode converts in vector registers (fast_convert.h), the reference one element at a
// time through float16.h.
template <typename T>
std::vector<float> ToFloat(const T* x, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count));
  if constexpr (kIsHalfElem<T>) {
    if (CurrentKernelMode() == KernelMode::kFast) {
      ParallelFor(count, 1, [&](int64_t b, int64_t e) { ToF32(x + b, out.data() + b, e - b); });
      return out;
    }
  }
  for (int64_t i = 0; i < count; ++i) out[i] = Load(x[i]);
  return out;
}

// Elements of a block of the fast FusedElementwise: the program's registers for a block
// (kFusedMaxRegs rows, of which a program touches a few) stay within L1.
constexpr int64_t kFusedBlock = 128;

// EvalFusedUnary over a block with the opcode a compile-time constant, so that its switch folds
// away and the loop vectorises (a switch an element, as before, was 17% of the example CNN's
// forward step: its add + relu block). The shared body itself: the same values. b is null for a
// unary opcode, which reads no second operand.
template <int32_t Op>
void UnaryLoop(int64_t len, const float* a, const float* b, float* out) {
  if (b != nullptr) {
    for (int64_t i = 0; i < len; ++i) out[i] = EvalFusedUnary(Op, a[i], b[i]);
  } else {
    for (int64_t i = 0; i < len; ++i) out[i] = EvalFusedUnary(Op, a[i], 0.0f);
  }
}

template <int32_t... Ops>
void UnaryLoopOf(std::integer_sequence<int32_t, Ops...>, int32_t op, int64_t len, const float* a,
                 const float* b, float* out) {
  using Loop = void (*)(int64_t, const float*, const float*, float*);
  static constexpr Loop kLoops[] = {&UnaryLoop<Ops>...};
  kLoops[op](len, a, b, out);
}

// One loop a unary or activation-gradient opcode (DecodeFusedProgram has checked it is one).
void UnaryBlock(int32_t op, int64_t len, const float* a, const float* b, float* out) {
  if (op < 0 || op >= kFusedNumOpcodes) {  // EvalFusedUnary's identity for what is no opcode
    std::copy(a, a + len, out);
    return;
  }
  UnaryLoopOf(std::make_integer_sequence<int32_t, kFusedNumOpcodes>{}, op, len, a, b, out);
}

// EvalFused<float> over `len` elements at once, instruction by instruction: each opcode is
// decoded once a block rather than once an element, and the arithmetic loops vectorise. Each
// element sees the same float operations in the same order as EvalFused's: the same values.
// r[j] is register j's row (input j's elements on entry: a block row, or the f32 input itself,
// which no instruction writes); the last instruction writes `last` instead when it is not null
// (the f32 output: element i of an input read before element i of the result is written, so it
// may be an input's own bytes; a program of no instructions has no last one, so not then).
// Returns the row of the program's result.
const float* EvalFusedBlock(const FusedProgram& p, float* const* r, int64_t len, float* last) {
  int32_t dst = 0;
  for (int k = 0; k < p.num_instrs; ++k) {
    const int32_t op = p.code[k][0];
    dst = p.code[k][1];
    float* out = last != nullptr && k + 1 == p.num_instrs ? last : r[dst];
    if (op == kFusedConst) {
      std::fill(out, out + len, p.consts[p.code[k][2]]);
      continue;
    }
    const float* a = r[p.code[k][2]];
    const float* b = FusedOpcodeIsBinary(op) ? r[p.code[k][3]] : nullptr;
    switch (op) {
      case kFusedAdd:
        for (int64_t i = 0; i < len; ++i) out[i] = a[i] + b[i];
        break;
      case kFusedSub:
        for (int64_t i = 0; i < len; ++i) out[i] = a[i] - b[i];
        break;
      case kFusedMul:
        for (int64_t i = 0; i < len; ++i) out[i] = a[i] * b[i];
        break;
      case kFusedDiv:
        for (int64_t i = 0; i < len; ++i) out[i] = a[i] / b[i];
        break;
      // The round trips through f16/bf16 in vector registers (fast_convert.h: the scalar body's
      // bits, NaN payloads aside). Through FusedRound, an f16 rounding an element in software,
      // an amp Cast fused after a Div took 200 us against the Div's 18 (example BERT's step).
      case kFusedRoundF16: {
        Half h[kFusedBlock];
        FloatToHalf(a, h, len);
        HalfToFloat(h, out, len);
        break;
      }
      case kFusedRoundBF16: {
        BFloat16 h[kFusedBlock];
        FloatToBFloat16(a, h, len);
        BFloat16ToFloat(h, out, len);
        break;
      }
      case kFusedRoundF32:
        for (int64_t i = 0; i < len; ++i) out[i] = FusedRound(op, a[i]);
        break;
      default:
        UnaryBlock(op, len, a, b, out);
        break;
    }
  }
  return last != nullptr ? last : r[dst];
}

// FusedElementwise over [b, e) in the fast mode for f32/f16/bf16 operands: each input's block
// converted to float (in vector registers for f16/bf16), the program evaluated in float a block
// at a time (EvalFusedBlock), one rounding of each output.
template <typename T, typename U>
void FusedBlocks(const FusedProgram& program, const void* const* inputs, const int64_t* in_counts,
                 int64_t b, int64_t e, void* y) {
  const int n_in = program.num_inputs;
  float block[kFusedMaxRegs][kFusedBlock];
  float* r[kFusedMaxRegs];
  for (int j = 0; j < kFusedMaxRegs; ++j) r[j] = block[j];
  for (int j = 0; j < n_in; ++j) {  // broadcast scalars, converted once
    if (in_counts[j] == 1) {
      float v;
      ToF32(static_cast<const T*>(inputs[j]), &v, 1);
      std::fill(r[j], r[j] + kFusedBlock, v);
    }
  }
  // f32 inputs are read where they lie and an f32 result written where it goes, without a copy
  // through the block rows, unless an instruction writes an input's register.
  bool inputs_read_only = true;
  for (int k = 0; k < program.num_instrs; ++k) inputs_read_only &= program.code[k][1] >= n_in;
  constexpr bool kF32In = std::is_same_v<T, float>, kF32Out = std::is_same_v<U, float>;
  for (int64_t i0 = b; i0 < e; i0 += kFusedBlock) {
    const int64_t len = std::min(kFusedBlock, e - i0);
    for (int j = 0; j < n_in; ++j) {
      if (in_counts[j] == 1) continue;
      const T* x = static_cast<const T*>(inputs[j]) + i0;
      if constexpr (kF32In) {
        if (inputs_read_only) {
          r[j] = const_cast<float*>(x);  // read only: no instruction writes register j
          continue;
        }
      }
      ToF32(x, r[j], len);
    }
    if constexpr (kF32Out) {
      if (program.num_instrs > 0) {
        EvalFusedBlock(program, r, len, static_cast<float*>(y) + i0);
        continue;
      }
    }
    FromF32(EvalFusedBlock(program, r, len, nullptr), static_cast<U*>(y) + i0, len);
  }
}

// ApplyEpilogue over one block, the epilogue a compile-time constant so that the loop has no
// switch and vectorizes (it ran a switch per element: a quarter of the example mlp's step).
// Absent bias and aux operands read zeros, as before. acc gets the value, pb the pre-activation.
constexpr float kZeros[kF32Block] = {};

template <int32_t E>
void EpilogueRunAs(int32_t e, bool tanh_form, int64_t len, float* acc, const float* bias,
                   const float* aux, float* pb) {
  for (int64_t j = 0; j < len; ++j) {
    float pre;
    acc[j] = ApplyEpilogue<float>(E >= 0 ? E : e, tanh_form, acc[j], bias[j], aux[j], &pre);
    pb[j] = pre;
  }
}

void EpilogueRun(int32_t e, bool tanh_form, int64_t len, float* acc, const float* bias,
                 const float* aux, float* pb) {
  switch (e) {
    case kEpilogueBias:
      return EpilogueRunAs<kEpilogueBias>(e, tanh_form, len, acc, bias, aux, pb);
    case kEpilogueBiasRelu:
      return EpilogueRunAs<kEpilogueBiasRelu>(e, tanh_form, len, acc, bias, aux, pb);
    case kEpilogueRelu:
      return EpilogueRunAs<kEpilogueRelu>(e, tanh_form, len, acc, bias, aux, pb);
    case kEpilogueDRelu:
      return EpilogueRunAs<kEpilogueDRelu>(e, tanh_form, len, acc, bias, aux, pb);
    default:  // the GELUs' tanh form (the erf form has a branch of its own): e at run time
      return EpilogueRunAs<-1>(e, tanh_form, len, acc, bias, aux, pb);
  }
}

// FusedMatMul's epilogue in the fast mode for f32/f16/bf16: float blocks of each row, operands
// and outputs converted in vector registers (fast_convert.h); the same math and one rounding of
// each output, but the erf GELU through the Gelu op's fast polynomial (GeluErfF32). acc holds the
// product on entry and the epilogue's value on return (the bias gradient sums it); for f32, acc
// is y, so each value is written once (a copy of it into y was a fifth of the epilogue's time).
template <typename T>
void EpilogueBlocks(const FusedMatMulParams& p, bool pre_out, float* acc, const T* bias,
                    const T* aux, T* y, T* out1) {
  const std::vector<float> bias_f = bias != nullptr ? ToFloat(bias, p.n) : std::vector<float>();
  // The erf GELU through the Gelu op's fast polynomial (ApplyEpilogue's body calls erfcf).
  const bool erf_gelu =
      !p.tanh_form && (p.epilogue == kEpilogueBiasGelu || p.epilogue == kEpilogueGelu);
  const bool add_bias = bias != nullptr && EpilogueHasBias(p.epilogue);
  const bool erf_gelu_grad = !p.tanh_form && p.epilogue == kEpilogueDGelu && aux != nullptr;
  const bool y_is_acc = static_cast<const void*>(y) == static_cast<const void*>(acc);
  ParallelFor(p.m, p.n * 4, [&](int64_t r0, int64_t r1) {
    float xb[kF32Block], pb[kF32Block];
    for (int64_t i = r0; i < r1; ++i) {
      ForEachF32Block(0, p.n, [&](int64_t j0, int64_t len) {
        const int64_t e0 = i * p.n + j0;
        float* a = acc + e0;
        if (aux != nullptr) ToF32(aux + e0, xb, len);
        if (erf_gelu_grad) {
          if (pre_out) std::copy(a, a + len, pb);
          internal::GeluErfGradF32(len, a, xb, a);
        } else if (erf_gelu) {
          if (add_bias) {
            const float* bv = bias_f.data() + j0;
            for (int64_t j = 0; j < len; ++j) pb[j] = a[j] + bv[j];
          } else {
            std::copy(a, a + len, pb);
          }
          internal::GeluErfF32(len, pb, a);
        } else {
          const float* bv = bias != nullptr ? bias_f.data() + j0 : kZeros;
          EpilogueRun(p.epilogue, p.tanh_form, len, a, bv, aux != nullptr ? xb : kZeros, pb);
        }
        if (!y_is_acc) FromF32(a, y + e0, len);
        if (pre_out) FromF32(pb, out1 + e0, len);
      });
    }
  });
}

template <typename T>
Status FusedMatMulTyped(const FusedMatMulParams& p, const T* a, const T* b, const T* bias,
                        const T* aux, T* y, T* out1) {
  using A = Compute<T>;
  GemmParams g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.trans_b = p.trans_b;
  g.beta = 0.0f;
  // The accumulator: y itself when T is the compute type, else a float buffer.
  std::vector<A> acc_store;
  A* acc = nullptr;
  if constexpr (std::is_same_v<T, A>) {
    g.dtype = p.dtype;
    acc = y;
    A8_RETURN_IF_ERROR(Gemm(g, a, b, nullptr, acc));
  } else {
    acc_store.resize(static_cast<size_t>(p.m * p.n));
    acc = acc_store.data();
    // The fast path reads the f16/bf16 operands as they are and writes the f32 accumulator.
    bool fast = false;
    if (internal::FastGemmEnabled() && p.m > 0 && p.n > 0 && p.k > 0) {
      internal::FastGemmArgs f;
      f.ab_type = p.dtype;
      f.c_type = DType::kF32;
      f.trans_b = p.trans_b;
      f.m = p.m;
      f.n = p.n;
      f.k = p.k;
      A8_ASSIGN_OR_RETURN(fast, internal::FastGemm(f, a, b, acc));
    }
    if (!fast) {
      g.dtype = DType::kF32;
      const std::vector<float> af = ToFloat(a, p.m * p.k), bf = ToFloat(b, p.k * p.n);
      A8_RETURN_IF_ERROR(Gemm(g, af.data(), bf.data(), nullptr, acc));
    }
  }
  const bool pre_out = out1 != nullptr && !p.bgrad;
  bool epilogue_done = false;
  if constexpr (kIsHalfElem<T> || std::is_same_v<T, float>) {
    if (CurrentKernelMode() == KernelMode::kFast) {
      EpilogueBlocks(p, pre_out, acc, bias, aux, y, out1);
      epilogue_done = true;
    }
  }
  if (!epilogue_done) {
    ParallelFor(p.m, p.n * 4, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
          const int64_t e = i * p.n + j;
          const A bv = bias != nullptr ? Load(bias[j]) : A(0);
          const A xv = aux != nullptr ? Load(aux[e]) : A(0);
          A pre;
          const A v = ApplyEpilogue<A>(p.epilogue, p.tanh_form, acc[e], bv, xv, &pre);
          if (pre_out) out1[e] = Store<T>(pre);
          acc[e] = v;
          y[e] = Store<T>(v);
        }
      }
    });
  }
  if (out1 != nullptr && p.bgrad) {
    // Each column summed by one thread, rows in order: the sum does not depend on the thread
    // count. A block of columns is summed a row at a time, so the loop reads the rows'
    // contiguous pieces (vectorised across columns) instead of walking each column down with the
    // row's stride; each column's additions keep their order, so the bits are the same.
    constexpr int64_t kColumns = 256;
    ParallelFor(p.n, p.m, [&](int64_t c0, int64_t c1) {
      for (int64_t jb = c0; jb < c1; jb += kColumns) {
        const int64_t w = std::min(kColumns, c1 - jb);
        A s[kColumns];
        std::fill_n(s, w, A(0));
        for (int64_t i = 0; i < p.m; ++i) {
          const A* row = acc + i * p.n + jb;
          for (int64_t j = 0; j < w; ++j) s[j] += row[j];
        }
        for (int64_t j = 0; j < w; ++j) out1[jb + j] = Store<T>(s[j]);
      }
    });
  }
  return Status::Ok();
}

}  // namespace

Status FusedMatMul(const FusedMatMulParams& p, const void* a, const void* b, const void* bias,
                   const void* aux, void* y, void* out1) {
  if (p.m < 0 || p.n < 0 || p.k < 0 || p.epilogue < kEpilogueBias || p.epilogue > kEpilogueDGelu) {
    return InvalidInput("a8.FusedMatMul: bad params (m {}, n {}, k {}, epilogue {})", p.m, p.n, p.k,
                        p.epilogue);
  }
  if (EpilogueHasBias(p.epilogue) != (bias != nullptr) ||
      EpilogueIsBackward(p.epilogue) != (aux != nullptr)) {
    return InvalidInput("a8.FusedMatMul: epilogue {} got the wrong bias/aux operands", p.epilogue);
  }
  return Dispatch<TypeSet::kFloat>(p.dtype, "a8.FusedMatMul", [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    return FusedMatMulTyped<T>(p, static_cast<const T*>(a), static_cast<const T*>(b),
                               static_cast<const T*>(bias), static_cast<const T*>(aux),
                               static_cast<T*>(y), static_cast<T*>(out1));
  });
}

Status FusedElementwise(const FusedProgram& program, DType in_dtype, const void* const* inputs,
                        const int64_t* in_counts, DType out_dtype, int64_t count, void* y) {
  const int n_in = program.num_inputs;
  for (int j = 0; j < n_in; ++j) {
    if (in_counts[j] != 1 && in_counts[j] != count) {
      return InvalidInput("a8.FusedElementwise: input {} has {} elements, expected 1 or {}", j,
                          in_counts[j], count);
    }
  }
  const bool wide = in_dtype == DType::kF64 || out_dtype == DType::kF64;
  return Dispatch<TypeSet::kFloat>(in_dtype, "a8.FusedElementwise", [&](auto in_tag) -> Status {
    using T = A8_TAG_TYPE(in_tag);
    return Dispatch<TypeSet::kFloat>(out_dtype, "a8.FusedElementwise", [&](auto out_tag) -> Status {
      using U = A8_TAG_TYPE(out_tag);
      constexpr bool kBlocks = !std::is_same_v<T, double> && !std::is_same_v<U, double>;
      if constexpr (kBlocks) {
        if (CurrentKernelMode() == KernelMode::kFast) {
          ParallelFor(count, 4 + 8 * program.num_instrs, [&](int64_t b, int64_t e) {
            FusedBlocks<T, U>(program, inputs, in_counts, b, e, y);
          });
          return Status::Ok();
        }
      }
      auto run = [&](auto compute_tag) {
        using A = A8_TAG_TYPE(compute_tag);
        const int64_t cost = 4 + 8 * program.num_instrs;
        ParallelFor(count, cost, [&](int64_t b, int64_t e) {
          A vals[kFusedMaxInputs];
          for (int64_t i = b; i < e; ++i) {
            for (int j = 0; j < n_in; ++j) {
              const T* x = static_cast<const T*>(inputs[j]);
              vals[j] = static_cast<A>(Load(x[in_counts[j] == 1 ? 0 : i]));
            }
            static_cast<U*>(y)[i] = Store<U>(static_cast<Compute<U>>(EvalFused<A>(program, vals)));
          }
        });
      };
      if (wide) {
        run(TypeTag<double>{});
      } else {
        run(TypeTag<float>{});
      }
      return Status::Ok();
    });
  });
}

}  // namespace a8::cpu

// Elementwise device kernels: unary math, broadcasting binary and N-ary ops (Max/Min/Sum/Mean,
// Where), Clip, Cast, Dropout, the activation gradients and a8.FusedElementwise.
//
// The semantics are the CPU reference's (kernels/cpu/elementwise.h, grad_math.h,
// fused.h): f16/bf16 math in float rounded once on store, f64 in double, integers in their own
// type with wrapping arithmetic, division and modulo by zero giving 0, Max/Min propagating NaN,
// ONNX Cast as onnxruntime does it on x86. Two deliberate differences, both within a few ulp: Erf
// and Gelu use the library erff/erfcf where the CPU has branch-free polynomial versions for f32,
// f16 and bf16 (the double paths are the same functions).
//
// Broadcasting: the host coalesces the dims (kernels/cpu/broadcast.h's plan) and passes the
// output dims with each operand's element strides (0 where broadcast) in a NaryShape; one thread
// per output element turns its index into operand offsets.
#pragma once

#include <cstdint>

#include "kernels/common/binary_math.h"
#include "kernels/common/fused_elementwise.h"
#include "kernels/common/unary_math.h"
#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

constexpr int kElemMaxRank = 8;
constexpr int kMaxNaryOperands = 8;

// Coalesced output dims and, per operand, the element stride of each dim (0 where broadcast).
struct NaryShape {
  int rank = 0;  // >= 1
  int num_operands = 0;
  int64_t dims[kElemMaxRank] = {};
  int64_t strides[kMaxNaryOperands][kElemMaxRank] = {};
};

// The unary ops: kernels/common/unary_math.h (A8_UNARY_OPS), shared with the CPU.
using DevUnaryOp = ::a8::UnaryKind;

// y[i] = op(x[i]). IsNaN/IsInf write bool, Not reads and writes bool; Abs, Neg, Relu and Sign
// also take integers.
struct UnaryParams {
  DevUnaryOp op = DevUnaryOp::kAbs;
  DType dtype = DType::kF32;
  int64_t n = 0;
  const void* x = nullptr;
  void* y = nullptr;
  UnaryAttrs attrs;  // the op's attributes, as the CPU functors take them
};
DevStatus Unary(DevCtx& ctx, const UnaryParams& p);

using DevBinaryOp = ::a8::BinaryKind;  // kernels/common/binary_math.h

// y = a op b broadcast by `shape` (2 operands); y of `n` elements, dtype a_dtype (bool for
// comparisons and logic). b_dtype differs from a_dtype only for Pow (math in double, stored like
// a Cast).
struct BinaryParams {
  DevBinaryOp op = DevBinaryOp::kAdd;
  DType a_dtype = DType::kF32;
  DType b_dtype = DType::kF32;
  NaryShape shape;
  int64_t n = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
};
DevStatus Binary(DevCtx& ctx, const BinaryParams& p);

// y = in[0] op in[1] op ... (left to right, rounded to `dtype` after every op as the CPU's
// pairwise fold does), then divided by `mean_count` when mean_count > 0. op: Add, Max or Min.
struct FoldParams {
  DevBinaryOp op = DevBinaryOp::kAdd;
  DType dtype = DType::kF32;
  NaryShape shape;  // shape.num_operands inputs
  int64_t n = 0;
  const void* in[kMaxNaryOperands] = {};
  void* y = nullptr;
  double mean_count = 0;
};
DevStatus Fold(DevCtx& ctx, const FoldParams& p);

// out = cond ? x : y, the three broadcast by `shape`.
struct WhereParams {
  DType dtype = DType::kF32;
  NaryShape shape;
  int64_t n = 0;
  const bool* cond = nullptr;
  const void* x = nullptr;
  const void* y = nullptr;
  void* out = nullptr;
};
DevStatus Where(DevCtx& ctx, const WhereParams& p);

// y = min(max(x, lo), hi): lo/hi are one element of `dtype` in device memory (read by the
// kernel), or absent; an absent one may come from the f32 attribute value instead.
struct ClipParams {
  DType dtype = DType::kF32;
  int64_t n = 0;
  const void* x = nullptr;
  void* y = nullptr;
  const void* lo = nullptr;
  const void* hi = nullptr;
  bool has_lo_value = false, has_hi_value = false;
  float lo_value = 0.0f, hi_value = 0.0f;
};
DevStatus Clip(DevCtx& ctx, const ClipParams& p);

// ONNX Cast between any two dtypes (kernels/cpu/elementwise.h Cast).
struct CastParams {
  DType from = DType::kF32;
  DType to = DType::kF32;
  int64_t n = 0;
  const void* x = nullptr;
  void* y = nullptr;
};
DevStatus Cast(DevCtx& ctx, const CastParams& p);

// ONNX Dropout forward, the CPU's mask bit for bit: the Philox key is the seed (the `seed`
// attribute, else ctx.step->seed) mixed with `node_hash` by SplitMix64's finalizer, the counter
// (element index, ctx.step->step). ratio (one element of ratio_dtype) and training (one bool)
// are read by the kernel; null ratio is 0.5, null training is false; an evaluation step passes
// through. A ratio outside [0, 1) that the host could not check gives NaN outputs.
struct DropoutParams {
  DType dtype = DType::kF32;
  int64_t n = 0;
  const void* x = nullptr;
  void* y = nullptr;
  bool* mask = nullptr;  // may be null
  const void* ratio = nullptr;
  DType ratio_dtype = DType::kF32;
  const bool* training = nullptr;
  bool fixed_seed = false;
  uint64_t seed = 0;       // when fixed_seed
  uint64_t node_hash = 0;  // FNV-1a of the node name
};
DevStatus Dropout(DevCtx& ctx, const DropoutParams& p);

// dx = mask ? dy * scale : 0, scale = training ? 1 / (1 - ratio) : 1 computed in float; null
// ratio is 0.5, null training is true.
struct DropoutGradParams {
  DType dtype = DType::kF32;
  int64_t n = 0;
  const void* dy = nullptr;
  const bool* mask = nullptr;
  void* dx = nullptr;
  const void* ratio = nullptr;
  DType ratio_dtype = DType::kF32;
  const bool* training = nullptr;
};
DevStatus DropoutGrad(DevCtx& ctx, const DropoutGradParams& p);

// The a8.*Grad activation gradients: kernels/common/unary_math.h (A8_ACT_GRAD_OPS), shared with
// the CPU.
using DevActGradOp = ::a8::ActGradKind;
struct ActGradParams {
  DevActGradOp op = DevActGradOp::kRelu;
  DType dtype = DType::kF32;
  int64_t n = 0;
  const void* dy = nullptr;
  const void* z = nullptr;  // the saved forward output or input
  void* dx = nullptr;
  UnaryAttrs attrs;  // the forward op's attributes
};
DevStatus ActivationGrad(DevCtx& ctx, const ActGradParams& p);

// y[i] = EvalFused(program, {x_j[scalar[j] ? 0 : i]}) (kernels/common/fused_elementwise.h), math
// in double when either dtype is f64, else float; one rounding.
struct FusedElementwiseParams {
  FusedProgram program;
  DType in_dtype = DType::kF32;
  DType out_dtype = DType::kF32;
  int64_t n = 0;
  const void* in[kFusedMaxInputs] = {};
  bool scalar[kFusedMaxInputs] = {};
  void* y = nullptr;
};
DevStatus FusedElementwise(DevCtx& ctx, const FusedElementwiseParams& p);

}  // namespace a8::A8_DEV_NS

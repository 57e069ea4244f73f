// Elementwise kernels: unary math, broadcasting binary ops, Where, Clip, Cast and Dropout.
//
// Float math is done in float for f16/bf16/f32 (double for f64) and rounded once on output, so
// +, -, *, /, sqrt on f16/bf16 are correctly rounded (float has more than 2p+2 bits). Integer
// arithmetic wraps; integer division and modulo by zero give 0 (ONNX leaves them undefined).
// Max/Min propagate NaN. Comparisons produce bool. Gelu is evaluated as 0.5 x erfc(-x / sqrt 2)
// and the tanh form as x / (1 + exp(-2u)), the same functions as 0.5 x (1 + erf | tanh) without
// their cancellation for negative x (a backend using the textbook form differs in the last bits).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/common/binary_math.h"
#include "kernels/common/unary_math.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

// The unary ops and their attributes: one list and one body per op in
// kernels/common/unary_math.h (UnaryKind, the NameF functors), shared with the CUDA kernels.
using UnaryOp = ::a8::UnaryKind;
using UnaryAttrs = ::a8::UnaryAttrs;

// y[i] = op(x[i]) for n elements. IsNaN/IsInf write bool, Not reads and writes bool; Abs, Neg,
// Relu and Sign also take integers; the rest take float types (A8_UNARY_OPS' Types column).
Status Unary(UnaryOp op, DType dtype, int64_t n, const void* x, void* y,
             const UnaryAttrs& attrs = {});

using BinaryOp = ::a8::BinaryKind;  // kernels/common/binary_math.h

// Whether `op` writes bool (comparisons, logic) rather than the input dtype.
bool BinaryOutputIsBool(BinaryOp op);

// y = a op b with numpy broadcasting; y has BroadcastDims({a_dims, b_dims}) and dtype a_dtype
// (bool for comparisons and logic). Both dtypes must match except for Pow, whose exponent may
// have any numeric dtype (then the math is done in double and stored like a Cast).
Status Binary(BinaryOp op, DType a_dtype, const Dims& a_dims, const void* a, DType b_dtype,
              const Dims& b_dims, const void* b, void* y);

// out = cond ? x : y with broadcasting of all three; x, y and out share `dtype`.
Status Where(const Dims& cond_dims, const bool* cond, DType dtype, const Dims& x_dims,
             const void* x, const Dims& y_dims, const void* y, void* out);

// y = min(max(x, lo), hi); lo / hi point to one element of `dtype`, or are null (no bound).
Status Clip(DType dtype, int64_t n, const void* x, const void* lo, const void* hi, void* y);

// ONNX Cast between any two dtypes, as onnxruntime does it on x86: float -> integer truncates
// toward zero through int32 (int64 for i64) and wraps to narrower types, with NaN and
// out-of-range values giving the minimum of the int32/int64 (so 0 after wrapping to i8/u8);
// anything -> bool is x != 0 (NaN -> true). Float -> f16/bf16 rounds to nearest even once,
// also from f64 and from integers (rounding to odd on the way through float).
Status Cast(DType from, DType to, int64_t n, const void* x, void* y);

// ONNX Dropout forward. When `training` and ratio > 0: mask[i] = DropoutKeep(seed, offset, i,
// ratio) (kernels/common/philox.h) and y = x * mask / (1 - ratio), the scale applied in float.
// Otherwise y = x and the mask is all true. `mask` may be null.
Status Dropout(DType dtype, int64_t n, const void* x, float ratio, bool training, uint64_t seed,
               uint64_t offset, void* y, bool* mask);

namespace internal {

// y[i] = exp(x[i]) for float x[i] <= 0 (Softmax's shifted scores): a branch-free polynomial,
// a few ulp; +0 below -87 (exp there is below 1.7e-38, near the end of the normal range), NaN
// stays NaN. x == y is allowed. Vectorised for AVX-512, AVX2+FMA and baseline x86-64 (which
// may differ in the last bit).
void ExpNonPositiveF32(int64_t n, const float* x, float* y);

}  // namespace internal

}  // namespace a8::cpu

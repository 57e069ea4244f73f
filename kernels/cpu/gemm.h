// Matrix products: ONNX Gemm and MatMul.
//
// Float types go through OpenBLAS: f32 and f16/bf16 through sgemm (f16/bf16 inputs are
// converted exactly to float, the products accumulate in float and the output is rounded once,
// as tensor cores do), f64 through dgemm; untransposed float products on CPUs with AVX-512 or
// AVX2 + FMA through our own register-tile kernels instead (blas.h: GemmF32Tiles), also float
// accumulate, with the same bits on either.
// MatMul also takes i32/i64 (wrapping integer sums).
//
// That is the reference (kernel_mode.h). In the fast mode, f32/f16/bf16 products run through
// oneDNN instead where it has a fast kernel on this CPU (onednn_gemm.h: AMX for bf16): operands
// read in their own dtype, f32 accumulation, one rounding of the output.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

struct GemmParams {
  DType dtype = DType::kF32;
  int64_t m = 0, n = 0, k = 0;  // Y is [m, n]; op(A) is [m, k], op(B) is [k, n]
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 1.0f;
  Dims c_dims;  // C's dims, unidirectionally broadcast to [m, n]; unused when C is null
};

// Y = alpha * op(A) op(B) + beta * C; `c` may be null. A, B, C and Y all have p.dtype (float
// types only); alpha and beta are applied in the compute type.
Status Gemm(const GemmParams& p, const void* a, const void* b, const void* c, void* y);

// Output dims of numpy matmul (1-D operands promoted and their dim dropped, batch dims
// broadcast), or InvalidInput.
StatusOr<Dims> MatMulOutputDims(const Dims& a_dims, const Dims& b_dims);

// Y = A @ B with numpy semantics.
Status MatMul(DType dtype, const Dims& a_dims, const void* a, const Dims& b_dims, const void* b,
              void* y);

}  // namespace a8::cpu

// Device kernels of the GEMM / convolution family (a8::cuda and a8::emu, see device.h), used by
// the host setup code (runtime/device/ops_gemm_conv.cc) and by both BLAS engines (blas.h):
// integer products as plain kernels, the broadcast fills that let a GEMM or a convolution add C
// or a bias with its own single rounding (beta = 1), and the engines' shared fallbacks: a GEMM
// through a float (double) accumulator plus an epilogue kernel, and convolution as im2col /
// col2im + GEMM (gemm_conv_impl.h, gemm_conv_im2col_impl.h).
#pragma once

#include <cstdint>

#include "kernels/device/blas.h"
#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

// Numpy MatMul of i32/i64 (wrapping sums): y[b, i, j] = sum_l a[b, i, l] b[b, l, j], where the
// output batch index (dims batch.dims, rank <= kMaxBatchRank) reads A and B at the batch offsets
// given by a_batch_strides / b_batch_strides (elements, 0 where broadcast).
inline constexpr int kMaxBatchRank = 6;
struct IntMatMulParams {
  DType dtype = DType::kI64;
  int batch_rank = 0;
  int64_t batch_dims[kMaxBatchRank] = {};
  int64_t a_batch_strides[kMaxBatchRank] = {};
  int64_t b_batch_strides[kMaxBatchRank] = {};
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
};
DevStatus IntMatMul(DevCtx& ctx, const IntMatMulParams& p);

// Integer ONNX Gemm, as the CPU computes it: y = (op(A) op(B)) * alpha (when alpha != 1), then
// + C * beta (when C is present and beta != 0; the product by beta only when beta != 1), all in
// the integer type, wrapping; alpha and beta are converted like a Cast from f32 (truncation).
// C [c_rows, c_cols] broadcasts to [m, n] (each 1 or the full size).
struct IntGemmParams {
  DType dtype = DType::kI64;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 1.0f;
  int64_t c_rows = 1, c_cols = 1;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* y = nullptr;
};
DevStatus IntGemm(DevCtx& ctx, const IntGemmParams& p);

// y[i, j] (rows n elements apart) = c[i or 0, j or 0] of c [c_rows, c_cols], all of `dtype`:
// Gemm's C broadcast into Y, which the GEMM then reads as its C with beta.
DevStatus BroadcastMatrix(DevCtx& ctx, DType dtype, int64_t m, int64_t n, const void* c,
                          int64_t c_rows, int64_t c_cols, void* y);

// y[b, ch, s] = bias[ch] for y [batch, channels, spatial]: a convolution's bias, added by the
// convolution itself (beta = 1) with one rounding of the sum.
DevStatus FillChannelBias(DevCtx& ctx, DType dtype, int64_t batch, int64_t channels,
                          int64_t spatial, const void* bias, void* y);

// The engines' shared fallbacks (gemm_conv_impl.h, gemm_conv_im2col_impl.h). GemmViaAcc: any
// GemmDesc through `engine` GEMMs without epilogue into a compute-type accumulator, then one
// epilogue kernel (and the bias-gradient column sums). ConvByGemm: any ConvDesc through
// im2col / col2im kernels and `engine` GEMMs.
DevStatus GemmViaAcc(DevCtx& ctx, BlasEngine& engine, const GemmDesc& d);
DevStatus ConvByGemm(DevCtx& ctx, BlasEngine& engine, const ConvDesc& d);

// Checks a GemmDesc (sizes, leading dims, types, epilogue operands): empty when valid.
DevStatus CheckGemmDesc(const GemmDesc& d);

}  // namespace a8::A8_DEV_NS

// GEMM and convolution engines of the device backends (device.h): cuBLASLt and cuDNN on the GPU
// (kernels/cuda/blas_gemm.cc, blas_conv.cc), a host implementation of the same descriptor
// semantics in the emulation (kernels/emu/blas.cc), so CI checks that the host setup code
// (runtime/device/ops_gemm_conv.cc) maps ONNX attributes to descriptors correctly.
//
// Both engines run what the library cannot through the shared device code of
// kernels/device/gemm_conv.h: a GEMM into a float (double) accumulator plus an epilogue kernel,
// and convolution as im2col / col2im + GEMM. The emulation always takes those paths, so they
// are what CI covers; only the cuBLASLt/cuDNN calls themselves need a GPU to be tested.
//
// Graph capture: engine calls allocate nothing and never synchronize while ctx.capturing;
// workspaces and staging buffers grow only during an eager run (the first run of every step
// is eager) and a grown buffer's predecessor stays allocated until the engine is destroyed,
// because an already captured graph may still read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/common/fused_elementwise.h"
#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

// What is applied to acc = alpha op(A) op(B) + beta C, in the compute type, before D is
// rounded to its type (the epilogues of a8.FusedMatMul, compiler/ir/op_table_fused.cc):
//   kBias: acc + bias[j]; kRelu / kGelu: act(acc); kBiasRelu / kBiasGelu: act(acc + bias[j]);
//   kDRelu: aux > 0 ? acc : 0 (aux = the forward Relu's output); kDGelu: acc gelu'(aux)
//   (aux = the forward Gelu's input).
enum class GemmEpilogue : int32_t {
  kNone,
  kBias,
  kRelu,
  kGelu,
  kBiasRelu,
  kBiasGelu,
  kDRelu,
  kDGelu,
};

// Each engine epilogue with the fused-elementwise epilogue (kernels/common/fused_elementwise.h)
// that computes it; kNone has none.
struct GemmEpilogueRow {
  GemmEpilogue gemm;
  int32_t fused;
};
inline constexpr GemmEpilogueRow kGemmEpilogues[] = {
    {GemmEpilogue::kBias, kEpilogueBias},         {GemmEpilogue::kRelu, kEpilogueRelu},
    {GemmEpilogue::kGelu, kEpilogueGelu},         {GemmEpilogue::kBiasRelu, kEpilogueBiasRelu},
    {GemmEpilogue::kBiasGelu, kEpilogueBiasGelu}, {GemmEpilogue::kDRelu, kEpilogueDRelu},
    {GemmEpilogue::kDGelu, kEpilogueDGelu},
};

// The fused epilogue of `e`; -1 for kNone.
inline int32_t FusedEpilogueOf(GemmEpilogue e) {
  for (const GemmEpilogueRow& row : kGemmEpilogues) {
    if (row.gemm == e) return row.fused;
  }
  return -1;
}

// The engine epilogue of fused epilogue `e` (a8.FusedMatMul's attribute); kBias for any other.
inline GemmEpilogue GemmEpilogueOf(int32_t e) {
  for (const GemmEpilogueRow& row : kGemmEpilogues) {
    if (row.fused == e) return row.gemm;
  }
  return GemmEpilogue::kBias;
}

// One strided-batched, row-major GEMM: for every b in [0, batch),
//   D_b = epilogue(alpha op(A_b) op(B_b) + beta C_b),  C_b = D_b (in place; read only if beta != 0)
// with A_b = a + b * stride_a: op(A) is [m, k] (A is [m, k], or [k, m] when trans_a), rows lda
// elements apart; op(B) is [k, n] (B is [k, n], or [n, k] when trans_b), ldb; D is [m, n], ldc.
// A stride of 0 broadcasts that operand over the batch.
//
// Types: a_type == b_type; c_type is a_type, or f32 when a_type is f16/bf16/f32 (accumulator
// output). The compute type is f32 (TF32 tensor cores allowed when DevCtx::tf32 and a_type is
// f32) except f64 for f64; alpha and beta are converted to it. bias, aux and the optional outputs
// have c_type.
struct GemmDesc {
  DType a_type = DType::kF32;
  DType b_type = DType::kF32;
  DType c_type = DType::kF32;
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  double alpha = 1.0;
  double beta = 0.0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  bool gelu_tanh = false;      // Gelu approximate="tanh"
  const void* bias = nullptr;  // [n], shared by every batch (the bias epilogues)
  const void* aux = nullptr;   // [m, n], rows ldaux apart (kDRelu, kDGelu), batch == 1
  int64_t ldaux = 0;
  void* pre = nullptr;        // optional, activation epilogues: acc (+ bias) [m, n] like D
  void* bias_grad = nullptr;  // optional, kDRelu/kDGelu: [n] = column sums of the unrounded D
};

enum class ConvKind : int32_t {
  kForward,         // y = conv(x, w) (+ bias[out channel])
  kBackwardData,    // x = conv^T(y, w) (+ bias[in channel]): ConvTranspose, the data gradient
  kBackwardFilter,  // w = the filter gradient from x and dY (in y)
};

// An N-D convolution (1 to 3 spatial dims), NCHW-like layouts, groups, strides, dilations and
// begin pads. In the convolution's own terms whatever the kind:
//   x [batch, in_channels, in_spatial...], w [out_channels, in_channels / group, kernel...],
//   y [batch, out_channels, out_spatial...],
//   y position o reads x position o * stride - pad + t * dilation for tap t.
// End pads are implied by out_spatial (the caller resolved them). Per kind, the pointers read
// and written: kForward reads x, w, bias (optional, [out_channels]) and writes y; kBackwardData
// reads y, w, bias (optional, [in_channels]) and writes x; kBackwardFilter reads x, y and
// writes w. All have `dtype`; f16/bf16 accumulate in float and round once, f64 in double.
struct ConvDesc {
  ConvKind kind = ConvKind::kForward;
  DType dtype = DType::kF32;
  int rank = 2;
  int64_t batch = 1, in_channels = 1, out_channels = 1, group = 1;
  int64_t in_spatial[3] = {1, 1, 1};
  int64_t out_spatial[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t strides[3] = {1, 1, 1};
  int64_t dilations[3] = {1, 1, 1};
  int64_t pads[3] = {0, 0, 0};
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
  const void* bias = nullptr;
};

class BlasEngine {
 public:
  virtual ~BlasEngine();
  virtual DevStatus Gemm(DevCtx& ctx, const GemmDesc& d) = 0;
  virtual DevStatus Conv(DevCtx& ctx, const ConvDesc& d) = 0;

  // Staging memory the engine's shared device code keeps between calls, one buffer per slot:
  // at least `bytes`, valid until the next Buffer call for the same slot. Grows only outside
  // graph capture; an outgrown buffer is kept (a captured graph may read it) until destruction.
  enum Slot { kGemmAcc, kConvCols, kConvAcc, kConvGrad, kLibWorkspace, kNumSlots };
  DevStatus Buffer(DevCtx& ctx, Slot slot, size_t bytes, void** out);

 private:
  static constexpr int kMaxRetired = 64;
  void* buffers_[kNumSlots] = {};
  size_t sizes_[kNumSlots] = {};
  void* retired_[kMaxRetired] = {};
  int num_retired_ = 0;
};

// The engine of a backend whose kernels run on `stream`.
DevStatus MakeBlasEngine(void* stream, std::unique_ptr<BlasEngine>* out);

}  // namespace a8::A8_DEV_NS

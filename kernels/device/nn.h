// Device kernels of the normalizations (BatchNormalization, LayerNormalization,
// InstanceNormalization and their a8.*Grad) and of pooling (MaxPool, AveragePool, the global
// pools, a8.MaxPoolGrad, a8.AveragePoolGrad); see kernels/device/device.h for the design.
//
// The normalizations are the CPU backend's too (it runs them on the host); the pools mirror the
// CPU reference (kernels/cpu/pool.cc, grad_conv_pool.cc) operation by operation. Statistics are
// in float for f16/bf16/f32 data (double for f64), summed in a fixed order. Normalizations
// run in two passes: one thread per normalized row / channel / plane computes the statistics
// (into scratch memory, in the compute type), then one thread per element applies them.
// Parameters and statistics may have their own float dtype (f32 scale and running stats beside
// f16 data): loaded exactly, stored like an ONNX Cast. Pool gradients gather, one thread per
// input element, from the output windows that cover it, in the CPU's order (no atomics).
#pragma once

#include <cstdint>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

// ---- normalizations. `dtype` is X's (and Y's, dY's, dX's); params (scale, bias and their
// gradients) have `param_dtype`, statistics (mean, var, running and stashed ones) `stat_dtype`.

// Where a LayerNorm parameter broadcast to the normalized dims reads element j of a row:
// `dense` (the parameter has `inner` elements): j; otherwise the row-major index j over `dims`
// dotted with `strides` (0 on broadcast dims).
struct ParamMap {
  bool dense = true;
  int rank = 0;
  int64_t dims[8] = {};
  int64_t strides[8] = {};
};

struct LayerNormArgs {
  DType dtype = DType::kF32, param_dtype = DType::kF32, stat_dtype = DType::kF32;
  int64_t outer = 1, inner = 1;
  float epsilon = 1e-5f;
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* bias = nullptr;  // may be null
  ParamMap scale_map, bias_map;
  void* y = nullptr;
  void* mean = nullptr;         // may be null
  void* inv_std_dev = nullptr;  // may be null
};
DevStatus LayerNorm(DevCtx& ctx, const LayerNormArgs& a);

struct LayerNormGradArgs {
  DType dtype = DType::kF32, param_dtype = DType::kF32, stat_dtype = DType::kF32;
  int64_t outer = 1, inner = 1;
  float epsilon = 1e-5f;
  const void* dy = nullptr;
  const void* x = nullptr;
  const void* scale = nullptr;        // `inner` elements
  const void* mean = nullptr;         // may be null (recomputed)
  const void* inv_std_dev = nullptr;  // may be null (recomputed)
  void* dx = nullptr;                 // each output may be null
  void* dscale = nullptr;
  void* dbias = nullptr;
};
DevStatus LayerNormGrad(DevCtx& ctx, const LayerNormGradArgs& a);

// X [batch, channels, spatial...].
struct BatchNormArgs {
  DType dtype = DType::kF32, param_dtype = DType::kF32, stat_dtype = DType::kF32;
  int64_t batch = 1, channels = 1, spatial = 1;
  float epsilon = 1e-5f, momentum = 0.9f;
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* bias = nullptr;
  const void* mean = nullptr;  // running statistics in
  const void* var = nullptr;
  void* y = nullptr;
  void* running_mean_out = nullptr;  // training: may be null, may alias `mean`
  void* running_var_out = nullptr;   // training: may be null, may alias `var`
};
// y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c] with the running statistics.
DevStatus BatchNormInference(DevCtx& ctx, const BatchNormArgs& a);
// With the batch statistics; running_out = momentum * running_in + (1 - momentum) * batch stat.
DevStatus BatchNormTraining(DevCtx& ctx, const BatchNormArgs& a);

struct BatchNormGradArgs {
  DType dtype = DType::kF32, param_dtype = DType::kF32, stat_dtype = DType::kF32;
  int64_t batch = 1, channels = 1, spatial = 1;
  float epsilon = 1e-5f;
  const void* dy = nullptr;
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* mean = nullptr;  // both given: inference-mode backward; else batch statistics
  const void* var = nullptr;
  void* dx = nullptr;  // each output may be null
  void* dscale = nullptr;
  void* dbias = nullptr;
  void* dmean = nullptr;  // inference mode only
  void* dvar = nullptr;
};
DevStatus BatchNormGrad(DevCtx& ctx, const BatchNormGradArgs& a);

struct InstanceNormArgs {
  DType dtype = DType::kF32, param_dtype = DType::kF32;
  int64_t batch = 1, channels = 1, spatial = 1;
  float epsilon = 1e-5f;
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  // Backward (InstanceNormGrad) only: dy in; dx, dscale, dbias out (each may be null).
  const void* dy = nullptr;
  void* dx = nullptr;
  void* dscale = nullptr;
  void* dbias = nullptr;
};
DevStatus InstanceNorm(DevCtx& ctx, const InstanceNormArgs& a);
DevStatus InstanceNormGrad(DevCtx& ctx, const InstanceNormArgs& a);

// ---- pooling over 1 to 3 spatial dims, padded to 3 with leading 1s (the host validates the
// geometry with cpu::PoolOutputSpatial): tap t of output o along dim a reads input position
// o * s[a] - pb[a] + t * d[a].
struct PoolArgs {
  DType dtype = DType::kF32;
  int64_t planes = 1;  // batch * channels
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
  int64_t in_size = 1, out_size = 1;
  bool count_include_pad = false;     // AveragePool
  bool column_major_indices = false;  // MaxPool storage_order=1
  const void* x = nullptr;            // forward in; MaxPoolGrad's X
  void* y = nullptr;                  // forward out
  int64_t* indices = nullptr;         // MaxPool, may be null
  const void* dy = nullptr;           // gradients
  void* dx = nullptr;
};
DevStatus MaxPool(DevCtx& ctx, const PoolArgs& a);  // f32/f16/bf16/f64, i8, u8
DevStatus AveragePool(DevCtx& ctx, const PoolArgs& a);
DevStatus MaxPoolGrad(DevCtx& ctx, const PoolArgs& a);
DevStatus AveragePoolGrad(DevCtx& ctx, const PoolArgs& a);
// Y [planes] over `spatial` elements per plane.
DevStatus GlobalAveragePool(DevCtx& ctx, DType dtype, int64_t planes, int64_t spatial,
                            const void* x, void* y);
DevStatus GlobalMaxPool(DevCtx& ctx, DType dtype, int64_t planes, int64_t spatial, const void* x,
                        void* y);

}  // namespace a8::A8_DEV_NS

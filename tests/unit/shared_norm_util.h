// The normalization bodies the CPU and CUDA backends share (kernels/device/nn_norm_impl.h), called
// as the CPU backend calls them: on host memory, through the host ForEach (the CPU thread pool).
// The signatures are those of the former CPU reference kernels, so the float64 reference and
// finite-difference tests read as before.
#pragma once

#include <cstdint>

#include "compiler/ir/dtype_enum.h"
#include "compiler/ir/status.h"

namespace a8::testing::norm {

struct BatchNormParams {
  DType dtype = DType::kF32;                     // X and Y
  DType param_dtype = DType::kF32;               // scale, bias
  DType stat_dtype = DType::kF32;                // mean, var, running statistics
  int64_t batch = 1, channels = 1, spatial = 1;  // X is [batch, channels, spatial...]
  float epsilon = 1e-5f;
  float momentum = 0.9f;
};

struct LayerNormParams {
  DType dtype = DType::kF32;        // X and Y
  DType param_dtype = DType::kF32;  // scale, bias
  DType stat_dtype = DType::kF32;   // Mean, InvStdDev
  int64_t outer = 1, inner = 1;     // rows of `inner` normalized elements
  float epsilon = 1e-5f;
};

Status BatchNormInference(const BatchNormParams& p, const void* x, const void* scale,
                          const void* bias, const void* mean, const void* var, void* y);
// running_*_out may be null or alias running_*_in.
Status BatchNormTraining(const BatchNormParams& p, const void* x, const void* scale,
                         const void* bias, const void* running_mean_in, const void* running_var_in,
                         void* y, void* running_mean_out, void* running_var_out);
// mean and var null: training mode (batch statistics); dmean/dvar only in inference mode.
Status BatchNormGrad(const BatchNormParams& p, const void* dy, const void* x, const void* scale,
                     const void* mean, const void* var, void* dx, void* dscale, void* dbias,
                     void* dmean, void* dvar);
Status LayerNorm(const LayerNormParams& p, const void* x, const void* scale, const void* bias,
                 void* y, void* mean, void* inv_std_dev);
Status LayerNormGrad(const LayerNormParams& p, const void* dy, const void* x, const void* scale,
                     const void* mean, const void* inv_std_dev, void* dx, void* dscale,
                     void* dbias);
Status InstanceNorm(DType dtype, DType param_dtype, int64_t batch, int64_t channels,
                    int64_t spatial, float epsilon, const void* x, const void* scale,
                    const void* bias, void* y);
Status InstanceNormGrad(DType dtype, DType param_dtype, int64_t batch, int64_t channels,
                        int64_t spatial, float epsilon, const void* dy, const void* x,
                        const void* scale, void* dx, void* dscale, void* dbias);

}  // namespace a8::testing::norm

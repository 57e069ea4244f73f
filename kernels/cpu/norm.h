// BatchNormalization (inference, and the training-mode forward with batch statistics and the
// running-statistics update) and LayerNormalization (with Mean and InvStdDev) on the CPU; their
// backward is in grad_nn.h. Hand-tuned fast paths, kept because tools/bench/cpu_ab.py shows them
// winning over the shared body (kernels/device/nn_norm_impl.h) on the cnn and bert training steps,
// and checked against that body to the bit (DeviceNnTest.BatchNorm*, LayerNorm*).
// InstanceNormalization has only the shared body.
//
// Statistics are computed in float for f16/bf16/f32 inputs (double for f64) with two passes
// (mean, then the mean of squared deviations: the population variance, as ONNX defines it),
// and y = (x - mean) * inv_std * scale + bias is computed in that type and rounded once.
// Parameters and statistics may have their own dtype (e.g. f32 scale and running stats beside
// an f16 X), loaded exactly and stored like a Cast.
#pragma once

#include <cstdint>

#include "compiler/ir/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

struct BatchNormParams {
  DType dtype = DType::kF32;                     // X and Y
  DType param_dtype = DType::kF32;               // scale, bias
  DType stat_dtype = DType::kF32;                // mean, var, running and saved statistics
  int64_t batch = 1, channels = 1, spatial = 1;  // X is [batch, channels, spatial...]
  float epsilon = 1e-5f;
  float momentum = 0.9f;
};

// y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c].
Status BatchNormInference(const BatchNormParams& p, const void* x, const void* scale,
                          const void* bias, const void* mean, const void* var, void* y);

// Normalizes with the batch statistics of each channel and updates the running ones:
// running_out = momentum * running_in + (1 - momentum) * batch_stat (the population variance,
// as ONNX defines it). saved_mean / saved_inv_std (may be null) receive the batch mean and
// 1 / sqrt(batch_var + eps), for the backward pass. running_*_out may alias running_*_in.
Status BatchNormTraining(const BatchNormParams& p, const void* x, const void* scale,
                         const void* bias, const void* running_mean_in, const void* running_var_in,
                         void* y, void* running_mean_out, void* running_var_out, void* saved_mean,
                         void* saved_inv_std);

struct LayerNormParams {
  DType dtype = DType::kF32;        // X and Y
  DType param_dtype = DType::kF32;  // scale, bias
  DType stat_dtype = DType::kF32;   // Mean, InvStdDev (ONNX stash_type)
  int64_t outer = 1;                // product of X's dims before `axis`
  int64_t inner = 1;  // product of X's dims from `axis` on: scale and bias have this many
  float epsilon = 1e-5f;
};

// Y, and per outer row Mean and InvStdDev (each may be null); bias may be null.
Status LayerNorm(const LayerNormParams& p, const void* x, const void* scale, const void* bias,
                 void* y, void* mean, void* inv_std_dev);

}  // namespace a8::cpu

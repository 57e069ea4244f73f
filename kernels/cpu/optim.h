// Optimizer kernels: a800c's training step control and parameter updates (domain "a8":
// TrainControl, GlobalNormSq, GradAccumulate, SgdUpdate, AdamUpdate; loss scaling's
// UnscaleCheckFinite and UpdateScale, bodies in scaler.cc). The ONNX ai.onnx.preview.training
// optimizers (Adam, Momentum, Adagrad) have one body, kernels/device/loss_optim_update_impl.h,
// which the CPU backend runs on the host.
//
// - The per-element math is one small A8_HD function per update, in kernels/common/optim_math.h,
//   which the CUDA kernels (kernels/device/loss_optim_update_impl.h) call too.
// - Every update is functional, but a plan may bind an output to the same bytes as the input it
//   replaces (in place). Each element is therefore loaded completely (param, grad, moments) before
//   any output element is stored, and no pointer is `restrict`.
// - The a8 updates read the step's control vector `ctl` (a8.TrainControl's first output, indices
//   CtlIndex): when ctl[kCtlApplied] is 0 (accumulation micro-step, or an overflow) they leave
//   every value byte-identical.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/common/float16.h"
#include "kernels/common/optim_math.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

// ---- step control

// The attribute checks of a8.TrainControl (accumulate >= 1, warm-up and total steps >= 0).
Status CheckTrainControlParams(const TrainControlParams& p);
Status TrainControl(const TrainControlParams& p, const TrainControlInputs& in, float* ctl,
                    int64_t* step_next, float* updates_next);

// ---- gradient reductions

// Sum of the squares of every element of every tensor, accumulated in double in a fixed order
// (fixed chunks summed in index order), so the result does not depend on the thread count. Tensor i
// has dtype dtypes[i] (float types), counts[i] elements at data[i].
Status GlobalNormSq(const std::vector<DType>& dtypes, const std::vector<int64_t>& counts,
                    const std::vector<const void*>& data, float* out);

// acc_next = (step % accumulate == 0 ? 0 : acc) + g: restarts the sum on the first micro-step of
// every accumulation window. acc/acc_next have acc_dtype, g has g_dtype (float types).
Status GradAccumulate(DType acc_dtype, DType g_dtype, int64_t n, int64_t accumulate, int64_t step,
                      const void* acc, const void* g, void* acc_next);

// ---- dynamic loss scaling (PRECISION.md "Loss scaling"; bodies in scaler.cc)

// a8.UnscaleCheckFinite: out[t][i] = float(g[t][i]) * InverseScale(scale) for every tensor t
// (dtypes[t] any float type, counts[t] elements; outputs f32, possibly in place over an f32 g),
// and *found_inf = 1 when any element of any g is Inf or NaN, else 0. With `outs` empty it only
// checks (a8.CheckFinite: the updates that read these gradients unscale them themselves).
Status UnscaleCheckFinite(float scale, const std::vector<DType>& dtypes,
                          const std::vector<int64_t>& counts, const std::vector<const void*>& grads,
                          const std::vector<float*>& outs, float* found_inf);

// The attribute checks of a8.UpdateScale (accumulate and growth_interval >= 1).
Status CheckUpdateScaleParams(const UpdateScaleParams& p);
Status UpdateScale(const UpdateScaleParams& p, float scale, int32_t tracker, float found_inf,
                   int64_t step, float* scale_next, int32_t* tracker_next);

// ---- a8 parameter updates (PyTorch formulas)

// param/buf (param_dtype) and grad (grad_dtype), n elements each; buf/buf_next are null without
// momentum buffer (then momentum must be 0). ctl: f32[kCtlSize] (a8.TrainControl).
Status SgdUpdate(const SgdParams& p, DType param_dtype, DType grad_dtype, int64_t n,
                 const float* ctl, const void* param, const void* grad, const void* buf,
                 void* param_next, void* buf_next);

// What a8.AdamUpdate folds in besides the update (passes/fusion/fuse_optimizer.h): the loss
// scale, whose inverse multiplies each gradient element first exactly as a8.UnscaleCheckFinite
// stores it (UnscaleElement), and the working copy, param_next rounded to f16 or bf16 as a Cast
// would (an f32 parameter only; written on a skipped step too, from the unchanged parameter).
struct AdamExtras {
  const float* scale = nullptr;  // null: the gradient is unscaled already
  DType copy_dtype = DType::kF16;
  void* copy = nullptr;  // null: no working copy
};

// param/m/v (param_dtype), grad (grad_dtype), n elements each.
Status AdamUpdate(const AdamParams& p, DType param_dtype, DType grad_dtype, int64_t n,
                  const float* ctl, const void* param, const void* grad, const void* m,
                  const void* v, void* param_next, void* m_next, void* v_next,
                  const AdamExtras& extras = {});

}  // namespace a8::cpu

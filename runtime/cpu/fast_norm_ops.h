// The fast mode's own kernels for ops whose reference is a shared device body (cpu_backend.h).
//
// BatchNormalization and its training-mode gradient run kernels/cpu/batch_norm_fast.h in the fast
// mode, and LayerNormalization and a8.LayerNormalizationGrad kernels/cpu/layer_norm_fast.h,
// reading f16/bf16 activations directly, where the shared body (kernels/device) would get f32
// copies of them (widened_operands.h). The choice is made once per kernel when the plan is
// prepared, from its operands' dtypes and attributes; anything else (f16/bf16 scale or statistics,
// a broadcast LayerNorm Scale, the inference-mode BatchNorm gradient, other ops) keeps the shared
// body. The reference mode never comes here: it stays bit-identical to cuda-emu.
#pragma once

#include <vector>

#include "compiler/plan/plan.pb.h"
#include "runtime/core/kernel_args.h"

namespace a8 {

using FastKernelFn = Status (*)(const KernelArgs&);

// The fast kernel for `kern` with these bound operands, or null (run the shared body).
FastKernelFn FindFastNormKernel(const plan::Kernel& kern, const std::vector<TensorArg>& in,
                                const std::vector<TensorArg>& out);

}  // namespace a8

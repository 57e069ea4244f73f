// Gradient kernels of the elementwise, gather and slice ops (the internal a8.*Grad ops that
// passes/autodiff/grad_rules_math.cc emits where composing ONNX ops would cost several passes over
// memory).
//
// Activation gradients read the incoming gradient dy and one saved forward tensor of the same dtype
// and element count: the forward OUTPUT y where the derivative is a function of it (Relu, Sigmoid,
// Tanh: the input can then be freed early), else the forward input x. The math is done in float for
// f16/bf16/f32 (double for f64) and rounded once. GatherGrad writes a zero-filled tensor of the
// forward input's shape and accumulates the gradient into the gathered positions (indices may
// repeat) in float (double for f64), one thread per output element, in index order, so results
// do not depend on the thread count. (a8.SliceGrad has one body: movement_setup.h's.)
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/common/unary_math.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

// The activation gradients and their attributes (the forward op's): one list and one body per op
// in kernels/common/unary_math.h (ActGradKind, the NameGradF functors), shared with the CUDA
// kernels.
using ActivationGradOp = ::a8::ActGradKind;
using ActivationGradAttrs = ::a8::UnaryAttrs;

// dx[i] = f(dy[i], z[i]) for n elements of a float dtype; dx may alias dy.
Status ActivationGrad(ActivationGradOp op, DType dtype, int64_t n, const void* dy, const void* z,
                      void* dx, const ActivationGradAttrs& attrs = {});

// The gradient of Gather(data, indices, axis): dx (of `data_dims`) is zero but for dx[o,
// indices[j], i] += dy[o, j, i], with dy of dims data[:axis] + indices + data[axis+1:]. Negative
// indices count from the end; one out of range is InvalidInput.
Status GatherGrad(DType dtype, const Dims& dy_dims, const void* dy, int64_t axis, DType index_dtype,
                  const Dims& index_dims, const void* indices, const Dims& data_dims, void* dx);

}  // namespace a8::cpu

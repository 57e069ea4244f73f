// The CPU reference kernels: the numerical oracle every other backend is checked against.
//
// Design:
// - Plain C++ functions over raw pointers and dims, no IR types: the runtime (and tests) call
//   them with buffers from a plan; the compiler's constant folder may call them too. Params
//   come already resolved (explicit pads, normalized shapes), each kernel validates what it
//   reads and returns a Status: InvalidInput for inconsistent params or out-of-range indices,
//   Unsupported for a dtype it does not take. No kernel aborts, throws or reads out of bounds.
// - Dtypes are the IR's DType (dtype.h). f16/bf16 are 16-bit patterns converted only through
//   kernels/common/float16.h (round to nearest even, the body the CUDA kernels share). Math is
//   done in float for f16/bf16/f32 and rounded once on output; in double for f64. Reductions
//   (sums, means, variances, softmax denominators, GEMM accumulation) accumulate in float for
//   f16/bf16/f32 and in double for f64.
// - GEMM-shaped work goes through OpenBLAS (sgemm/dgemm; f16/bf16 converted exactly to float,
//   as tensor cores compute); Conv/ConvTranspose via im2col/col2im + GEMM.
// - Randomness (Dropout) comes from counter-based Philox4x32-10 (kernels/common/philox.h): the
//   mask is a pure function of (seed, offset, element index), so every backend draws the same.
// - Results never depend on the thread count: ParallelFor (parallel.h) splits independent
//   outputs only; every sum is accumulated by one thread in a fixed order.
//
// Families: elementwise.h (unary, binary, Where, Clip, Cast, Dropout), gemm.h (Gemm, MatMul),
// conv.h, pool.h, softmax.h (the Softmax/LogSoftmax fast path); training: grad_math.h
// (activation gradients, a8.GatherGrad), grad_conv_pool.h (gradients of conv and pooling), optim.h
// (a800c's optimizer updates and step control). The normalizations (BatchNormalization,
// LayerNormalization, InstanceNormalization), the losses (SoftmaxCrossEntropyLoss,
// NegativeLogLikelihoodLoss, the a8 losses) and their gradients, the Softmax and Dropout gradients
// and ONNX's preview Adam/Momentum/Adagrad have one body, shared with the CUDA backend
// (kernels/device: nn_norm_impl.h, loss_optim_impl.h, softmax_impl.h, elementwise_impl.h,
// loss_optim_update_impl.h), which the CPU backend runs on the host (runtime/cpu/cpu_backend.h); so
// do the reductions (reduce_impl.h) and the data movement (movement_impl.h, set up by
// movement_setup.h).
#pragma once

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/grad_conv_pool.h"
#include "kernels/cpu/grad_math.h"
#include "kernels/cpu/optim.h"
#include "kernels/cpu/pool.h"
#include "kernels/cpu/softmax.h"

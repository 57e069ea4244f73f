// Float math of the fast mode shared between CPU kernels (bodies in elementwise.cc).
#pragma once

#include <cstdint>

namespace a8::cpu::internal {

// y[i] = Gelu(x[i]) (the erf form) in float through the Gelu op's fast-mode polynomial
// (relative error about 5e-7, NaN stays NaN); x == y is allowed. For a8.FusedMatMul's GELU
// epilogue, whose shared body calls glibc's erfcf once per element.
void GeluErfF32(int64_t n, const float* x, float* y);

// dx[i] = dy[i] * Gelu'(x[i]) (the erf form) in float, branch-free, with FastGelu's erfc (relative
// error about 5e-7 on Phi and phi each; NaN stays NaN); dx may be dy or x. For a8.GeluGrad and
// FusedMatMul's GELU-gradient epilogue, whose shared body calls erfcf and expf per element.
void GeluErfGradF32(int64_t n, const float* dy, const float* x, float* dx);

// Relu of n f16 values (bf16 where `bf16`) on their bits, no conversion: ReluF's result for every
// input (a negative value or -0 becomes +0, NaN passes as it is); y may be x.
void ReluHalfBits(bool bf16, int64_t n, const uint16_t* x, uint16_t* y);

// dx[i] = y[i] > 0 ? dy[i] : +0 on f16/bf16 bits, no conversion: ReluGradF's result (dy's value
// passes as it is, NaN included); dx may be dy or y.
void ReluGradHalfBits(bool bf16, int64_t n, const uint16_t* dy, const uint16_t* y, uint16_t* dx);

}  // namespace a8::cpu::internal

// Element-type conversion kernels on the GPU: f32 <-> f16 and f32 <-> bf16, with the rounding
// of kernels/common/float16.h (one body for host and device), so the CUDA backend rounds
// bit-for-bit like the CPU reference.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace a8::cuda {

cudaError_t CastF32ToF16(const float* in, uint16_t* out, int64_t n, cudaStream_t stream);
// out = f16(in * scale), one rounding: the pre-division of an f16 all-reduce of f32 values.
cudaError_t CastF32ToF16Scaled(const float* in, uint16_t* out, int64_t n, float scale,
                               cudaStream_t stream);
cudaError_t CastF16ToF32(const uint16_t* in, float* out, int64_t n, cudaStream_t stream);
cudaError_t CastF32ToBF16(const float* in, uint16_t* out, int64_t n, cudaStream_t stream);
cudaError_t CastBF16ToF32(const uint16_t* in, float* out, int64_t n, cudaStream_t stream);

}  // namespace a8::cuda

#include "kernels/common/float16.h"
#include "kernels/cuda/cast_kernels.h"

namespace a8::cuda {
namespace {

constexpr int kThreads = 256;

template <typename In, typename Out, typename F>
__global__ void MapKernel(const In* in, Out* out, int64_t n, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = f(in[i]);
  }
}

template <typename In, typename Out, typename F>
cudaError_t Launch(const In* in, Out* out, int64_t n, cudaStream_t stream, F f) {
  if (n == 0) return cudaSuccess;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65535) blocks = 65535;
  MapKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(in, out, n, f);
  return cudaGetLastError();
}

struct ToHalf {
  __device__ uint16_t operator()(float x) const { return FloatToHalfBits(x); }
};
struct ToHalfScaled {
  float scale;
  // A NaN keeps its sign, as on the host: x86 passes a NaN operand through a multiply, the GPU
  // returns its canonical (positive) NaN.
  __device__ uint16_t operator()(float x) const {
    const float v = x * scale;
    return FloatToHalfBits(v != v ? x : v);
  }
};
struct FromHalf {
  __device__ float operator()(uint16_t x) const { return HalfBitsToFloat(x); }
};
struct ToBF16 {
  __device__ uint16_t operator()(float x) const { return FloatToBFloat16Bits(x); }
};
struct FromBF16 {
  __device__ float operator()(uint16_t x) const { return BFloat16BitsToFloat(x); }
};

}  // namespace

cudaError_t CastF32ToF16(const float* in, uint16_t* out, int64_t n, cudaStream_t s) {
  return Launch(in, out, n, s, ToHalf{});
}
cudaError_t CastF32ToF16Scaled(const float* in, uint16_t* out, int64_t n, float scale,
                               cudaStream_t s) {
  return Launch(in, out, n, s, ToHalfScaled{scale});
}
cudaError_t CastF16ToF32(const uint16_t* in, float* out, int64_t n, cudaStream_t s) {
  return Launch(in, out, n, s, FromHalf{});
}
cudaError_t CastF32ToBF16(const float* in, uint16_t* out, int64_t n, cudaStream_t s) {
  return Launch(in, out, n, s, ToBF16{});
}
cudaError_t CastBF16ToF32(const uint16_t* in, float* out, int64_t n, cudaStream_t s) {
  return Launch(in, out, n, s, FromBF16{});
}

}  // namespace a8::cuda

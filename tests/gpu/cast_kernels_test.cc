// GPU cast kernels against the CPU bodies of kernels/common/float16.h, bit for bit, on random
// floats plus the edge cases. Skips, saying why, where no GPU is present.
#include "kernels/cuda/cast_kernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/common/float16.h"

namespace a8 {
namespace {

class CudaCastTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      GTEST_SKIP() << "no CUDA GPU present ("
                   << (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") << ")";
    }
  }
};

std::vector<float> TestFloats() {
  std::mt19937 rng(42);
  std::vector<float> v;
  for (int i = 0; i < 1 << 20; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    v.push_back(f);
  }
  for (float f : {0.f, -0.f, 65504.f, 65519.f, 65520.f, 6.1035156e-05f, 5.9604645e-08f,
                  2.9802322e-08f, 1e30f, -1e-30f})
    v.push_back(f);
  return v;
}

TEST_F(CudaCastTest, F32ToF16MatchesCpuBitForBit) {
  std::vector<float> in = TestFloats();
  const int64_t n = static_cast<int64_t>(in.size());
  float* d_in = nullptr;
  uint16_t* d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, n * sizeof(uint16_t)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, in.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  for (bool bf16 : {false, true}) {
    ASSERT_EQ(bf16 ? cuda::CastF32ToBF16(d_in, d_out, n, nullptr)
                   : cuda::CastF32ToF16(d_in, d_out, n, nullptr),
              cudaSuccess);
    std::vector<uint16_t> out(n);
    ASSERT_EQ(cudaMemcpy(out.data(), d_out, n * sizeof(uint16_t), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t want = bf16 ? FloatToBFloat16Bits(in[i]) : FloatToHalfBits(in[i]);
      ASSERT_EQ(out[i], want) << "element " << i << " bf16=" << bf16;
    }
  }
  cudaFree(d_in);
  cudaFree(d_out);
}

// The NCCL f16 wire's pre-division: f16(x * scale), one rounding, as the host computes it.
TEST_F(CudaCastTest, ScaledF32ToF16MatchesCpuBitForBit) {
  std::vector<float> in = TestFloats();
  const int64_t n = static_cast<int64_t>(in.size());
  float* d_in = nullptr;
  uint16_t* d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, n * sizeof(uint16_t)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, in.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  for (float scale : {0.5f, 0.25f, 1.0f / 3.0f}) {
    ASSERT_EQ(cuda::CastF32ToF16Scaled(d_in, d_out, n, scale, nullptr), cudaSuccess);
    std::vector<uint16_t> out(n);
    ASSERT_EQ(cudaMemcpy(out.data(), d_out, n * sizeof(uint16_t), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], FloatToHalfBits(in[i] * scale)) << "element " << i << " scale " << scale;
  }
  // 65536 (a scaled gradient beyond f16's range) over 2 ranks is 32768, in range.
  const float big = 65536.0f;
  ASSERT_EQ(cudaMemcpy(d_in, &big, sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cuda::CastF32ToF16Scaled(d_in, d_out, 1, 0.5f, nullptr), cudaSuccess);
  uint16_t h = 0;
  ASSERT_EQ(cudaMemcpy(&h, d_out, sizeof(h), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(HalfBitsToFloat(h), 32768.0f);
  cudaFree(d_in);
  cudaFree(d_out);
}

TEST_F(CudaCastTest, HalfToF32MatchesCpuForEveryValue) {
  std::vector<uint16_t> in(1 << 16);
  for (int i = 0; i < 1 << 16; ++i) in[i] = static_cast<uint16_t>(i);
  uint16_t* d_in = nullptr;
  float* d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, in.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, in.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, in.data(), in.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  for (bool bf16 : {false, true}) {
    ASSERT_EQ(bf16 ? cuda::CastBF16ToF32(d_in, d_out, in.size(), nullptr)
                   : cuda::CastF16ToF32(d_in, d_out, in.size(), nullptr),
              cudaSuccess);
    std::vector<float> out(in.size());
    ASSERT_EQ(cudaMemcpy(out.data(), d_out, in.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < in.size(); ++i) {
      float want = bf16 ? BFloat16BitsToFloat(in[i]) : HalfBitsToFloat(in[i]);
      ASSERT_EQ(std::memcmp(&out[i], &want, 4), 0) << "bits " << i << " bf16=" << bf16;
    }
  }
  cudaFree(d_in);
  cudaFree(d_out);
}

}  // namespace
}  // namespace a8

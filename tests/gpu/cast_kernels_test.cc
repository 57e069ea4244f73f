// GPU cast kernels against the CPU bodies of kernels/common/float16.h, bit for bit, on random
// floats plus the edge cases. Skips, saying why, where no GPU is present.
#include "kernels/cuda/cast_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
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
  void TearDown() override {
    cudaFree(d_in_);
    cudaFree(d_out_);
  }

  // `in` copied to a device buffer (device_in<In>()) and room for as many Out elements
  // (device_out<Out>()).
  template <typename In, typename Out>
  void Upload(const std::vector<In>& in) {
    ASSERT_EQ(cudaMalloc(&d_in_, in.size() * sizeof(In)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out_, in.size() * sizeof(Out)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_in_, in.data(), in.size() * sizeof(In), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  // The first n elements of the output buffer.
  template <typename Out>
  std::vector<Out> Download(size_t n) {
    std::vector<Out> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), d_out_, n * sizeof(Out), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  template <typename T>
  T* device_in() {
    return static_cast<T*>(d_in_);
  }
  template <typename T>
  T* device_out() {
    return static_cast<T*>(d_out_);
  }

 private:
  void* d_in_ = nullptr;
  void* d_out_ = nullptr;
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
  ASSERT_NO_FATAL_FAILURE((Upload<float, uint16_t>(in)));
  float* d_in = device_in<float>();
  uint16_t* d_out = device_out<uint16_t>();
  for (bool bf16 : {false, true}) {
    ASSERT_EQ(bf16 ? cuda::CastF32ToBF16(d_in, d_out, n, nullptr)
                   : cuda::CastF32ToF16(d_in, d_out, n, nullptr),
              cudaSuccess);
    const std::vector<uint16_t> got = Download<uint16_t>(n);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t want = bf16 ? FloatToBFloat16Bits(in[i]) : FloatToHalfBits(in[i]);
      ASSERT_EQ(got[i], want) << "element " << i << " bf16=" << bf16;
    }
  }
}

// Every rounding boundary of binary16: for each finite half h, the float midway to the next
// half (a tie, exact in float), one float step either side of it, and h itself, both signs,
// plus the subnormal floats below half's smallest subnormal. The GPU converts these with its
// conversion instruction (kernels/common/float16.h): the bits must still be the host's.
TEST_F(CudaCastTest, F32ToF16EveryTieAndBoundaryMatchesCpu) {
  std::vector<float> in;
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const float f = HalfBitsToFloat(static_cast<uint16_t>(h));
    const float next = h + 1 < 0x7c00u ? HalfBitsToFloat(static_cast<uint16_t>(h + 1)) : 65536.0f;
    const float mid = f + (next - f) * 0.5f;  // exact: 11 bits plus one
    for (float v : {f, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      in.push_back(v);
      in.push_back(-v);
    }
  }
  for (uint32_t bits = 1; bits < 0x00800000u; bits += 4099) {  // float subnormals
    float f;
    std::memcpy(&f, &bits, 4);
    in.push_back(f);
  }
  const int64_t n = static_cast<int64_t>(in.size());
  ASSERT_NO_FATAL_FAILURE((Upload<float, uint16_t>(in)));
  ASSERT_EQ(cuda::CastF32ToF16(device_in<float>(), device_out<uint16_t>(), n, nullptr),
            cudaSuccess);
  const std::vector<uint16_t> got = Download<uint16_t>(n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], FloatToHalfBits(in[i])) << "element " << i << " value " << in[i];
}

// The NCCL f16 wire's pre-division: f16(x * scale), one rounding, as the host computes it.
TEST_F(CudaCastTest, ScaledF32ToF16MatchesCpuBitForBit) {
  std::vector<float> in = TestFloats();
  const int64_t n = static_cast<int64_t>(in.size());
  ASSERT_NO_FATAL_FAILURE((Upload<float, uint16_t>(in)));
  float* d_in = device_in<float>();
  uint16_t* d_out = device_out<uint16_t>();
  for (float scale : {0.5f, 0.25f, 1.0f / 3.0f}) {
    ASSERT_EQ(cuda::CastF32ToF16Scaled(d_in, d_out, n, scale, nullptr), cudaSuccess);
    const std::vector<uint16_t> got = Download<uint16_t>(n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], FloatToHalfBits(in[i] * scale)) << "element " << i << " scale " << scale;
  }
  // 65536 (a scaled gradient beyond f16's range) over 2 ranks is 32768, in range.
  const float big = 65536.0f;
  ASSERT_EQ(cudaMemcpy(d_in, &big, sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cuda::CastF32ToF16Scaled(d_in, d_out, 1, 0.5f, nullptr), cudaSuccess);
  EXPECT_EQ(HalfBitsToFloat(Download<uint16_t>(1)[0]), 32768.0f);
}

TEST_F(CudaCastTest, HalfToF32MatchesCpuForEveryValue) {
  std::vector<uint16_t> in(1 << 16);
  for (int i = 0; i < 1 << 16; ++i) in[i] = static_cast<uint16_t>(i);
  ASSERT_NO_FATAL_FAILURE((Upload<uint16_t, float>(in)));
  uint16_t* d_in = device_in<uint16_t>();
  float* d_out = device_out<float>();
  for (bool bf16 : {false, true}) {
    ASSERT_EQ(bf16 ? cuda::CastBF16ToF32(d_in, d_out, in.size(), nullptr)
                   : cuda::CastF16ToF32(d_in, d_out, in.size(), nullptr),
              cudaSuccess);
    const std::vector<float> got = Download<float>(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      float want = bf16 ? BFloat16BitsToFloat(in[i]) : HalfBitsToFloat(in[i]);
      ASSERT_EQ(std::memcmp(&got[i], &want, 4), 0) << "bits " << i << " bf16=" << bf16;
    }
  }
}

}  // namespace
}  // namespace a8

// Internals of the CUDA BLAS engine (blas.h): the cuBLASLt GEMM engine (blas_gemm.cc) and its
// cuDNN convolution part (blas_conv.cc). Plain C++ (g++), linked with cuBLASLt, cuDNN, cudart.
#pragma once

#include <cudnn.h>

#include <array>
#include <map>
#include <memory>
#include <string>

#include "kernels/device/blas.h"

namespace a8::A8_DEV_NS {

// 2-D convolutions (1-D ones as 2-D with height 1) in f32/f16/bf16 through cuDNN's legacy API.
// Algorithms from cudnnGet*Algorithm_v7 (heuristics: no allocation, no sync, so a call during
// graph capture is safe), deterministic ones only, cached per descriptor with the tensor,
// filter and convolution descriptors.
class CudnnConv {
 public:
  static DevStatus Create(void* stream, std::unique_ptr<CudnnConv>* out);
  ~CudnnConv();

  // Runs `d` when cuDNN takes it (*done = true); otherwise leaves it to the caller.
  DevStatus Run(DevCtx& ctx, BlasEngine& engine, const ConvDesc& d, bool* done);

 private:
  struct Plan {
    bool usable = false;  // false: cuDNN does not take this descriptor
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    int algo = 0;
    size_t workspace = 0;
  };
  using Key = std::array<int64_t, 24>;

  DevStatus MakePlan(const ConvDesc& d, bool tf32, Plan* plan);

  cudnnHandle_t handle_ = nullptr;
  std::map<Key, Plan> plans_;
};

}  // namespace a8::A8_DEV_NS

// cuBLASLt loaded on first use (kernels/cuda/cublaslt_lazy.cc): the library loads from the toolkit
// and the forwarding functions reach it. Needs no GPU: runs wherever the CUDA parts are built.
#include "kernels/cuda/cublaslt_lazy.h"

#include <cublasLt.h>
#include <gtest/gtest.h>

#include <string>

namespace a8 {
namespace {

TEST(CublasLtLazyTest, LoadsAndForwardsToTheLibrary) {
  EXPECT_EQ(cuda::LoadCublasLt(), "");
  // The library's own words for each status (cuBLASLt 13: "the requested functionality is not
  // supported"), not the stand-in's message, which is the same for every status.
  const std::string not_supported = cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED);
  const std::string invalid = cublasLtGetStatusString(CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(not_supported.find("not supported"), std::string::npos) << not_supported;
  EXPECT_NE(not_supported, invalid);
}

TEST(CublasLtLazyTest, ForwardedCallsCheckTheirArguments) {
  // A descriptor call that needs no device: the library's own answer comes back.
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, 4, 3, 4), CUBLAS_STATUS_SUCCESS);
  EXPECT_NE(layout, nullptr);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);
}

}  // namespace
}  // namespace a8

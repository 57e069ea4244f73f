// cuBLASLt loaded on first use (kernels/cuda/cublaslt_lazy.cc): the library loads from the toolkit
// and the forwarding functions reach it. Needs no GPU: runs wherever the CUDA parts are built.
#include "kernels/cuda/cublaslt_lazy.h"

#include <cublasLt.h>
#include <gtest/gtest.h>

namespace a8 {
namespace {

TEST(CublasLtLazyTest, LoadsAndForwardsToTheLibrary) {
  EXPECT_EQ(cuda::LoadCublasLt(), "");
  // The library's own name for a status; the stand-in's message when it is not loaded.
  EXPECT_STREQ(cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cublasLtGetStatusString(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
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

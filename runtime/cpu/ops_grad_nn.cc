// CPU registry entries of the convolution and pooling gradients (see registry.h): each reads its
// operands and attributes and calls the kernel of kernels/cpu/grad_conv_pool.h. The other NN
// gradients (Softmax, LogSoftmax, Dropout, the losses, the normalizations) run the shared device
// bodies through the host launch.
#include <algorithm>

#include "kernels/cpu/grad_conv_pool.h"
#include "kernels/cpu/kernels.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

// Pool params of the forward whose input is `x_dims`; dY must have the forward's output dims.
StatusOr<cpu::PoolParams> PoolParamsOf(const KernelArgs& a, const cpu::Dims& x_dims) {
  cpu::PoolParams p = PoolParamsFromKernel(a, x_dims, a.in(0).dtype);
  A8_ASSIGN_OR_RETURN(cpu::Dims out, cpu::PoolOutputSpatial(p));
  if (SpatialDims(a.in(0).dims) != out) {
    return InvalidInput("{}: dY has spatial dims of rank {} that are not the pooled output",
                        a.kernel().op(), a.in(0).dims.size());
  }
  return p;
}

Status RunConvGradFilter(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(cpu::ConvParams p, ConvGradFilterParams(a));
  return cpu::ConvGradFilter(p, a.in(0).data, a.in(1).data, a.out(0).data);
}

Status RunMaxPoolGrad(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(CheckRank(a, a.in(1), "x", 3));
  A8_ASSIGN_OR_RETURN(cpu::PoolParams p, PoolParamsOf(a, a.in(1).dims));
  return cpu::MaxPoolGrad(p, a.in(0).data, a.in(1).data, a.out(0).data);
}

Status RunAveragePoolGrad(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(CheckRank(a, a.out(0), "dX", 3));
  A8_ASSIGN_OR_RETURN(cpu::PoolParams p, PoolParamsOf(a, a.out(0).dims));
  return cpu::AveragePoolGrad(p, a.in(0).data, a.out(0).data);
}

}  // namespace

std::vector<CpuKernelEntry> GradNnKernels() {
  return {
      {"a8.ConvGradFilter", kFloatTypes, 0, RunConvGradFilter, "im2col + GEMM"},
      {"a8.MaxPoolGrad", kFloatTypes, 0, RunMaxPoolGrad, ""},
      {"a8.AveragePoolGrad", kFloatTypes, 0, RunAveragePoolGrad, ""},
  };
}

}  // namespace a8

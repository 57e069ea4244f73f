// CPU registry entries of the NN gradient ops (see registry.h): each reads its operands and
// attributes and calls the kernel of kernels/cpu/grad_nn.h. The losses and their gradients run
// the shared device bodies (kernels/device/loss_optim_impl.h) through the host launch.
#include <algorithm>

#include "kernels/cpu/grad_nn.h"
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

KernelFn SoftmaxGradFn(bool log) {
  return [log](const KernelArgs& a) -> Status {
    const TensorArg& y = a.in(1);
    const int64_t rank = static_cast<int64_t>(y.dims.size());
    A8_ASSIGN_OR_RETURN(
        int64_t axis, cpu::NormalizeAxis(a.Int("axis"), std::max<int64_t>(rank, 1), "SoftmaxGrad"));
    return cpu::SoftmaxGrad(y.dtype, y.dims, axis, log, a.in(0).data, y.data, a.out(0).data);
  };
}

Status RunDropoutGrad(const KernelArgs& a) {
  float ratio = 0.5f;
  if (a.has_in(2)) {
    A8_RETURN_IF_ERROR(cpu::Cast(a.in(2).dtype, DType::kF32, 1, a.in(2).data, &ratio));
  }
  const bool training = !a.has_in(3) || *reinterpret_cast<const bool*>(a.in(3).data);
  if (!(ratio >= 0.0f && ratio < 1.0f)) {
    return InvalidInput("{}: ratio {} is not in [0, 1)", a.kernel().op(), ratio);
  }
  // The forward's scale: it computed 1 / (1 - ratio) in float (elementwise.cc Dropout).
  const float scale = training ? 1.0f / (1.0f - ratio) : 1.0f;
  return cpu::DropoutGrad(a.in(0).dtype, a.in(0).count(), a.in(0).data,
                          reinterpret_cast<const bool*>(a.in(1).data), scale, a.out(0).data);
}

}  // namespace

std::vector<CpuKernelEntry> GradNnKernels() {
  return {
      {"a8.ConvGradFilter", kFloatTypes, 0, RunConvGradFilter, "im2col + GEMM"},
      {"a8.MaxPoolGrad", kFloatTypes, 0, RunMaxPoolGrad, ""},
      {"a8.AveragePoolGrad", kFloatTypes, 0, RunAveragePoolGrad, ""},
      {"a8.SoftmaxGrad", kFloatTypes, 0, SoftmaxGradFn(false), ""},
      {"a8.LogSoftmaxGrad", kFloatTypes, 0, SoftmaxGradFn(true), ""},
      {"a8.DropoutGrad", kFloatTypes, 0, RunDropoutGrad, "mask: bool"},
  };
}

}  // namespace a8

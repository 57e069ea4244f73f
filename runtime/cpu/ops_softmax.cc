// CPU registry entries of Softmax/LogSoftmax, the CPU's fast path (kernels/cpu/softmax.h). The
// rest of the reduction family (Reduce*, ArgMax/ArgMin, CumSum, the Softmax gradients) has none:
// the CPU backend runs the device entries (runtime/device/ops_reduce.cc) on the host.
#include "kernels/cpu/softmax.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

KernelFn SoftmaxFn(bool log) {
  return [log](const KernelArgs& a) -> Status {
    const TensorArg& x = a.in(0);
    return cpu::Softmax(x.dtype, x.dims, a.Int("axis"), log, x.data, a.out(0).data);
  };
}

}  // namespace

std::vector<CpuKernelEntry> SoftmaxKernels() {
  return {
      {"Softmax", kFloatTypes, 0, SoftmaxFn(false), ""},
      {"LogSoftmax", kFloatTypes, 0, SoftmaxFn(true), ""},
  };
}

}  // namespace a8

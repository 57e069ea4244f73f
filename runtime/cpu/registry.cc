#include "runtime/cpu/registry.h"

#include "runtime/core/op_registry.h"

namespace a8 {

const std::vector<CpuKernelEntry>& CpuKernelRegistry() {
  static const std::vector<CpuKernelEntry>* entries = SortedRegistry<CpuKernelEntry>(
      {ElementwiseKernels, NnKernels, SoftmaxKernels, GradMathKernels, GradNnKernels,
       OptimizerKernels, DistKernels, FusedKernels});
  return *entries;
}

const CpuKernelEntry* FindCpuKernel(const std::string& op) {
  return FindByOp(CpuKernelRegistry(), op);
}

}  // namespace a8

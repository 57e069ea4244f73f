#include "runtime/cpu/registry.h"

#include "runtime/core/op_registry.h"

namespace a8 {

const std::vector<CpuKernelEntry>& CpuKernelRegistry() {
  static const std::vector<CpuKernelEntry>* entries = [] {
    auto* r = new std::vector<CpuKernelEntry>();
    RegisterElementwiseKernels(r);
    RegisterNnKernels(r);
    RegisterReduceKernels(r);
    RegisterMovementKernels(r);
    RegisterGradMathKernels(r);
    RegisterGradNnKernels(r);
    RegisterOptimizerKernels(r);
    RegisterDistKernels(r);
    RegisterFusedKernels(r);
    SortByOp(r);
    return r;
  }();
  return *entries;
}

const CpuKernelEntry* FindCpuKernel(const std::string& op) {
  return FindByOp(CpuKernelRegistry(), op);
}

}  // namespace a8

#include "runtime/cpu/registry.h"

#include <algorithm>

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
    std::sort(r->begin(), r->end(),
              [](const CpuKernelEntry& a, const CpuKernelEntry& b) { return a.op < b.op; });
    return r;
  }();
  return *entries;
}

const CpuKernelEntry* FindCpuKernel(const std::string& op) {
  const auto& r = CpuKernelRegistry();
  auto it =
      std::lower_bound(r.begin(), r.end(), op,
                       [](const CpuKernelEntry& e, const std::string& o) { return e.op < o; });
  return it != r.end() && it->op == op ? &*it : nullptr;
}

}  // namespace a8

#include "runtime/device/device_registry.h"

#include <algorithm>

#include "runtime/device/ops_gather_nd.h"
#include "runtime/device/ops_scatter.h"

namespace a8::A8_DEV_NS {

Status FromDev(const DevStatus& s) {
  if (s.ok()) return Status::Ok();
  return Internal("device: {}", s.what);
}

const std::vector<DevKernelEntry>& DeviceKernelRegistry() {
  static const std::vector<DevKernelEntry>* entries = [] {
    auto* r = new std::vector<DevKernelEntry>();
    RegisterDeviceElementwiseOps(r);
    RegisterDeviceMovementOps(r);
    RegisterDeviceReduceOps(r);
    RegisterDeviceNnOps(r);
    RegisterDeviceLossOptimOps(r);
    RegisterDeviceGemmConvOps(r);
    RegisterDeviceDistOps(r);
    RegisterDeviceGatherNdOps(r);
    RegisterDeviceScatterOps(r);
    std::sort(r->begin(), r->end(),
              [](const DevKernelEntry& a, const DevKernelEntry& b) { return a.op < b.op; });
    return r;
  }();
  return *entries;
}

const DevKernelEntry* FindDeviceKernel(const std::string& op) {
  const auto& r = DeviceKernelRegistry();
  auto it =
      std::lower_bound(r.begin(), r.end(), op,
                       [](const DevKernelEntry& e, const std::string& o) { return e.op < o; });
  return it != r.end() && it->op == op ? &*it : nullptr;
}

}  // namespace a8::A8_DEV_NS

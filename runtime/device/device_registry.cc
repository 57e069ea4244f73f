#include "runtime/device/device_registry.h"

#include "runtime/core/op_registry.h"

namespace a8::A8_DEV_NS {

Status FromDev(const DevStatus& s) {
  if (s.ok()) return Status::Ok();
  return Internal("device: {}", s.what);
}

StatusOr<std::vector<int64_t>> HostInts(const KernelArgs& a, int i) {
  if (!a.has_in(i) || a.in(i).count() == 0) return std::vector<int64_t>{};
  if (a.in(i).host == nullptr)
    return Unsupported("{}: input {} must be a constant on the CUDA backend", a.kernel().op(), i);
  return a.ConstInts(i);
}

const std::vector<DevKernelEntry>& DeviceKernelRegistry() {
  static const std::vector<DevKernelEntry>* entries = SortedRegistry<DevKernelEntry>(
      {DeviceElementwiseOps, DeviceMovementOps, DeviceReduceOps, DeviceNnOps, DeviceLossOptimOps,
       DeviceGemmConvOps, DeviceDistOps, DeviceGatherNdOps, DeviceScatterOps, DeviceGridSampleOps,
       DeviceLinalgOps, DeviceRoiPoolOps, DeviceRandomOps, DeviceAttentionOps});
  return *entries;
}

const DevKernelEntry* FindDeviceKernel(const std::string& op) {
  return FindByOp(DeviceKernelRegistry(), op);
}

}  // namespace a8::A8_DEV_NS

#include "runtime/device/device_registry.h"

#include "runtime/core/op_registry.h"

namespace a8::A8_DEV_NS {

StatusOr<std::vector<int64_t>> HostInts(const KernelArgs& a, int i) {
  if (!a.has_in(i) || a.in(i).count() == 0) return std::vector<int64_t>{};
  if (a.in(i).host == nullptr)
    return Unsupported("{}: input {} must be a constant on the CUDA backend", a.kernel().op(), i);
  return a.ConstInts(i);
}

const uint8_t* HostBytes(const TensorArg& t) {
  if (t.host != nullptr) return t.host;
  return MemoryIsHost() ? t.data : nullptr;
}

StatusOr<int> AttrChoice(const KernelArgs& a, const char* op, const char* name,
                         std::initializer_list<const char*> values) {
  const std::string value = a.Str(name, *values.begin());
  std::string listed;
  int i = 0;
  for (const char* v : values) {
    if (value == v) return i;
    if (i > 0) listed += i + 1 == static_cast<int>(values.size()) ? " or " : ", ";
    listed += v;
    ++i;
  }
  return InvalidInput("{}: unknown {} '{}' ({})", op, name, value, listed);
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

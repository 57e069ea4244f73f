// Registration of MaxUnpool's and RoiAlign's device entries (ops_roi_pool.cc);
// device_registry.cc calls it.
#pragma once

#include <vector>

#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {

void RegisterDeviceRoiPoolOps(std::vector<DevKernelEntry>* r);

}  // namespace a8::A8_DEV_NS

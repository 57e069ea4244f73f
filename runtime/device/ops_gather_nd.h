// Registration of the GatherND family's device entries (ops_gather_nd.cc); device_registry.cc
// calls it.
#pragma once

#include <vector>

#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {

void RegisterDeviceGatherNdOps(std::vector<DevKernelEntry>* r);

}  // namespace a8::A8_DEV_NS

// Registration of the random ops' device entries (ops_random.cc); device_registry.cc calls it.
#pragma once

#include <vector>

#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {

void RegisterDeviceRandomOps(std::vector<DevKernelEntry>* r);

}  // namespace a8::A8_DEV_NS

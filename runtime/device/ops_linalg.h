// Registration of Det's device entries (ops_linalg.cc); device_registry.cc calls it.
#pragma once

#include <vector>

#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {

void RegisterDeviceLinalgOps(std::vector<DevKernelEntry>* r);

}  // namespace a8::A8_DEV_NS

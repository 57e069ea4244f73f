// Registration of the scatter family's device entries (ops_scatter.cc: ScatterND,
// ScatterElements, TopK); device_registry.cc calls it.
#pragma once

#include <vector>

#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {

void RegisterDeviceScatterOps(std::vector<DevKernelEntry>* r);

}  // namespace a8::A8_DEV_NS

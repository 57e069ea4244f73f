// Registration of the GridSample family's device entries (ops_grid_sample.cc: GridSample,
// a8.GridSampleGrad, Col2Im, DeformConv); device_registry.cc calls it.
#pragma once

#include <vector>

#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {

void RegisterDeviceGridSampleOps(std::vector<DevKernelEntry>* r);

}  // namespace a8::A8_DEV_NS

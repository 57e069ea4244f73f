// Registration of the fused attention's device entries (ops_attention.cc: a8.FusedAttention,
// a8.FusedAttentionGrad); device_registry.cc calls it.
#pragma once

#include <vector>

#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {

void RegisterDeviceAttentionOps(std::vector<DevKernelEntry>* r);

}  // namespace a8::A8_DEV_NS

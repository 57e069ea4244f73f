// The device pool arguments of a pool given as cpu::PoolParams (the ONNX attributes): the geometry
// validated by cpu::PoolOutputSpatial (its errors), spatial dims padded to 3 with leading 1s as the
// kernels of kernels/device/nn.h take them. `out_spatial` gets the pooled spatial dims.
#pragma once

#include "compiler/ir/status.h"
#include "kernels/cpu/pool.h"
#include "kernels/device/nn.h"

namespace a8::A8_DEV_NS {

StatusOr<PoolArgs> PoolArgsFrom(const cpu::PoolParams& p, cpu::Dims* out_spatial);

}  // namespace a8::A8_DEV_NS

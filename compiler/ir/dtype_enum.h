// The element-type enum alone, without the rest of types.h (which pulls in fmt): the device
// kernels (kernels/device, compiled by nvcc) name dtypes with it.
#pragma once

#include <cstdint>

namespace a8 {

enum class DType : uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI8, kU8, kBool };

}  // namespace a8

// The element-type enum alone, without the rest of compiler/ir/types.h (which pulls in fmt): the
// device kernels (kernels/device, compiled by nvcc) and the kernel ABI name dtypes with it.
#pragma once

#include <cstdint>

namespace a8 {

// The values are the plan's (plan.proto DType): new types are appended, never renumbered.
enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kF64,
  kI64,
  kI32,
  kI8,
  kU8,
  kBool,
  kI16,
  kU16,
  kU32,
  kU64,
};

// f32, f16, bf16, f64 (compiler/ir/types.h `IsFloat` is this, for code above the base layer).
constexpr bool IsFloatDType(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

}  // namespace a8

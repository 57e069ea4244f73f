// Element types of the CPU kernels: storage types, the type math is done in, and dispatch.
//
// The DType enum is the base layer's (base/dtype_enum.h), so a plan's dtype needs no translation.
// Storage: f16 and bf16 are 16-bit patterns (Half, BFloat16) converted only through
// kernels/common/float16.h, round to nearest even, the same body the CUDA kernels use. Math on
// f16/bf16/f32 is done in float and rounded once on output; on f64 in double; on integers in the
// integer type itself. `Compute<T>` names that type, `Load`/`Store` convert to and from it.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "kernels/common/float16.h"
#include "kernels/common/kernel_types.h"

namespace a8::cpu {

// The shared kernel vocabulary (kernels/common/kernel_types.h), under the CPU kernels' names.
using a8::Dims;
using a8::ElemName;
using a8::NumElements;
using a8::Strides;

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <typename T>
struct ElemTraits {  // integers and bool: computed in their own type
  using Compute = T;
  static T Load(T v) { return v; }
  static T Store(T v) { return v; }
};
template <>
struct ElemTraits<Half> {
  using Compute = float;
  static float Load(Half v) { return HalfBitsToFloat(v.bits); }
  static Half Store(float v) { return Half{FloatToHalfBits(v)}; }
};
template <>
struct ElemTraits<BFloat16> {
  using Compute = float;
  static float Load(BFloat16 v) { return BFloat16BitsToFloat(v.bits); }
  static BFloat16 Store(float v) { return BFloat16{FloatToBFloat16Bits(v)}; }
};

template <typename T>
using Compute = typename ElemTraits<T>::Compute;
template <typename T>
inline Compute<T> Load(T v) {
  return ElemTraits<T>::Load(v);
}
template <typename T>
inline T Store(Compute<T> v) {
  return ElemTraits<T>::Store(v);
}
template <typename T>
inline constexpr bool kIsFloatElem =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The C++ storage type of a dtype, for `DispatchX(dtype, [&](auto tag) { using T = ...; })`.
template <typename T>
struct TypeTag {
  using type = T;
};
#define A8_TAG_TYPE(tag) typename decltype(tag)::type

// (Not DTypeSize: a8cpukernels links without the compiler library.)
inline size_t ElemSize(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kI64:
    case DType::kU64:
      return 8;
    case DType::kF32:
    case DType::kI32:
    case DType::kU32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
    case DType::kU16:
      return 2;
    default:
      return 1;
  }
}

enum class TypeSet { kFloat, kNumeric, kAll };

// Calls f(TypeTag<T>{}) for the storage type of `t` when `t` is in kSet; otherwise an
// Unsupported status naming `op` and the dtype.
template <TypeSet kSet, typename F>
Status Dispatch(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::kF32:
      return f(TypeTag<float>{});
    case DType::kF16:
      return f(TypeTag<Half>{});
    case DType::kBF16:
      return f(TypeTag<BFloat16>{});
    case DType::kF64:
      return f(TypeTag<double>{});
    default:
      break;
  }
  if constexpr (kSet != TypeSet::kFloat) {
    switch (t) {
      case DType::kI64:
        return f(TypeTag<int64_t>{});
      case DType::kI32:
        return f(TypeTag<int32_t>{});
      case DType::kI8:
        return f(TypeTag<int8_t>{});
      case DType::kU8:
        return f(TypeTag<uint8_t>{});
      case DType::kI16:
        return f(TypeTag<int16_t>{});
      case DType::kU16:
        return f(TypeTag<uint16_t>{});
      case DType::kU32:
        return f(TypeTag<uint32_t>{});
      case DType::kU64:
        return f(TypeTag<uint64_t>{});
      default:
        break;
    }
  }
  if constexpr (kSet == TypeSet::kAll) {
    if (t == DType::kBool) return f(TypeTag<bool>{});
  }
  return Unsupported("{}: dtype {} is not supported by the CPU kernel", op, ElemName(t));
}

// Calls f(TypeTag<U>{}) with an unsigned integer type of the element size of `t`: for kernels
// that only move elements and never look at their values.
template <typename F>
Status DispatchBySize(DType t, F&& f) {
  switch (ElemSize(t)) {
    case 8:
      return f(TypeTag<uint64_t>{});
    case 4:
      return f(TypeTag<uint32_t>{});
    case 2:
      return f(TypeTag<uint16_t>{});
    default:
      return f(TypeTag<uint8_t>{});
  }
}

}  // namespace a8::cpu

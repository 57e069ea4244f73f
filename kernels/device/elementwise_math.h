// The per-element math of the elementwise device kernels (kernels/device/elementwise.h), for the
// kernels/device/elementwise*_impl.h files only: the ONNX Cast of one element (mirroring
// kernels/cpu/cast_elem.h exactly) and the broadcast indexing. The unary and binary math is
// kernels/common/unary_math.h and binary_math.h, shared with the CPU kernels.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/binary_math.h"
#include "kernels/common/float_to_int.h"
#include "kernels/common/index_div.h"
#include "kernels/common/round_to_odd.h"
#include "kernels/common/unary_math.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS {

template <typename T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BF16>;
template <typename T>
inline constexpr bool kIsFloatElem = std::is_floating_point_v<T> || kIsHalfLike<T>;

// libm by overload (MExp, MPow, ...) and the unary functors come from
// kernels/common/unary_math.h.

// ---- ONNX Cast of one element (kernels/cpu/cast_elem.h CastElem, line for line).

template <typename To, typename From>
A8_HD To DevCast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsHalfLike<From>) {
    return DevCast<To, float>(Elem<From>::Load(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return DevCast<To, int32_t>(v ? 1 : 0);
  } else if constexpr (std::is_floating_point_v<From>) {
    if constexpr (std::is_floating_point_v<To>) {
      return static_cast<To>(v);
    } else if constexpr (kIsHalfLike<To>) {
      if constexpr (std::is_same_v<From, float>) {
        return Elem<To>::Store(v);
      } else {
        return Elem<To>::Store(RoundToOddFloat(static_cast<double>(v)));
      }
    } else {
      return TruncDoubleTo<To>(static_cast<double>(v));  // kernels/common/float_to_int.h
    }
  } else {  // From is an integer
    if constexpr (kIsHalfLike<To>) {
      if constexpr (std::is_same_v<From, uint64_t>) {
        return Elem<To>::Store(RoundToOddFloat(v));
      } else {
        return Elem<To>::Store(RoundToOddFloat(static_cast<int64_t>(v)));
      }
    } else {
      return static_cast<To>(v);
    }
  }
}

// Element `i` of a buffer of runtime dtype `t`, cast to To (scalar operands: Dropout's ratio,
// Pow's foreign exponent).
template <typename To>
A8_HD To LoadCast(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::kF32:
      return DevCast<To>(static_cast<const float*>(p)[i]);
    case DType::kF16:
      return DevCast<To>(static_cast<const Half*>(p)[i]);
    case DType::kBF16:
      return DevCast<To>(static_cast<const BF16*>(p)[i]);
    case DType::kF64:
      return DevCast<To>(static_cast<const double*>(p)[i]);
    case DType::kI64:
      return DevCast<To>(static_cast<const int64_t*>(p)[i]);
    case DType::kI32:
      return DevCast<To>(static_cast<const int32_t*>(p)[i]);
    case DType::kI8:
      return DevCast<To>(static_cast<const int8_t*>(p)[i]);
    case DType::kU8:
      return DevCast<To>(static_cast<const uint8_t*>(p)[i]);
    case DType::kBool:
      return DevCast<To>(static_cast<const bool*>(p)[i]);
    case DType::kI16:
      return DevCast<To>(static_cast<const int16_t*>(p)[i]);
    case DType::kU16:
      return DevCast<To>(static_cast<const uint16_t*>(p)[i]);
    case DType::kU32:
      return DevCast<To>(static_cast<const uint32_t*>(p)[i]);
    case DType::kU64:
      return DevCast<To>(static_cast<const uint64_t*>(p)[i]);
  }
  return To{};
}

// The binary functors (AddF, ..., XorF) come from kernels/common/binary_math.h.

// ---- broadcasting: operand offsets of output element i.
template <int K>
struct NaryIndex {
  int rank;
  IndexDiv dims[kElemMaxRank];  // divisions by multiplication (kernels/common/index_div.h)
  int64_t strides[K][kElemMaxRank];

  A8_HD void Offsets(int64_t i, int64_t* off) const {
    if (rank == 1) {  // same shapes or scalars: no division
      for (int k = 0; k < K; ++k) off[k] = i * strides[k][0];
      return;
    }
    for (int k = 0; k < K; ++k) off[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t idx = 0;
      i = dims[d].DivMod(i, &idx);
      for (int k = 0; k < K; ++k) off[k] += idx * strides[k][d];
    }
  }
};

// The first K operands of `s` (host code).
template <int K>
NaryIndex<K> MakeNaryIndex(const NaryShape& s) {
  NaryIndex<K> ix{};
  ix.rank = s.rank;
  for (int d = 0; d < kElemMaxRank; ++d) {
    ix.dims[d] = IndexDiv(s.dims[d] > 0 ? s.dims[d] : 1);
    for (int k = 0; k < K; ++k) ix.strides[k][d] = s.strides[k][d];
  }
  return ix;
}

// The generic strided N-ary kernel: body.Load(offsets) reads output element i's K operands at
// their element offsets, body.Store(i, loaded) computes and writes it (launch.h's loads-first
// split).
template <int K, typename Body>
struct NaryKernel {
  NaryIndex<K> ix;
  Body body;
  A8_HD auto Load(int64_t i) const {
    int64_t off[K];
    ix.Offsets(i, off);
    return body.Load(off);
  }
  template <typename In>
  A8_HD void Store(int64_t i, const In& v) const {
    body.Store(i, v);
  }
  A8_HD void operator()(int64_t i) const { Store(i, Load(i)); }
};

template <int K, typename Body>
DevStatus LaunchNary(const DevCtx& ctx, const NaryShape& s, int64_t n, const Body& body) {
  if (s.rank < 1 || s.rank > kElemMaxRank || s.num_operands != K) {
    return DevError("elementwise: bad broadcast shape");
  }
  return ForEach(ctx, n, NaryKernel<K, Body>{MakeNaryIndex<K>(s), body});
}

}  // namespace a8::A8_DEV_NS

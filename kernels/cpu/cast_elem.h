// One-element ONNX Cast (see Cast in elementwise.h for the semantics), shared by the kernels
// that store a computed value into another dtype (Cast, Pow with a foreign exponent, Pad values).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/common/float_to_int.h"
#include "kernels/common/round_to_odd.h"  // RoundToOddFloat
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

template <typename To, typename From>
To CastElem(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return CastElem<To, float>(Load(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return CastElem<To, int32_t>(v ? 1 : 0);
  } else if constexpr (std::is_floating_point_v<From>) {
    if constexpr (std::is_same_v<To, float> || std::is_same_v<To, double>) {
      return static_cast<To>(v);
    } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
      if constexpr (std::is_same_v<From, float>)
        return Store<To>(v);
      else
        return Store<To>(RoundToOddFloat(static_cast<double>(v)));
    } else {
      return TruncDoubleTo<To>(static_cast<double>(v));  // kernels/common/float_to_int.h
    }
  } else {  // From is an integer
    if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
      if constexpr (std::is_same_v<From, uint64_t>)
        return Store<To>(RoundToOddFloat(v));
      else
        return Store<To>(RoundToOddFloat(static_cast<int64_t>(v)));
    } else {
      return static_cast<To>(v);
    }
  }
}

// `n` values of float dtype `dt` loaded into the compute type C (null gives an empty vector):
// the parameters and statistics of the normalization kernels and their gradients.
template <typename C>
StatusOr<std::vector<C>> LoadAs(DType dt, const void* data, int64_t n, const char* op) {
  std::vector<C> out;
  if (data == nullptr) return out;
  out.resize(static_cast<size_t>(n));
  Status st = Dispatch<TypeSet::kFloat>(dt, op, [&](auto tag) {
    using P = A8_TAG_TYPE(tag);
    const P* in = static_cast<const P*>(data);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<C>(CastElem<double, P>(in[i]));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

// Stores `v` into `data` of float dtype `dt`, rounded like a Cast; nothing for null.
template <typename C>
Status StoreAs(DType dt, const std::vector<C>& v, void* data, const char* op) {
  if (data == nullptr) return Status::Ok();
  return Dispatch<TypeSet::kFloat>(dt, op, [&](auto tag) {
    using P = A8_TAG_TYPE(tag);
    P* out = static_cast<P*>(data);
    for (size_t i = 0; i < v.size(); ++i) out[i] = CastElem<P, C>(v[i]);
    return Status::Ok();
  });
}

}  // namespace a8::cpu

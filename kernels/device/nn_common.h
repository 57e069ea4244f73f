// Helpers shared by kernels/device/nn_norm_impl.h, nn_layer_norm_impl.h and nn_pool_impl.h:
// parameters and statistics of their own float dtype (loaded exactly, stored like cpu::CastElem),
// sqrt in the compute type, scratch memory. Kept in namespace nn_detail so that other families'
// helpers of the same names never collide.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/round_to_odd.h"
#include "kernels/device/launch.h"
#include "kernels/device/nn.h"

namespace a8::A8_DEV_NS::nn_detail {

A8_HD float Sqrt(float v) { return ::sqrtf(v); }
A8_HD double Sqrt(double v) { return ::sqrt(v); }

// Element i of a float array of dtype `t`, exactly (every float dtype fits in a double).
A8_HD double LoadParam(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::kF32:
      return static_cast<const float*>(p)[i];
    case DType::kF16:
      return HalfBitsToFloat(static_cast<const Half*>(p)[i].bits);
    case DType::kBF16:
      return BFloat16BitsToFloat(static_cast<const BF16*>(p)[i].bits);
    case DType::kF64:
      return static_cast<const double*>(p)[i];
    default:
      return 0;
  }
}

// A float or double narrowed to float so that a following rounding to f16/bf16 is one correct
// rounding (kernels/common/round_to_odd.h).
A8_HD float NarrowToFloat(float v) { return v; }
A8_HD float NarrowToFloat(double v) { return RoundToOddFloat(v); }

// Stores v (float or double) as element i of a float array of dtype `t`, rounded like a Cast.
template <typename C>
A8_HD void StoreParam(DType t, void* p, int64_t i, C v) {
  switch (t) {
    case DType::kF32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      return;
    case DType::kF16:
      static_cast<Half*>(p)[i] = Half{FloatToHalfBits(NarrowToFloat(v))};
      return;
    case DType::kBF16:
      static_cast<BF16*>(p)[i] = BF16{FloatToBFloat16Bits(NarrowToFloat(v))};
      return;
    case DType::kF64:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      return;
    default:
      return;
  }
}

// A parameter in the compute type C, as cpu::LoadAs gives it.
template <typename C>
A8_HD C Param(DType t, const void* p, int64_t i) {
  return static_cast<C>(LoadParam(t, p, i));
}

// The same, for a parameter array of storage type P (float, Half, BF16, double): the dtype
// resolved once per launch (DispatchFloat), not per element.
template <typename C, typename P>
A8_HD C ParamOf(const P* p, int64_t i) {
  return static_cast<C>(static_cast<double>(Elem<P>::Load(p[i])));
}

// fn(T{}, stats) for T the storage type of the float `dtype`, with `count` compute-type values
// (Acc<T>) of scratch memory (launch.h ScratchOf) in stats: the statistics of the normalization
// kernels.
template <typename Fn>
DevStatus DispatchWithStats(DevCtx& ctx, DType dtype, int64_t count, Fn&& fn) {
  return DispatchFloat(dtype, [&](auto tag) -> DevStatus {
    Acc<decltype(tag)>* stats = nullptr;
    A8_DEV_RETURN_IF_ERROR(ScratchOf(ctx, count, &stats));
    return fn(tag, stats);
  });
}

}  // namespace a8::A8_DEV_NS::nn_detail

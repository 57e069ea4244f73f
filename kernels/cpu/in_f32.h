// f16/bf16 kernels in the fast mode that run their f32 fast path on float copies: the operands
// are converted to float in vector registers (fast_convert.h; f16 and bf16 are exact in float), the
// f32 kernel runs, and the output is rounded once: the f16 semantics of PRECISION.md (f32
// accumulation, one rounding), at f32's speed plus a conversion pass. The convolutions oneDNN does
// not take (onednn_conv.h: few channels, groups, 1-D/3-D; f16 ones it takes run its f32 primitive
// without these copies), and pooling and its gradients (pool.cc, grad_conv_pool.cc: their f16/bf16
// loops converted one element at a time, 16x the f32 time in the example CNN's fp16 step).
#pragma once

#include <initializer_list>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kernels/common/kernel_types.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/kernel_mode.h"

namespace a8::cpu::internal {

inline bool IsHalfType(DType t) { return t == DType::kF16 || t == DType::kBF16; }

// Whether a kernel with f16/bf16 `t` data takes the f32 route below: in the fast mode only (the
// reference mode's kernels convert one element at a time, as cuda-emu does, bit for bit).
inline bool HalfInF32(DType t) { return IsHalfType(t) && CurrentKernelMode() == KernelMode::kFast; }

// Runs run(p with dtype f32, float inputs, float output) on float copies of `inputs` ((pointer,
// elements) pairs of p.dtype; a null pointer stays null) and rounds its `out_n` outputs into y.
// Params: a kernel's parameters with a `dtype` (ConvParams, PoolParams).
template <typename Params, typename Run>
Status InF32(const Params& p, std::initializer_list<std::pair<const void*, int64_t>> inputs,
             int64_t out_n, void* y, Run run) {
  std::vector<std::vector<float>> copies;
  std::vector<const float*> ptrs;
  copies.reserve(inputs.size());
  for (const auto& [data, n] : inputs) {
    copies.push_back(data != nullptr ? WidenToF32(p.dtype, data, n) : std::vector<float>());
    ptrs.push_back(data != nullptr ? copies.back().data() : nullptr);
  }
  Params p32 = p;
  p32.dtype = DType::kF32;
  std::vector<float> y32(static_cast<size_t>(out_n));
  A8_RETURN_IF_ERROR(run(p32, ptrs.data(), y32.data()));
  NarrowFromF32(p.dtype, y32.data(), out_n, y);
  return Status::Ok();
}

}  // namespace a8::cpu::internal

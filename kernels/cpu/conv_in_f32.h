// f16/bf16 convolutions in the fast mode that oneDNN does not take (onednn_conv.h: few channels,
// groups, 1-D/3-D; f16 ones it takes run its f32 primitive without these copies): the operands
// are converted to float in vector registers (fast_convert.h; f16 is exact in float), the f32 fast
// path runs (the direct convolution or im2col + GEMM), and the output is rounded once: the f16
// semantics of PRECISION.md (f32 accumulation, one rounding), at f32's speed plus a conversion
// pass.
#pragma once

#include <initializer_list>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kernels/common/kernel_types.h"
#include "kernels/cpu/fast_convert.h"

namespace a8::cpu::internal {

inline bool IsHalfType(DType t) { return t == DType::kF16 || t == DType::kBF16; }

// Runs run(p with dtype f32, float inputs, float output) on float copies of `inputs` ((pointer,
// elements) pairs of p.dtype; a null pointer stays null) and rounds its `out_n` outputs into y.
template <typename Run>
Status ConvInF32(const ConvParams& p, std::initializer_list<std::pair<const void*, int64_t>> inputs,
                 int64_t out_n, void* y, Run run) {
  std::vector<std::vector<float>> copies;
  std::vector<const float*> ptrs;
  copies.reserve(inputs.size());
  for (const auto& [data, n] : inputs) {
    copies.push_back(data != nullptr ? WidenToF32(p.dtype, data, n) : std::vector<float>());
    ptrs.push_back(data != nullptr ? copies.back().data() : nullptr);
  }
  ConvParams p32 = p;
  p32.dtype = DType::kF32;
  std::vector<float> y32(static_cast<size_t>(out_n));
  A8_RETURN_IF_ERROR(run(p32, ptrs.data(), y32.data()));
  NarrowFromF32(p.dtype, y32.data(), out_n, y);
  return Status::Ok();
}

}  // namespace a8::cpu::internal

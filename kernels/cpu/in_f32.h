// f16/bf16 kernels in the fast mode that run their f32 fast path on float copies: the operands
// are converted to float in vector registers (fast_convert.h; f16 and bf16 are exact in float), the
// f32 kernel runs, and the output is rounded once: the f16 semantics of PRECISION.md (f32
// accumulation, one rounding), at f32's speed plus a conversion pass. The convolutions oneDNN does
// not take (onednn_conv.h: few channels, groups, 1-D/3-D; f16 ones it takes run its f32 primitive
// without these copies), and pooling and its gradients (pool.cc, grad_conv_pool.cc: their f16/bf16
// loops converted one element at a time, 16x the f32 time in the example CNN's fp16 step).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kernels/common/kernel_types.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/parallel.h"

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

// The route for kernels whose planes are independent (pooling: its batch x channels planes), with
// no widened copy of a whole tensor: `planes` planes of f16/bf16 `dtype`, the inputs given as
// (pointer, elements per plane), y with `out_per_plane` elements per plane. Blocks of planes
// (a few thousand floats of all operands together) are converted into float buffers of the
// thread, run(first plane, planes in the block, float inputs, float output) computes them with
// the f32 kernel, and the block's outputs are rounded once into y. Blocks are split over the pool
// (a kernel's own ParallelFor inside `run` then runs inline).
template <typename Run>
Status PlanesInF32(DType dtype, int64_t planes,
                   std::initializer_list<std::pair<const void*, int64_t>> inputs,
                   int64_t out_per_plane, void* y, Run run) {
  constexpr int64_t kBlockFloats = 8192;
  const std::vector<std::pair<const void*, int64_t>> ins(inputs);
  int64_t per_plane = out_per_plane;
  for (const auto& in : ins) per_plane += in.second;
  const int64_t block = std::max<int64_t>(1, kBlockFloats / std::max<int64_t>(per_plane, 1));
  const int64_t blocks = (planes + block - 1) / block;
  std::mutex mu;
  Status failed = Status::Ok();
  ParallelFor(blocks, 4 * block * per_plane, [&](int64_t b0, int64_t b1) {
    std::vector<std::vector<float>> bufs(ins.size());
    std::vector<const float*> ptrs(ins.size());
    std::vector<float> out;
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t p0 = blk * block, k = std::min(block, planes - p0);
      for (size_t i = 0; i < ins.size(); ++i) {
        const auto& [data, n] = ins[i];
        bufs[i].resize(static_cast<size_t>(k * n));  // f16 and bf16 are 2 bytes
        HalfTypeToF32(dtype, static_cast<const uint16_t*>(data) + p0 * n, bufs[i].data(), k * n);
        ptrs[i] = bufs[i].data();
      }
      out.resize(static_cast<size_t>(k * out_per_plane));
      Status s = run(p0, k, ptrs.data(), out.data());
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (failed.ok()) failed = std::move(s);
        return;
      }
      NarrowFromF32(dtype, out.data(), k * out_per_plane,
                    static_cast<uint16_t*>(y) + p0 * out_per_plane);
    }
  });
  return failed;
}

}  // namespace a8::cpu::internal

// Numpy-style broadcasting for the elementwise and data-movement kernels.
//
// A BroadcastPlan coalesces the output dims (drops 1s, merges dims that every input walks
// contiguously) so the innermost loop is as long as possible, and gives each input a stride per
// coalesced dim (0 where it is broadcast). ForEachBroadcastRow walks the output row by row,
// splitting rows over threads; each output element is visited exactly once.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {

// The plan and the output dims (kernels/common/kernel_types.h).
using a8::BroadcastDims;
using a8::BroadcastPlan;
using a8::MakeBroadcastPlan;

// Calls f(r, offsets) for the rows r in [begin, end) of a row-major walk over dims[0 .. rank-2]
// (the last dim is the row), offsets[k] being the row's offset in operand k, whose stride along
// dim i is stride(k, i). The first row's offsets by division, the next rows' by stepping the
// index like an odometer (two or three 64-bit divisions a row were most of the time of short rows:
// attention's masks and transposes).
template <size_t K, typename Stride, typename F>
void ForEachRowOffset(const Dims& dims, int64_t begin, int64_t end, Stride&& stride, F&& f) {
  const int64_t outer = static_cast<int64_t>(dims.size()) - 1;
  std::array<int64_t, K> off{};
  std::vector<int64_t> idx(static_cast<size_t>(std::max<int64_t>(outer, 0)));
  int64_t rest = begin;
  for (int64_t i = outer - 1; i >= 0; --i) {
    idx[i] = rest % dims[i];
    rest /= dims[i];
    for (size_t k = 0; k < K; ++k) off[k] += idx[i] * stride(k, i);
  }
  for (int64_t r = begin; r < end; ++r) {
    f(r, off);
    for (int64_t i = outer - 1; i >= 0; --i) {  // the next row
      if (++idx[i] < dims[i]) {
        for (size_t k = 0; k < K; ++k) off[k] += stride(k, i);
        break;
      }
      idx[i] = 0;
      for (size_t k = 0; k < K; ++k) off[k] -= (dims[i] - 1) * stride(k, i);
    }
  }
}

// Calls f(out_offset, const int64_t* in_offsets, length, const int64_t* in_inner_strides) for
// every innermost row of the output. `cost` is the work per element, for the thread split.
template <size_t K, typename F>
void ForEachBroadcastRow(const BroadcastPlan& p, int64_t cost, F&& f) {
  const int64_t rank = static_cast<int64_t>(p.dims.size());
  const int64_t inner = p.dims.back();
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < rank; ++i) rows *= p.dims[i];
  if (rows == 0 || inner == 0) return;
  std::array<int64_t, K> inner_strides;
  for (size_t k = 0; k < K; ++k) inner_strides[k] = p.strides[k].back();
  ParallelFor(rows, inner * cost, [&](int64_t begin, int64_t end) {
    ForEachRowOffset<K>(
        p.dims, begin, end, [&](size_t k, int64_t i) { return p.strides[k][i]; },
        [&](int64_t r, const std::array<int64_t, K>& off) {
          f(r * inner, off.data(), inner, inner_strides.data());
        });
  });
}

}  // namespace a8::cpu

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
    // The first row's index and offsets by division, the next rows' by stepping the index like
    // an odometer (two divisions a row were most of the time of short rows: attention's masks).
    std::array<int64_t, K> off{};
    std::vector<int64_t> idx(static_cast<size_t>(std::max<int64_t>(rank - 1, 0)));
    int64_t rest = begin;
    for (int64_t i = rank - 2; i >= 0; --i) {
      idx[i] = rest % p.dims[i];
      rest /= p.dims[i];
      for (size_t k = 0; k < K; ++k) off[k] += idx[i] * p.strides[k][i];
    }
    for (int64_t r = begin; r < end; ++r) {
      f(r * inner, off.data(), inner, inner_strides.data());
      for (int64_t i = rank - 2; i >= 0; --i) {  // the next row
        if (++idx[i] < p.dims[i]) {
          for (size_t k = 0; k < K; ++k) off[k] += p.strides[k][i];
          break;
        }
        idx[i] = 0;
        for (size_t k = 0; k < K; ++k) off[k] -= (p.dims[i] - 1) * p.strides[k][i];
      }
    }
  });
}

}  // namespace a8::cpu

// numpy matmul shapes (ONNX MatMul), resolved once for every backend: the CPU kernel
// (kernels/cpu/gemm.cc) and the CUDA entry (runtime/device/ops_gemm_conv.cc) give the same
// output dims and the same messages.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>

#include "base/status.h"
#include "kernels/common/kernel_types.h"

namespace a8 {

struct MatMulShape {
  int64_t m, n, k;
  Dims a_batch, b_batch, out_batch;  // the operands' batch dims and their broadcast
  Dims out_dims;
};

// A rank-1 `a` is a row [1, k] and a rank-1 `b` a column [k, 1]; their unit dim is dropped from
// out_dims. Batch dims broadcast.
inline StatusOr<MatMulShape> ResolveMatMul(const Dims& a_dims, const Dims& b_dims) {
  if (a_dims.empty() || b_dims.empty()) {
    return InvalidInput("MatMul: operands must have rank >= 1, got [{}] and [{}]",
                        fmt::join(a_dims, ","), fmt::join(b_dims, ","));
  }
  Dims a = a_dims, b = b_dims;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulShape s;
  s.m = a[a.size() - 2];
  s.k = a.back();
  s.n = b.back();
  if (b[b.size() - 2] != s.k) {
    return InvalidInput("MatMul: inner dims differ: [{}] @ [{}]", fmt::join(a_dims, ","),
                        fmt::join(b_dims, ","));
  }
  s.a_batch.assign(a.begin(), a.end() - 2);
  s.b_batch.assign(b.begin(), b.end() - 2);
  A8_ASSIGN_OR_RETURN(s.out_batch, BroadcastDims({s.a_batch, s.b_batch}, "MatMul"));
  s.out_dims = s.out_batch;
  if (a_dims.size() > 1) s.out_dims.push_back(s.m);
  if (b_dims.size() > 1) s.out_dims.push_back(s.n);
  return s;
}

}  // namespace a8

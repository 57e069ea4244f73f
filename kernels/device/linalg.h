// Det (ONNX 11/22) and its gradient a8.DetGrad: one body each (linalg_impl.h), run by the CUDA
// backend, its host emulation (cuda-emu) and the CPU backend (through its host launch), so all
// three give the same bits.
//
// X is [batch, n, n] (the leading dims flattened). Det is LU with partial pivoting in double, one
// thread a matrix, on a double copy in scratch; the result is rounded once to the output's dtype.
// DetGrad: dX[b] = dy[b] * cofactor(X[b]), which is det * inverse(X)^T where X is invertible and
// stays exact (no NaN) where it is singular: each cofactor is the determinant of a minor by the
// same LU, O(n^5) a matrix (one thread a matrix, a minor's scratch each).
//
// Declarations only: included by host setup code and compiled by nvcc.
#pragma once

#include <cstdint>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS::linalg {

struct DetParams {
  DType dtype = DType::kF32;  // of X, y, dy and dX
  int64_t batch = 0, n = 0;
  const void* x = nullptr;
  const void* dy = nullptr;  // DetGrad: [batch]
  void* out = nullptr;       // Det: y [batch]; DetGrad: dX [batch, n, n]
  double* work = nullptr;    // set by the kernel: batch * n * n doubles of DevCtx scratch
};

DevStatus Det(DevCtx& ctx, const DetParams& p);
DevStatus DetGrad(DevCtx& ctx, const DetParams& p);

}  // namespace a8::A8_DEV_NS::linalg

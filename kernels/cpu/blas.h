// Internal helpers of the GEMM-based kernels: one row-major BLAS GEMM call for float and double,
// and whole-buffer conversion from a storage type to its compute type and back.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu::internal {

// C[m,n] = alpha * op(A) op(B) + beta * C, row major (OpenBLAS sgemm / dgemm).
inline void BlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                     int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(std::max<int64_t>(lda, 1)), b,
              static_cast<blasint>(std::max<int64_t>(ldb, 1)), beta, c,
              static_cast<blasint>(std::max<int64_t>(ldc, 1)));
}
inline void BlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                     const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                     double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(std::max<int64_t>(lda, 1)), b,
              static_cast<blasint>(std::max<int64_t>(ldb, 1)), beta, c,
              static_cast<blasint>(std::max<int64_t>(ldc, 1)));
}

// A read-only view of `n` elements of T in its compute type: the buffer itself when T already
// is the compute type, otherwise an exact converted copy.
template <typename T>
class ComputeView {
 public:
  using C = Compute<T>;
  ComputeView(const void* data, int64_t n) {
    if constexpr (std::is_same_v<T, C>) {
      ptr_ = static_cast<const C*>(data);
    } else {
      copy_.resize(static_cast<size_t>(n));
      const T* in = static_cast<const T*>(data);
      ParallelFor(n, 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) copy_[i] = Load(in[i]);
      });
      ptr_ = copy_.data();
    }
  }
  const C* data() const { return ptr_; }

 private:
  const C* ptr_ = nullptr;
  std::vector<C> copy_;
};

// A writable compute-type buffer for `n` output elements of T; Flush() rounds it into `out`
// once (a no-op when T is the compute type, which writes `out` directly).
template <typename T>
class ComputeOutput {
 public:
  using C = Compute<T>;
  ComputeOutput(void* out, int64_t n) : out_(static_cast<T*>(out)), n_(n) {
    if constexpr (std::is_same_v<T, C>) {
      ptr_ = out_;
    } else {
      copy_.assign(static_cast<size_t>(n), C(0));
      ptr_ = copy_.data();
    }
  }
  C* data() { return ptr_; }
  void Flush() {
    if constexpr (!std::is_same_v<T, C>) {
      ParallelFor(n_, 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out_[i] = Store<T>(copy_[i]);
      });
    }
  }

 private:
  T* out_;
  int64_t n_;
  C* ptr_ = nullptr;
  std::vector<C> copy_;
};

}  // namespace a8::cpu::internal

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
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu::internal {

// C = alpha A B + beta C for tiny untransposed row-major operands, where a BLAS call's fixed cost
// (argument checks, packing, its thread decision) exceeds the arithmetic. Same result up to the
// order of float rounding; C is not read when beta is 0, as in BLAS. Always inlined, so that
// SmallGemmF32's per-ISA clones compile this loop for their ISA rather than call a baseline copy.
template <typename C>
[[gnu::always_inline]] inline void SmallGemm(int64_t m, int64_t n, int64_t k, C alpha, const C* a,
                                             int64_t lda, const C* b, int64_t ldb, C beta, C* c,
                                             int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    C* __restrict crow = c + i * ldc;
    if (beta == C(0)) {
      std::fill(crow, crow + n, C(0));
    } else if (beta != C(1)) {
      for (int64_t j = 0; j < n; ++j) crow[j] *= beta;
    }
    for (int64_t l = 0; l < k; ++l) {
      const C av = alpha * a[i * lda + l];
      const C* __restrict brow = b + l * ldb;
      for (int64_t j = 0; j < n; ++j) crow[j] += av * brow[j];
    }
  }
}

// SmallGemm<float>, compiled for AVX-512, AVX2 and baseline x86-64 (chosen at load time; no
// contraction into FMA, so the same bits every way). Defined in gemm.cc.
void SmallGemmF32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Whether the CPU has AVX-512F (checked once).
bool CpuHasAvx512();
// Whether it has AVX2 and FMA (checked once).
bool CpuHasAvx2Fma();
// Up to this k, GemmF32Avx512 copies B panels (k x 32 floats) into a per-thread buffer.
inline constexpr int64_t kAvx512MaxPackedK = int64_t{1} << 16;
// C[m,n] = alpha A op(B) + beta C for row-major f32 (A untransposed; B [k, n], or [n, k] with
// trans_b, then k <= kAvx512MaxPackedK), CPUs with AVX-512 only: register tiles of 6 x 32
// (8 x 16) C elements accumulated in float with FMA over the whole k, A read in place, B in
// 32-column panels. About twice OpenBLAS's speed on this repository's shapes (its Haswell
// kernels are all this OpenBLAS has for AVX-512 AMD CPUs), several times on tiny per-head
// products. C is not read when beta is 0. Defined in gemm.cc.
//
// Each C element is fma(beta, C, alpha * s), where s is the FMA chain a[0] b[0] + ... + a[k-1]
// b[k-1] from zero, in order (the fma skipped when beta is 0): the bits depend on neither the
// tiling nor the split over the pool, so a convolution computed as one GEMM here and as a batch
// of GEMMs on cuda-emu agrees to the bit.
void GemmF32Avx512(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// The same product, the same bits, in AVX2 registers (6 x 16 tiles, B in 16-column panels), for
// CPUs with AVX2 and FMA but no AVX-512: without it they took OpenBLAS, whose sums run in its
// own blocked order, and the reference kernels lost cuda-emu's bits there.
void GemmF32Avx2(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// Whether this CPU runs one of the two (AVX-512, or AVX2 with FMA), and that one.
bool CpuHasGemmTiles();
void GemmF32Tiles(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// Up to this many multiply-adds (and no transposes), BlasGemm runs SmallGemm instead of BLAS.
inline constexpr int64_t kSmallGemmWork = int64_t{1} << 15;
// From this many multiply-adds on, BlasGemm splits C over the ParallelFor pool.
inline constexpr int64_t kParallelGemmWork = int64_t{1} << 21;
// The same for GemmF32Tiles, which is several times faster: below this a product takes ~15 us
// or less on one core, and the hand-off to a sleeping pool thread costs as much as it saves
// (BERT's 512 x 64 x 64 projections ran slower split).
inline constexpr int64_t kParallelAvx512GemmWork = int64_t{1} << 23;

}  // namespace a8::cpu::internal

// OpenBLAS's own (exported, not in its headers; its fork handler calls it): stops its server
// threads. Weak, so a BLAS without it links.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace a8::cpu::internal {

// OpenBLAS runs single-threaded: all parallelism comes from the ParallelFor pool, so two thread
// pools never compete for the cores (OpenBLAS's idle workers spin, and starve ours). Its pthread
// build starts its server threads as it is loaded, and they poll for about 0.1 s before they
// sleep: shutting them down spares the pool that (the example CNN's forward step on two cores
// without OPENBLAS_NUM_THREADS=1: in a run's first 1,000 steps the worker got no share of a
// quarter of the convolutions). A single-threaded OpenBLAS never restarts them; only a fork does
// (its fork handler), and those go back to sleep after their poll.
inline void UseSingleThreadedBlas() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
    return true;
  }();
  (void)done;
}

// Calls gemm(m, n, a, b, c) on blocks of C's rows (or, when C is wider than tall, of its
// columns) in parallel; each C element is computed by one call, as a whole.
template <typename C, typename G>
void SplitGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const C* a, int64_t lda,
               const C* b, int64_t ldb, C* c, int64_t ldc, G&& gemm,
               int64_t parallel_work = kParallelGemmWork) {
  UseSingleThreadedBlas();
  if (m * n * k < parallel_work || MaxThreads() == 1) {
    gemm(m, n, a, b, c);
    return;
  }
  if (m >= n) {
    ParallelFor(m, n * k / 8 + 1, [&](int64_t r0, int64_t r1) {
      gemm(r1 - r0, n, trans_a ? a + r0 : a + r0 * lda, b, c + r0 * ldc);
    });
  } else {
    ParallelFor(n, m * k / 8 + 1, [&](int64_t c0, int64_t c1) {
      gemm(m, c1 - c0, a, trans_b ? b + c0 * ldb : b + c0, c + c0);
    });
  }
}

// cblas's spelling of a transpose flag and of a size (a leading dimension at least 1).
inline CBLAS_TRANSPOSE CblasTranspose(bool t) { return t ? CblasTrans : CblasNoTrans; }
inline blasint CblasSize(int64_t v) { return static_cast<blasint>(v); }
inline blasint CblasLd(int64_t ld) { return static_cast<blasint>(std::max<int64_t>(ld, 1)); }

// One cblas call, row major: sgemm or dgemm by overload.
inline void CblasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasTranspose(ta), CblasTranspose(tb), CblasSize(m), CblasSize(n),
              CblasSize(k), alpha, a, CblasLd(lda), b, CblasLd(ldb), beta, c, CblasLd(ldc));
}
inline void CblasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                      const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                      double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, CblasTranspose(ta), CblasTranspose(tb), CblasSize(m), CblasSize(n),
              CblasSize(k), alpha, a, CblasLd(lda), b, CblasLd(ldb), beta, c, CblasLd(ldc));
}

// C[m,n] = alpha * op(A) op(B) + beta * C, row major (OpenBLAS sgemm / dgemm). Float products
// with an untransposed A run GemmF32Tiles where the CPU has AVX-512 or AVX2 + FMA, else tiny ones a
// plain loop;
// the rest are split over the pool (SplitGemm).
template <typename T>
void BlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
              int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (!trans_a && (!trans_b || k <= kAvx512MaxPackedK) && CpuHasGemmTiles()) {
      SplitGemm(
          false, trans_b, m, n, k, a, lda, b, ldb, c, ldc,
          [&](int64_t mm, int64_t nn, const T* pa, const T* pb, T* pc) {
            GemmF32Tiles(trans_b, mm, nn, k, alpha, pa, lda, pb, ldb, beta, pc, ldc);
          },
          kParallelAvx512GemmWork);
      return;
    }
  }
  if (!trans_a && !trans_b && m * n * k <= kSmallGemmWork) {
    if constexpr (std::is_same_v<T, float>) {
      return SmallGemmF32(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    } else {
      return SmallGemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
  }
  SplitGemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc,
            [&](int64_t mm, int64_t nn, const T* pa, const T* pb, T* pc) {
              CblasGemm(trans_a, trans_b, mm, nn, k, alpha, pa, lda, pb, ldb, beta, pc, ldc);
            });
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
      if constexpr (kIsHalfElem<T>) {
        if (CurrentKernelMode() == KernelMode::kFast) {  // vector conversion (fast_convert.h)
          ParallelFor(n, 1, [&](int64_t b, int64_t e) { ToF32(in + b, copy_.data() + b, e - b); });
          ptr_ = copy_.data();
          return;
        }
      }
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
    if constexpr (kIsHalfElem<T>) {
      if (CurrentKernelMode() == KernelMode::kFast) {
        ParallelFor(n_, 1,
                    [&](int64_t b, int64_t e) { FromF32(copy_.data() + b, out_ + b, e - b); });
        return;
      }
    }
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

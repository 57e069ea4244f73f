#include "kernels/cpu/gemm.h"

#include <fmt/ranges.h>
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/common/matmul_shape.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/onednn_gemm.h"

namespace a8::cpu {
namespace {

using internal::BlasGemm;
using internal::ComputeOutput;
using internal::ComputeView;

// The linear batch index into operand dims `in` (batch dims only) for output batch `index`.
int64_t BatchSource(const Dims& out, const Dims& in, int64_t index) {
  int64_t src = 0, stride = 1;
  size_t pad = out.size() - in.size();
  for (size_t i = out.size(); i-- > 0;) {
    int64_t idx = index % out[i];
    index /= out[i];
    if (i < pad) continue;
    int64_t d = in[i - pad];
    if (d != 1) src += idx * stride;
    stride *= d;
  }
  return src;
}

// Whether BatchedGemm folds the batch into M: B shared by every product, A batched as Y.
bool FoldsBatchIntoM(const MatMulShape& s) {
  return (s.b_batch.empty() || NumElements(s.b_batch) == 1) &&
         NumElements(s.a_batch) == NumElements(s.out_batch);
}

// fn(i, a_offset, b_offset) for each output matrix i, its operands' element offsets, in one
// parallel region over the batch (attention's per-head products are many tiny GEMMs: one
// hand-off for all of them, not one per matrix); a GEMM inside it runs on its thread. Cost in
// units the pool's threshold expects; the f32 tiles do ~16 (AVX-512) or ~8 (AVX2) multiply-adds
// in one.
template <typename C, typename Fn>
void ForEachProduct(const MatMulShape& s, Fn&& fn) {
  const int64_t per_unit = !std::is_same_v<C, float>   ? 1
                           : internal::CpuHasAvx512()  ? 16
                           : internal::CpuHasAvx2Fma() ? 8
                                                       : 1;
  ParallelFor(NumElements(s.out_batch), s.m * s.n * s.k / per_unit, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i) {
      fn(i, BatchSource(s.out_batch, s.a_batch, i) * s.m * s.k,
         BatchSource(s.out_batch, s.b_batch, i) * s.k * s.n);
    }
  });
}

template <typename C>
void BatchedGemm(const MatMulShape& s, const C* a, const C* b, C* y) {
  if (s.k == 0) {
    std::fill(y, y + NumElements(s.out_batch) * s.m * s.n, C(0));
    return;
  }
  if (FoldsBatchIntoM(s)) {  // one big GEMM
    BlasGemm(false, false, NumElements(s.out_batch) * s.m, s.n, s.k, C(1), a, s.k, b, s.n, C(0), y,
             s.n);
    return;
  }
  ForEachProduct<C>(s, [&](int64_t i, int64_t a_off, int64_t b_off) {
    BlasGemm(false, false, s.m, s.n, s.k, C(1), a + a_off, s.k, b + b_off, s.n, C(0),
             y + i * s.m * s.n, s.n);
  });
}

// f16/bf16 products batched on both sides, in the fast mode: each matrix is widened into
// per-thread buffers of one product's size (attention's heads: 16 x 16, in L1), multiplied by the
// f32 GEMM BatchedGemm runs, and rounded into Y. Widening is exact and each output is rounded
// once, so the bits equal those of widening the whole operands and narrowing the whole output,
// without those three full-size copies. Returns false where BatchedGemm folds the batch into one
// product or there is nothing to multiply: the caller runs the whole-operand path.
template <typename T>
bool BatchedGemmPerMatrix(const MatMulShape& s, const T* a, const T* b, T* y) {
  static_assert(kIsHalfElem<T>);
  if (CurrentKernelMode() != KernelMode::kFast || s.k == 0 || NumElements(s.out_batch) < 2 ||
      FoldsBatchIntoM(s)) {
    return false;
  }
  ForEachProduct<float>(s, [&](int64_t i, int64_t a_off, int64_t b_off) {
    thread_local std::vector<float> a32, b32, y32;
    a32.resize(static_cast<size_t>(s.m * s.k));
    b32.resize(static_cast<size_t>(s.k * s.n));
    y32.resize(static_cast<size_t>(s.m * s.n));
    ToF32(a + a_off, a32.data(), s.m * s.k);
    ToF32(b + b_off, b32.data(), s.k * s.n);
    BlasGemm(false, false, s.m, s.n, s.k, 1.0f, a32.data(), s.k, b32.data(), s.n, 0.0f, y32.data(),
             s.n);
    FromF32(y32.data(), y + i * s.m * s.n, s.m * s.n);
  });
  return true;
}

template <typename T>
void IntMatMul(const MatMulShape& s, const T* a, const T* b, T* y) {
  using U = std::make_unsigned_t<T>;
  const int64_t batches = NumElements(s.out_batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    const T* pa = a + BatchSource(s.out_batch, s.a_batch, bi) * s.m * s.k;
    const T* pb = b + BatchSource(s.out_batch, s.b_batch, bi) * s.k * s.n;
    T* py = y + bi * s.m * s.n;
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        U acc = 0;
        for (int64_t l = 0; l < s.k; ++l) {
          acc += static_cast<U>(pa[i * s.k + l]) * static_cast<U>(pb[l * s.n + j]);
        }
        py[i * s.n + j] = static_cast<T>(acc);
      }
    }
  }
}

bool IsFastGemmType(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// The fast path of MatMul (onednn_gemm.h) where its batch layout allows: B shared (folded into
// M), A shared, or both batched alike. Returns false when the reference must run instead.
StatusOr<bool> FastMatMul(DType dtype, const MatMulShape& s, const void* a, const void* b,
                          void* y) {
  if (!internal::FastGemmEnabled() || !IsFastGemmType(dtype) || s.k == 0) return false;
  const int64_t batches = NumElements(s.out_batch), na = NumElements(s.a_batch),
                nb = NumElements(s.b_batch);
  if (batches == 0 || s.m == 0 || s.n == 0) return false;
  internal::FastGemmArgs g;
  g.ab_type = g.c_type = dtype;
  g.m = s.m;
  g.n = s.n;
  g.k = s.k;
  if (nb == 1 && na == batches) {
    g.m = batches * s.m;  // B is shared: one product with the batch folded into M
  } else if ((na == batches || na == 1) && (nb == batches || nb == 1)) {
    g.batch = batches;
    g.stride_a = na == 1 ? 0 : s.m * s.k;
    g.stride_b = nb == 1 ? 0 : s.k * s.n;
  } else {
    return false;  // batch dims broadcast against each other: the reference handles it
  }
  return internal::FastGemm(g, a, b, y);
}

}  // namespace

namespace internal {
namespace {

// One R x (16 V) tile of C = alpha A B + beta C: R x V AVX-512 accumulators stay in registers
// over the whole k loop (one B row load per vector, one A broadcast per row, R V FMAs); the last
// vector of each row is masked to `last_mask` columns.
template <int R, int V>
[[gnu::always_inline]] inline __attribute__((target("avx512f,fma"))) void Avx512Tile(
    int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
    float* c, int64_t ldc, __mmask16 last_mask) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t l = 0; l < k; ++l) {
    __m512 bv[V];
    for (int v = 0; v < V; ++v) {
      bv[v] = v == V - 1 ? _mm512_maskz_loadu_ps(last_mask, b + l * ldb + 16 * v)
                         : _mm512_loadu_ps(b + l * ldb + 16 * v);
    }
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + l]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < V; ++v) {
      const __mmask16 mask = v == V - 1 ? last_mask : static_cast<__mmask16>(0xffff);
      float* p = c + r * ldc + 16 * v;
      __m512 out = _mm512_mul_ps(alpha_v, acc[r][v]);
      if (beta != 0.0f) out = _mm512_fmadd_ps(beta_v, _mm512_maskz_loadu_ps(mask, p), out);
      _mm512_mask_storeu_ps(p, mask, out);
    }
  }
}

// All rows of one column panel (V vectors wide): tiles of kRows rows, then one of the rest.
template <int V>
__attribute__((target("avx512f,fma"))) void Avx512Panel(int64_t m, int64_t k, float alpha,
                                                        const float* a, int64_t lda, const float* b,
                                                        int64_t ldb, float beta, float* c,
                                                        int64_t ldc, __mmask16 mask) {
  constexpr int kRows = V == 1 ? 8 : 6;  // accumulators + B vectors + 1 broadcast <= 32 zmm
  int64_t i = 0;
  for (; i + kRows <= m; i += kRows) {
    Avx512Tile<kRows, V>(k, alpha, a + i * lda, lda, b, ldb, beta, c + i * ldc, ldc, mask);
  }
  a += i * lda;
  c += i * ldc;
  switch (m - i) {  // the remaining rows, fewer than kRows
    case 1:
      return Avx512Tile<1, V>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    case 2:
      return Avx512Tile<2, V>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    case 3:
      return Avx512Tile<3, V>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    case 4:
      return Avx512Tile<4, V>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    case 5:
      return Avx512Tile<5, V>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    case 6:
      if constexpr (kRows > 6) Avx512Tile<6, V>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
      return;
    case 7:
      if constexpr (kRows > 7) Avx512Tile<7, V>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
      return;
    default:
      return;
  }
}

}  // namespace

bool CpuHasAvx512() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return has;
}

namespace {

// Whether the tile GEMMs copy each B panel first (both decide alike): a transposed B ([n, k])
// always; a plain one when several row tiles reuse the panel and k fits the buffer, since a panel
// read in place from a B whose rows are a multiple of 1 KiB apart falls in a few L1 sets and
// thrashes.
bool PackPanels(bool trans_b, int64_t m, int64_t k) {
  return trans_b || (m > 12 && k > 16 && k <= kAvx512MaxPackedK);
}

// Columns [j, j + w) of B [k, n] (transposed where trans_b: B is [n, k]) copied into `packed`,
// `width` floats a row, zero past w (a per-thread buffer kept for the next call); returns it.
const float* PackPanel(bool trans_b, const float* b, int64_t ldb, int64_t k, int64_t j, int64_t w,
                       int64_t width, std::vector<float>& packed) {
  packed.resize(static_cast<size_t>(k * width));
  if (trans_b) {
    for (int64_t jj = 0; jj < w; ++jj) {
      const float* col = b + (j + jj) * ldb;
      for (int64_t l = 0; l < k; ++l) packed[l * width + jj] = col[l];
    }
  } else {
    for (int64_t l = 0; l < k; ++l)
      std::copy(b + l * ldb + j, b + l * ldb + j + w, &packed[l * width]);
  }
  if (w < width) {
    for (int64_t l = 0; l < k; ++l)
      std::fill(&packed[l * width + w], &packed[l * width + width], 0.0f);
  }
  return packed.data();
}

}  // namespace

__attribute__((target("avx512f,fma"))) void GemmF32Avx512(bool trans_b, int64_t m, int64_t n,
                                                          int64_t k, float alpha, const float* a,
                                                          int64_t lda, const float* b, int64_t ldb,
                                                          float beta, float* c, int64_t ldc) {
  // Panels of 32 columns, read in place or first copied (PackPanels: at most 8 MiB).
  thread_local std::vector<float> packed;
  const bool pack = PackPanels(trans_b, m, k);
  for (int64_t j = 0; j < n; j += 32) {
    const int64_t w = std::min<int64_t>(n - j, 32);
    const float* panel = pack ? PackPanel(trans_b, b, ldb, k, j, w, 32, packed) : b + j;
    const int64_t panel_ld = pack ? 32 : ldb;
    if (w > 16) {
      const auto mask = static_cast<__mmask16>(w == 32 ? 0xffff : (1u << (w - 16)) - 1);
      Avx512Panel<2>(m, k, alpha, a, lda, panel, panel_ld, beta, c + j, ldc, mask);
    } else {
      const auto mask = static_cast<__mmask16>(w == 16 ? 0xffff : (1u << w) - 1);
      Avx512Panel<1>(m, k, alpha, a, lda, panel, panel_ld, beta, c + j, ldc, mask);
    }
  }
  _mm256_zeroupper();  // as in GemmF32Avx2
}

namespace {

// Avx512Tile's arithmetic in AVX2 registers: R x (8 V) C elements, each the same FMA chain over
// the whole k from zero, then alpha times it, then beta C added by one more FMA, so every element
// has the bits GemmF32Avx512 gives it. The last vector of each row is masked to `last_mask`
// columns: in C always, in B where `kMaskB` (a panel read in place at the matrix's right edge).
template <int R, int V, bool kMaskB>
[[gnu::always_inline]] inline __attribute__((target("avx2,fma"))) void Avx2Tile(
    int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
    float* c, int64_t ldc, __m256i last_mask) {
  __m256 acc[R][V];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t l = 0; l < k; ++l) {
    __m256 bv[V];
    for (int v = 0; v < V; ++v) {
      bv[v] = kMaskB && v == V - 1 ? _mm256_maskload_ps(b + l * ldb + 8 * v, last_mask)
                                   : _mm256_loadu_ps(b + l * ldb + 8 * v);
    }
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + l);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  const __m256 alpha_v = _mm256_set1_ps(alpha), beta_v = _mm256_set1_ps(beta);
  const __m256i all = _mm256_set1_epi32(-1);
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < V; ++v) {
      const __m256i mask = v == V - 1 ? last_mask : all;
      float* p = c + r * ldc + 8 * v;
      __m256 out = _mm256_mul_ps(alpha_v, acc[r][v]);
      if (beta != 0.0f) out = _mm256_fmadd_ps(beta_v, _mm256_maskload_ps(p, mask), out);
      _mm256_maskstore_ps(p, mask, out);
    }
  }
}

// All rows of one column panel (V vectors wide): tiles of kRows rows, then one of the rest.
template <int V, bool kMaskB>
__attribute__((target("avx2,fma"))) void Avx2Panel(int64_t m, int64_t k, float alpha,
                                                   const float* a, int64_t lda, const float* b,
                                                   int64_t ldb, float beta, float* c, int64_t ldc,
                                                   __m256i mask) {
  constexpr int kRows = 6;  // 6 V accumulators + V B vectors + 1 broadcast <= 16 ymm
  int64_t i = 0;
  for (; i + kRows <= m; i += kRows) {
    Avx2Tile<kRows, V, kMaskB>(k, alpha, a + i * lda, lda, b, ldb, beta, c + i * ldc, ldc, mask);
  }
  a += i * lda;
  c += i * ldc;
  switch (m - i) {  // the remaining rows, fewer than kRows
    case 1:
      return Avx2Tile<1, V, kMaskB>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    case 2:
      return Avx2Tile<2, V, kMaskB>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    case 3:
      return Avx2Tile<3, V, kMaskB>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    case 4:
      return Avx2Tile<4, V, kMaskB>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    case 5:
      return Avx2Tile<5, V, kMaskB>(k, alpha, a, lda, b, ldb, beta, c, ldc, mask);
    default:
      return;
  }
}

}  // namespace

bool CpuHasAvx2Fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
  }();
  return has;
}

__attribute__((target("avx2,fma"))) void GemmF32Avx2(bool trans_b, int64_t m, int64_t n, int64_t k,
                                                     float alpha, const float* a, int64_t lda,
                                                     const float* b, int64_t ldb, float beta,
                                                     float* c, int64_t ldc) {
  // Panels of 16 columns, read in place or first copied (PackPanels), zero-padded to the full
  // width so that the tiles load whole vectors.
  thread_local std::vector<float> packed;
  constexpr int64_t kPanel = 16;
  const bool pack = PackPanels(trans_b, m, k);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t j = 0; j < n; j += kPanel) {
    const int64_t w = std::min<int64_t>(n - j, kPanel);
    const float* panel = pack ? PackPanel(trans_b, b, ldb, k, j, w, kPanel, packed) : b + j;
    const int64_t panel_ld = pack ? kPanel : ldb;
    const int64_t last = w > 8 ? w - 8 : w;  // columns of the panel's last vector
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(last)), lanes);
    const bool mask_b = !pack && last < 8;
    float* cj = c + j;
    if (w > 8) {
      mask_b ? Avx2Panel<2, true>(m, k, alpha, a, lda, panel, panel_ld, beta, cj, ldc, mask)
             : Avx2Panel<2, false>(m, k, alpha, a, lda, panel, panel_ld, beta, cj, ldc, mask);
    } else {
      mask_b ? Avx2Panel<1, true>(m, k, alpha, a, lda, panel, panel_ld, beta, cj, ldc, mask)
             : Avx2Panel<1, false>(m, k, alpha, a, lda, panel, panel_ld, beta, cj, ldc, mask);
    }
  }
  // GCC does not clear the upper register halves on leaving a target("avx2") function; the
  // caller's SSE code (glibc's erfcf in the GELU epilogue) ran twice as slowly after it.
  _mm256_zeroupper();
}

bool CpuHasGemmTiles() { return CpuHasAvx512() || CpuHasAvx2Fma(); }

void GemmF32Tiles(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (CpuHasAvx512()) {
    GemmF32Avx512(trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    GemmF32Avx2(trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off"))) void
SmallGemmF32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
             const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  SmallGemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace internal

StatusOr<Dims> MatMulOutputDims(const Dims& a_dims, const Dims& b_dims) {
  A8_ASSIGN_OR_RETURN(MatMulShape s, ResolveMatMul(a_dims, b_dims));
  return s.out_dims;
}

Status MatMul(DType dtype, const Dims& a_dims, const void* a, const Dims& b_dims, const void* b,
              void* y) {
  A8_ASSIGN_OR_RETURN(MatMulShape s, ResolveMatMul(a_dims, b_dims));
  if (dtype == DType::kI32) {
    IntMatMul(s, static_cast<const int32_t*>(a), static_cast<const int32_t*>(b),
              static_cast<int32_t*>(y));
    return Status::Ok();
  }
  if (dtype == DType::kI64) {
    IntMatMul(s, static_cast<const int64_t*>(a), static_cast<const int64_t*>(b),
              static_cast<int64_t*>(y));
    return Status::Ok();
  }
  A8_ASSIGN_OR_RETURN(bool fast, FastMatMul(dtype, s, a, b, y));
  if (fast) return Status::Ok();
  return Dispatch<TypeSet::kFloat>(dtype, "MatMul", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    if constexpr (kIsHalfElem<T>) {
      if (BatchedGemmPerMatrix(s, static_cast<const T*>(a), static_cast<const T*>(b),
                               static_cast<T*>(y))) {
        return Status::Ok();
      }
    }
    ComputeView<T> av(a, NumElements(a_dims));
    ComputeView<T> bv(b, NumElements(b_dims));
    ComputeOutput<T> out(y, NumElements(s.out_dims));
    if (NumElements(s.out_dims) > 0) BatchedGemm(s, av.data(), bv.data(), out.data());
    out.Flush();
    return Status::Ok();
  });
}

Status Gemm(const GemmParams& p, const void* a, const void* b, const void* c, void* y) {
  if (p.m < 0 || p.n < 0 || p.k < 0) {
    return InvalidInput("Gemm: negative size m={} n={} k={}", p.m, p.n, p.k);
  }
  int64_t c_rows = 1, c_cols = 1;
  if (c != nullptr) {
    if (p.c_dims.size() > 2) {
      return InvalidInput("Gemm: C has rank {} > 2", p.c_dims.size());
    }
    if (p.c_dims.size() >= 1) c_cols = p.c_dims.back();
    if (p.c_dims.size() == 2) c_rows = p.c_dims[0];
    if ((c_rows != 1 && c_rows != p.m) || (c_cols != 1 && c_cols != p.n)) {
      return InvalidInput("Gemm: C dims [{}] do not broadcast to [{},{}]", fmt::join(p.c_dims, ","),
                          p.m, p.n);
    }
  }
  const bool with_c = c != nullptr && p.beta != 0.0f;
  if (internal::FastGemmEnabled() && IsFastGemmType(p.dtype) && p.m > 0 && p.n > 0 && p.k > 0 &&
      (!with_c || p.beta == 1.0f)) {
    internal::FastGemmArgs g;
    g.ab_type = g.c_type = p.dtype;
    g.trans_a = p.trans_a;
    g.trans_b = p.trans_b;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    g.alpha = p.alpha;
    if (with_c) {
      g.addend = c;
      g.add_rows = c_rows;
      g.add_cols = c_cols;
    }
    A8_ASSIGN_OR_RETURN(bool fast, internal::FastGemm(g, a, b, y));
    if (fast) return Status::Ok();
  }
  return Dispatch<TypeSet::kFloat>(p.dtype, "Gemm", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    ComputeView<T> av(a, p.m * p.k);
    ComputeView<T> bv(b, p.k * p.n);
    ComputeOutput<T> out(y, p.m * p.n);
    C* py = out.data();
    C beta = 0;
    if (c != nullptr && p.beta != 0.0f) {
      ComputeView<T> cv(c, c_rows * c_cols);
      const C* pc = cv.data();
      for (int64_t i = 0; i < p.m; ++i) {
        const C* crow = pc + (c_rows == 1 ? 0 : i) * c_cols;
        C* yrow = py + i * p.n;
        if (c_cols == 1) {
          std::fill(yrow, yrow + p.n, crow[0]);
        } else {
          std::copy(crow, crow + p.n, yrow);
        }
      }
      beta = static_cast<C>(p.beta);
    } else {
      std::fill(py, py + p.m * p.n, C(0));  // BLAS need not read C when beta is 0; be sure
    }
    if (p.m > 0 && p.n > 0) {
      if (p.k == 0) {
        for (int64_t i = 0; i < p.m * p.n; ++i) py[i] = beta == C(0) ? C(0) : beta * py[i];
      } else {
        BlasGemm(p.trans_a, p.trans_b, p.m, p.n, p.k, static_cast<C>(p.alpha), av.data(),
                 p.trans_a ? p.m : p.k, bv.data(), p.trans_b ? p.k : p.n, beta, py, p.n);
      }
    }
    out.Flush();
    return Status::Ok();
  });
}

}  // namespace a8::cpu

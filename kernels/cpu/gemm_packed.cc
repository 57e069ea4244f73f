#include "kernels/cpu/gemm_packed.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/fast_convert_lanes.h"
#include "kernels/cpu/parallel.h"

// GCC 12's intrinsics build their "undefined" vectors as `__m512 __Y = __Y`, which
// -Wmaybe-uninitialized reports wherever they are inlined (as in fast_convert.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace a8::cpu::internal {
namespace {

// The blocks: a B micro-panel (kKc x the tile's columns) and the A micro-panels of an A block
// (kMc x kKc) stream from L2, a B block (kKc x kNc) sits in L3; kKc is the tiles' own (below).
// kMc and kNc are multiples of both register tiles' sides.
constexpr int64_t kMc = 72, kNc = 1024;
// An A micro-panel of 6 lanes is packed with 8-float stores that run 2 floats past it.
constexpr int64_t kSlack = 8;

int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// As GemmF32Avx2 does on leaving: GCC does not clear the upper register halves after
// target("avx2") code, and the caller's SSE code runs slowly until they are.
__attribute__((target("avx"))) void ZeroUpper() { _mm256_zeroupper(); }

// `n` floats of `buf` from a 64-byte boundary: a B micro-panel's rows (16 floats) each fill one
// cache line, so no vector load straddles two.
float* Aligned(std::vector<uint8_t>& buf, int64_t n) {
  return static_cast<float*>(AlignedIn(buf, static_cast<size_t>(n) * sizeof(float), 64));
}

// 8 elements (f16, or bf16 where kBf16) at p as floats.
template <bool kBf16>
[[gnu::always_inline]] inline __attribute__((target("avx2,f16c"))) __m256 Load8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return kBf16 ? lanes::BFloat16ToFloat8(h) : lanes::HalfToFloat8(h);
}

// The first n (< 8) elements at p as floats, zeros after (0 is zero in f16 and bf16).
template <bool kBf16>
[[gnu::always_inline]] inline __attribute__((target("avx2,f16c"))) __m256 LoadFirst(
    const uint16_t* p, int64_t n) {
  alignas(16) uint16_t tmp[8] = {};
  std::memcpy(tmp, p, static_cast<size_t>(n) * sizeof(uint16_t));
  return Load8<kBf16>(tmp);
}

// One micro-panel of W lanes (W = a tile's rows of op(A), or its columns of op(B)) over kc steps of
// the shared dimension: dst[l * W + lane] = x(lane, l) as float, lanes from `lanes` on zero.
// `x` is the panel's first element; `lane_stride` and `step_stride` are the elements between
// lanes and between steps. One of the two is 1: the lanes are contiguous (A transposed, B as
// stored) or each lane's steps are (A as stored, B transposed; read 8 x 8 and transposed).
// `end` is the end of the operand's elements.
template <int W, bool kBf16>
__attribute__((target("avx2,f16c"))) void PackPanel(const uint16_t* x, int64_t lane_stride,
                                                    int64_t step_stride, int64_t lanes, int64_t kc,
                                                    const uint16_t* end, float* dst) {
  static_assert(W == 6 || W % 8 == 0);
  constexpr int kGroups = (W + 7) / 8;
  if (lane_stride == 1) {
    for (int64_t l = 0; l < kc; ++l) {
      const uint16_t* src = x + l * step_stride;
      for (int g = 0; g < kGroups; ++g) {
        const int64_t n = std::min<int64_t>(lanes - 8 * g, 8);
        // A 6-lane read of 8 may run past the panel but not past the operand (`end`).
        const bool whole = n == 8 || (W == 6 && n == 6 && src + 8 * g + 8 <= end);
        const __m256 v = whole   ? Load8<kBf16>(src + 8 * g)
                         : n > 0 ? LoadFirst<kBf16>(src + 8 * g, n)
                                 : _mm256_setzero_ps();
        _mm256_storeu_ps(dst + l * W + 8 * g, v);  // W = 6: 2 floats past, rewritten next
      }
    }
    return;
  }
  for (int64_t l = 0; l < kc; l += 8) {
    const int64_t steps = std::min<int64_t>(kc - l, 8);
    for (int g = 0; g < kGroups; ++g) {
      __m256 r[8];
      for (int t = 0; t < 8; ++t) {
        const int64_t lane = 8 * g + t;
        const uint16_t* src = x + lane * lane_stride + l;
        r[t] = lane >= lanes ? _mm256_setzero_ps()
               : steps == 8  ? Load8<kBf16>(src)
                             : LoadFirst<kBf16>(src, steps);
      }
      lanes::Transpose8(r);
      for (int64_t t = 0; t < steps; ++t) _mm256_storeu_ps(dst + (l + t) * W + 8 * g, r[t]);
    }
  }
}

// One tile's place in C, and what its last pass applies: C = alpha acc + addend, rounded once.
struct Tile {
  const FastGemmArgs* g;
  void* c;
  int64_t i, j;        // the tile's first row and column in C
  int64_t rows, cols;  // how many of its elements C has
};

// n (<= 8) elements of C's type CT (float, Half or BFloat16) at p as floats, zeros after n.
template <typename CT>
[[gnu::always_inline]] inline __attribute__((target("avx2,f16c"))) __m256 LoadAs(const CT* p,
                                                                                 int64_t n) {
  if constexpr (std::is_same_v<CT, float>) {
    if (n == 8) return _mm256_loadu_ps(p);
    alignas(32) float tmp[8] = {};
    std::memcpy(tmp, p, static_cast<size_t>(n) * sizeof(float));
    return _mm256_load_ps(tmp);
  } else {
    constexpr bool kBf16 = std::is_same_v<CT, BFloat16>;
    const auto* h = reinterpret_cast<const uint16_t*>(p);
    return n == 8 ? Load8<kBf16>(h) : LoadFirst<kBf16>(h, n);
  }
}

// Row r of a tile into C (of type CT): lo and hi are its first 16 float sums, for its first
// min(t.cols, 16) columns.
template <typename CT>
[[gnu::always_inline]] inline __attribute__((target("avx2,f16c"))) void StoreRow(const Tile& t,
                                                                                 int64_t r,
                                                                                 __m256 lo,
                                                                                 __m256 hi) {
  const FastGemmArgs& g = *t.g;
  const int64_t i = t.i + r;
  if (g.alpha != 1.0f) {
    const __m256 alpha = _mm256_set1_ps(g.alpha);
    lo = _mm256_mul_ps(lo, alpha);
    hi = _mm256_mul_ps(hi, alpha);
  }
  if (g.addend != nullptr) {
    const auto* add = static_cast<const CT*>(g.addend) + (g.add_rows == 1 ? 0 : i) * g.add_cols;
    if (g.add_cols == 1) {
      const __m256 v = _mm256_set1_ps(_mm256_cvtss_f32(LoadAs(add, 1)));
      lo = _mm256_add_ps(lo, v);
      hi = _mm256_add_ps(hi, v);
    } else {
      lo = _mm256_add_ps(lo, LoadAs(add + t.j, std::min<int64_t>(t.cols, 8)));
      if (t.cols > 8) hi = _mm256_add_ps(hi, LoadAs(add + t.j + 8, t.cols - 8));
    }
  }
  CT* out = static_cast<CT*>(t.c) + i * g.n + t.j;
  alignas(32) CT tmp[16];
  CT* dst = t.cols >= 16 ? out : tmp;
  if constexpr (std::is_same_v<CT, float>) {
    _mm256_storeu_ps(dst, lo);
    _mm256_storeu_ps(dst + 8, hi);
  } else {
    constexpr bool kBf16 = std::is_same_v<CT, BFloat16>;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                     kBf16 ? lanes::FloatToBFloat168(lo) : lanes::FloatToHalf8(lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst) + 1,
                     kBf16 ? lanes::FloatToBFloat168(hi) : lanes::FloatToHalf8(hi));
  }
  if (dst == tmp) std::memcpy(out, tmp, static_cast<size_t>(t.cols) * sizeof(CT));
}

// The AVX2 tiles: 6 x 16 floats, 12 ymm accumulators, two B vectors and one broadcast.
constexpr int64_t kMr256 = 6, kNr256 = 16;

// One row of a tile, one step: lo/hi += a * (b0, b1).
[[gnu::always_inline]] inline __attribute__((target("avx2,fma"))) void FmaRow(float a, __m256 b0,
                                                                              __m256 b1, __m256& lo,
                                                                              __m256& hi) {
  const __m256 av = _mm256_set1_ps(a);
  lo = _mm256_fmadd_ps(av, b0, lo);
  hi = _mm256_fmadd_ps(av, b1, hi);
}

// The kMr256 x kNr256 tile's sums over kc steps: sum over l of a[l * 6 + r] * b[l * 16 + j], in
// float with FMA, in order of l, plus the partial sums of the earlier blocks of k at acc where
// kAccumulate (acc is null only where k is one block). Not the last block of k: the sums go
// back to acc. The last (`last` not null): C's
// elements of the tile, through StoreRow. The twelve accumulators are named, not an array: GCC
// kept an array's elements in registers but also stored them to the stack at every step (3x
// slower).
template <bool kAccumulate, typename CT>
__attribute__((target("avx2,fma,f16c"))) void MicroKernel(int64_t kc, const float* a,
                                                          const float* b, float* acc, int64_t ld,
                                                          const Tile* last) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#pragma GCC unroll 4
  for (int64_t l = 0; l < kc; ++l, a += kMr256, b += kNr256) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    FmaRow(a[0], b0, b1, c00, c01);
    FmaRow(a[1], b0, b1, c10, c11);
    FmaRow(a[2], b0, b1, c20, c21);
    FmaRow(a[3], b0, b1, c30, c31);
    FmaRow(a[4], b0, b1, c40, c41);
    FmaRow(a[5], b0, b1, c50, c51);
  }
  const __m256 rows[kMr256][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                                  {c30, c31}, {c40, c41}, {c50, c51}};
  const int64_t n = last == nullptr ? kMr256 : last->rows;
  for (int64_t r = 0; r < n; ++r) {
    __m256 lo = rows[r][0], hi = rows[r][1];
    if constexpr (kAccumulate) {
      lo = _mm256_add_ps(lo, _mm256_loadu_ps(acc + r * ld));
      hi = _mm256_add_ps(hi, _mm256_loadu_ps(acc + r * ld + 8));
    }
    if (last != nullptr) {
      StoreRow<CT>(*last, r, lo, hi);
    } else {  // acc is not null before the last block
      _mm256_storeu_ps(acc + r * ld, lo);
      _mm256_storeu_ps(acc + r * ld + 8, hi);
    }
  }
}

// The AVX-512 tiles: 8 x 32 floats, 16 zmm accumulators, two B vectors, the A values broadcast
// from memory into the FMAs.
constexpr int64_t kMr512 = 8, kNr512 = 32;

[[gnu::always_inline]] inline __attribute__((target("avx512f"))) void FmaRow512(float a, __m512 b0,
                                                                                __m512 b1,
                                                                                __m512& lo,
                                                                                __m512& hi) {
  const __m512 av = _mm512_set1_ps(a);
  lo = _mm512_fmadd_ps(av, b0, lo);
  hi = _mm512_fmadd_ps(av, b1, hi);
}

// The upper 8 floats of v (AVX-512F alone: _mm512_extractf32x8_ps needs AVX-512DQ).
[[gnu::always_inline]] inline __attribute__((target("avx512f"))) __m256 Upper8(__m512 v) {
  return _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(3, 2, 3, 2)));
}

// Row r of a 32-column tile into C: its halves through StoreRow, 16 columns each.
template <typename CT>
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,f16c"))) void StoreRow32(
    const Tile& t, int64_t r, __m512 lo, __m512 hi) {
  Tile half = t;
  half.cols = std::min<int64_t>(t.cols, 16);
  StoreRow<CT>(half, r, _mm512_castps512_ps256(lo), Upper8(lo));
  if (t.cols > 16) {
    half.j = t.j + 16;
    half.cols = t.cols - 16;
    StoreRow<CT>(half, r, _mm512_castps512_ps256(hi), Upper8(hi));
  }
}

// MicroKernel's AVX-512 twin on the kMr512 x kNr512 tile: the same sums in the same order.
template <bool kAccumulate, typename CT>
__attribute__((target("avx512f,avx2,fma,f16c"))) void MicroKernel512(int64_t kc, const float* a,
                                                                     const float* b, float* acc,
                                                                     int64_t ld, const Tile* last) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00;
  __m512 c70 = c00, c71 = c00;
#pragma GCC unroll 4
  for (int64_t l = 0; l < kc; ++l, a += kMr512, b += kNr512) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
    FmaRow512(a[0], b0, b1, c00, c01);
    FmaRow512(a[1], b0, b1, c10, c11);
    FmaRow512(a[2], b0, b1, c20, c21);
    FmaRow512(a[3], b0, b1, c30, c31);
    FmaRow512(a[4], b0, b1, c40, c41);
    FmaRow512(a[5], b0, b1, c50, c51);
    FmaRow512(a[6], b0, b1, c60, c61);
    FmaRow512(a[7], b0, b1, c70, c71);
  }
  const __m512 rows[kMr512][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                                  {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  const int64_t n = last == nullptr ? kMr512 : last->rows;
  for (int64_t r = 0; r < n; ++r) {
    __m512 lo = rows[r][0], hi = rows[r][1];
    if constexpr (kAccumulate) {
      lo = _mm512_add_ps(lo, _mm512_loadu_ps(acc + r * ld));
      hi = _mm512_add_ps(hi, _mm512_loadu_ps(acc + r * ld + 16));
    }
    if (last != nullptr) {
      StoreRow32<CT>(*last, r, lo, hi);
    } else {
      _mm512_storeu_ps(acc + r * ld, lo);
      _mm512_storeu_ps(acc + r * ld + 16, hi);
    }
  }
}

// The two register tiles as the blocked loops see them, each with its block of k (kKc).
// AVX2: with k up to 1024 (BERT-base's 768 and 1024) a tile's sums finish in registers and go
// straight to C, with no partial sums kept between blocks of k; on the BERT-base shapes (one
// thread, Zen 3) this and BLIS's Zen sizes (kKc 256, kMc 144) measured within 1% of each other.
// AVX-512: a B micro-panel of 256 x 32 floats (32 KiB) stays in L1 (on the BERT-base shapes, one
// thread, Sapphire Rapids: 2-5% faster than 1024 or 512, tools/bench/README.md).
struct Avx2Tiles {
  static constexpr int64_t kMr = kMr256, kNr = kNr256, kKc = 1024;
  template <bool kAccumulate, typename CT>
  static void Kernel(int64_t kc, const float* a, const float* b, float* acc, int64_t ld,
                     const Tile* last) {
    MicroKernel<kAccumulate, CT>(kc, a, b, acc, ld, last);
  }
};
struct Avx512Tiles {
  static constexpr int64_t kMr = kMr512, kNr = kNr512, kKc = 256;
  template <bool kAccumulate, typename CT>
  static void Kernel(int64_t kc, const float* a, const float* b, float* acc, int64_t ld,
                     const Tile* last) {
    MicroKernel512<kAccumulate, CT>(kc, a, b, acc, ld, last);
  }
};
static_assert(kMc % Avx2Tiles::kMr == 0 && kMc % Avx512Tiles::kMr == 0);
static_assert(kNc % Avx2Tiles::kNr == 0 && kNc % Avx512Tiles::kNr == 0);

// One matrix of the product, as in FastGemmArgs: op(A) [m, k], op(B) [k, n], C [m, n], dense.
struct Operands {
  const uint16_t *a, *a_end;
  const uint16_t *b, *b_end;
  void* c;
};

// C[i0:i1, j0:j1] of one matrix, on the calling thread. The blocks of k before the last keep
// their partial sums in `acc` (float, the block's rows x columns; none where k fits one block);
// the last block's tiles write C.
template <typename Tiles, bool kBf16, typename CT>
void Block(const FastGemmArgs& g, const Operands& x, int64_t i0, int64_t i1, int64_t j0,
           int64_t j1) {
  constexpr int64_t kMr = Tiles::kMr, kNr = Tiles::kNr, kKc = Tiles::kKc;
  thread_local std::vector<uint8_t> a_buf, b_buf, acc_buf;
  const int64_t rows = i1 - i0;
  float* a_pack = Aligned(a_buf, kMc * kKc + kSlack);
  float* b_pack = Aligned(b_buf, RoundUp(std::min(j1 - j0, kNc), kNr) * kKc);
  float* acc = nullptr;
  // op(A)(i, l) and op(B)(l, j) as strides of the stored matrices.
  const int64_t a_row = g.trans_a ? 1 : g.k, a_step = g.trans_a ? g.m : 1;
  const int64_t b_col = g.trans_b ? g.k : 1, b_step = g.trans_b ? 1 : g.n;
  for (int64_t jc = j0; jc < j1; jc += kNc) {
    const int64_t nc = std::min(kNc, j1 - jc), ld = RoundUp(nc, kNr);
    if (g.k > kKc) acc = Aligned(acc_buf, RoundUp(rows, kMr) * ld);
    for (int64_t pc = 0; pc < g.k; pc += kKc) {
      const int64_t kc = std::min(kKc, g.k - pc);
      const bool first = pc == 0, last = pc + kc == g.k;
      for (int64_t jr = 0; jr < nc; jr += kNr) {
        PackPanel<kNr, kBf16>(x.b + pc * b_step + (jc + jr) * b_col, b_col, b_step,
                              std::min(kNr, nc - jr), kc, x.b_end, b_pack + jr * kc);
      }
      for (int64_t ic = 0; ic < rows; ic += kMc) {
        const int64_t mc = std::min(kMc, rows - ic);
        for (int64_t ir = 0; ir < mc; ir += kMr) {
          PackPanel<kMr, kBf16>(x.a + (i0 + ic + ir) * a_row + pc * a_step, a_row, a_step,
                                std::min(kMr, mc - ir), kc, x.a_end, a_pack + ir * kc);
        }
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            float* tile = last && first ? nullptr : acc + (ic + ir) * ld + jr;
            const float* ap = a_pack + ir * kc;
            const float* bp = b_pack + jr * kc;
            const Tile t{
                &g, x.c, i0 + ic + ir, jc + jr, std::min(kMr, mc - ir), std::min(kNr, nc - jr)};
            const Tile* out = last ? &t : nullptr;
            first ? Tiles::template Kernel<false, CT>(kc, ap, bp, tile, ld, out)
                  : Tiles::template Kernel<true, CT>(kc, ap, bp, tile, ld, out);
          }
        }
      }
    }
  }
}

template <typename Tiles, bool kBf16, typename CT>
void Run(const FastGemmArgs& g, const void* a, const void* b, void* c, int threads) {
  constexpr int64_t kMr = Tiles::kMr, kNr = Tiles::kNr;
  const size_t c_size = ElemSize(g.c_type);
  auto operands = [&](int64_t i) {
    const auto* ai = static_cast<const uint16_t*>(a) + i * g.stride_a;
    const auto* bi = static_cast<const uint16_t*>(b) + i * g.stride_b;
    return Operands{ai, ai + g.m * g.k, bi, bi + g.k * g.n,
                    static_cast<uint8_t*>(c) + i * g.m * g.n * c_size};
  };
  if (g.batch > 1) {  // whole matrices a chunk
    auto one = [&](int64_t i) { Block<Tiles, kBf16, CT>(g, operands(i), 0, g.m, 0, g.n); };
    auto task = [](void* ctx, int i) { (*static_cast<decltype(one)*>(ctx))(i); };
    if (threads <= 1 || !PoolRun(threads, static_cast<int>(g.batch), task, &one)) {
      for (int64_t i = 0; i < g.batch; ++i) one(i);
    }
    return;
  }
  // One matrix in pieces: column strips where C is wide enough (each packs its own B columns,
  // and all of A), else row strips (each packs its own A rows, and all of B).
  const Operands x = operands(0);
  const int64_t wanted = threads <= 1 ? 1 : int64_t{threads} * ChunksPerThread();
  const bool by_columns = g.n / (4 * kNr) >= wanted || g.n >= g.m;
  const int64_t unit = by_columns ? kNr : kMr, extent = by_columns ? g.n : g.m;
  const int64_t pieces = std::max<int64_t>(1, std::min(wanted, extent / (4 * unit)));
  const int64_t width = RoundUp((extent + pieces - 1) / pieces, unit);
  auto piece = [&](int64_t p) {
    const int64_t lo = p * width, hi = std::min(extent, lo + width);
    if (lo >= hi) return;
    by_columns ? Block<Tiles, kBf16, CT>(g, x, 0, g.m, lo, hi)
               : Block<Tiles, kBf16, CT>(g, x, lo, hi, 0, g.n);
  };
  auto task = [](void* ctx, int p) { (*static_cast<decltype(piece)*>(ctx))(p); };
  if (pieces <= 1 || !PoolRun(threads, static_cast<int>(pieces), task, &piece)) {
    for (int64_t p = 0; p < pieces; ++p) piece(p);
  }
}

template <typename Tiles>
void RunTiles(const FastGemmArgs& g, const void* a, const void* b, void* c, int threads) {
  const bool bf16 = g.ab_type == DType::kBF16;
  if (g.c_type == DType::kF32) {
    bf16 ? Run<Tiles, true, float>(g, a, b, c, threads)
         : Run<Tiles, false, float>(g, a, b, c, threads);
  } else if (bf16) {
    Run<Tiles, true, BFloat16>(g, a, b, c, threads);
  } else {
    Run<Tiles, false, Half>(g, a, b, c, threads);
  }
}

}  // namespace

bool CpuHasPackedGemm() { return lanes::CpuHasAvx2F16c() && CpuHasAvx2Fma(); }

bool CpuHasPackedTiles(PackedTiles tiles) {
  return CpuHasPackedGemm() && (tiles == PackedTiles::kAvx2 || CpuHasAvx512());
}

PackedTiles BestPackedTiles() {
  return CpuHasPackedTiles(PackedTiles::kAvx512) ? PackedTiles::kAvx512 : PackedTiles::kAvx2;
}

const char* PackedTilesName(PackedTiles tiles) {
  return tiles == PackedTiles::kAvx512 ? "AVX-512 packed float tiles" : "AVX2 packed float tiles";
}

void PackedGemm(const FastGemmArgs& g, const void* a, const void* b, void* c, int threads,
                PackedTiles tiles) {
  tiles == PackedTiles::kAvx512 ? RunTiles<Avx512Tiles>(g, a, b, c, threads)
                                : RunTiles<Avx2Tiles>(g, a, b, c, threads);
  ZeroUpper();
}

}  // namespace a8::cpu::internal

// The fast path of the CPU GEMMs: oneDNN matmul primitives (Debian's libdnnl, 2.6).
//
// oneDNN picks its kernel at run time: AMX tiles for bf16 on CPUs with AMX (brg:avx512_core_amx),
// AVX-512-BF16 / AVX-512-FP16 dot products, AVX-512 or AVX2 FMA for f32. Operands are read in
// their own dtype (no widened copy in memory), products accumulate in f32 and the output is
// rounded once, as tensor cores do. Where oneDNN has only its reference implementation for f16
// or bf16 on this CPU, or a bf16 kernel slower than its f32 one (low_precision_gemm.h's
// OneDnnBf16Pays), FastGemm runs our own packed GEMM instead (gemm_packed.h: AVX2 or AVX-512
// register tiles, the operands become floats as they are packed, f32 accumulation, one
// rounding); on a CPU without AVX2 it declines and the caller runs the reference kernel.
//
// Primitives are created once per (shape, dtypes, transposes, scale, addend shape) and kept for the
// life of the process. Where the kernel wants B in a blocked layout (AMX: VNNI blocks), a B that
// lies in stable memory (a weight, stable_regions.h) is repacked only after a write to it; any
// other B is repacked before each product. oneDNN runs single-threaded on whichever thread calls it
// (its OpenMP thread count is set to 1 on every calling thread); the work is split over the
// kernels' own pool (parallel.h), so the thread count follows MaxThreads() and no second pool
// competes for the cores.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu::internal {

// C[b] = alpha op(A[b]) op(B[b]) (+ addend) for b in [0, batch), all row major and dense:
// A is [m, k] ([k, m] with trans_a), B is [k, n] ([n, k] with trans_b), C is [m, n]. A and B have
// `ab_type` (f32, f16 or bf16), C and the addend `c_type` (ab_type, or f32). A batch stride of 0
// broadcasts that operand over the batch. The addend (2-D only, batch 1) is [add_rows, add_cols],
// each 1 or the full size, broadcast to [m, n] and added after the scale.
struct FastGemmArgs {
  DType ab_type = DType::kF32, c_type = DType::kF32;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t stride_a = 0, stride_b = 0;  // elements between batches; 0 broadcasts
  float alpha = 1.0f;
  const void* addend = nullptr;
  int64_t add_rows = 1, add_cols = 1;
};

// f32 products of fewer multiply-adds are declined: the reference's AVX-512 register tiles
// (blas.h) beat oneDNN's per-call cost there (the example MLP's step, batch 32, one thread: 0.15 ms
// reference, 0.17 ms through oneDNN).
// A batch of f32 products each under it is declined too where the CPU has the tiles (FastGemm).
inline constexpr int64_t kMinFastF32Work = int64_t{1} << 18;

// Whether FastGemm declines an f32 product of these sizes for the reference (kMinFastF32Work
// and the batches of small products below it); the f16/bf16 routes off oneDNN decline the same.
bool F32Declines(const FastGemmArgs& g);

// Whether the fast path may run on this thread now: the fast mode is on (kernel_mode.h).
bool FastGemmEnabled();

// Runs the product through oneDNN and returns true, or returns false, having written nothing, when
// oneDNN has no fast implementation for it on this CPU (the caller then runs the reference).
// Errors: sizes or dtypes outside the contract above.
StatusOr<bool> FastGemm(const FastGemmArgs& g, const void* a, const void* b, void* c);

// How many products this process has run on the fast path: oneDNN primitive executions and
// PackedGemm products (for tests: proof that a product took the fast path rather than being
// declined).
int64_t FastGemmExecutions();

// Whether oneDNN has a fast matmul for `t` (f32, f16 or bf16) on this CPU. Where it has none for
// f16 or bf16, FastGemm runs them through PackedGemm (gemm_packed.h, low_precision_gemm.h); it
// declines small products as it declines f32's.
bool OneDnnMultiplies(DType t);

// C = A A for one n x n matrix A of dtype t (f32 or bf16, where OneDnnMultiplies) through
// oneDNN's own kernel, not counted in FastGemmExecutions or FastGemmPacks: OneDnnBf16Pays
// (low_precision_gemm.h) times it.
void OneDnnSquareProduct(DType t, int64_t n, const void* a, void* c);

// How many times this process has packed a B into the kernel's layout (for tests: a B in stable
// memory, stable_regions.h, is packed once per write of it, any other B once per product).
int64_t FastGemmPacks();

// What the fast path runs, e.g. "oneDNN 2.6.3 (bf16: brg:avx512_core_amx_bf16, f32:
// brg:avx512_core, f16: brg:avx512_core_fp16)", probed once on a small product of each dtype; a
// dtype reads PackedTilesName where PackedGemm runs it ("AVX-512 packed float tiles", then
// "(brg:avx512_core_bf16 measured slower than f32)" where OneDnnBf16Pays said no: its
// Bf16OffReason), "reference" where FastGemm declines it.
std::string FastGemmDescription();

}  // namespace a8::cpu::internal

// f16 and bf16 matrix products in float registers, for CPUs where oneDNN has no fast kernel for
// them (no AVX-512-FP16 for f16, no AVX-512-BF16 or AMX for bf16), or a bf16 one slower than its
// f32 one (OneDnnBf16Pays, low_precision_gemm.h).
//
// A blocked GEMM in the BLIS order (Van Zee and van de Geijn, "BLIS: A Framework for Rapidly
// Instantiating BLAS Functionality", 2015): blocks of B (kKc x up to kNc) and of A (kMc x kKc)
// are packed into float micro-panels as wide as the register tile, which multiplies them with
// FMA: 6 x 16 floats in AVX2 registers, 8 x 32 in AVX-512 ones. The f16/bf16 operands become
// floats while they are packed (F16C's vcvtph2ps; bf16 is a shift), so no widened copy of an
// operand is ever made: the packed blocks are the ones every GEMM makes, sized for L2 (the
// micro-panels) and L3 (a B block). Products accumulate in float; the last block of k applies
// alpha and the addend to each register tile and rounds it once into C's dtype, as tensor cores
// do and as oneDNN's kernels do where they exist. On AVX2 CPUs it replaced widening both operands
// into whole float copies around oneDNN's f32 kernel (f16), and the reference kernel (bf16). Its
// tiles run at 0.93-0.99x oneDNN's f32 JIT kernel on BERT-base's shapes (tools/bench/README.md).
#pragma once

#include <cstdint>

#include "kernels/cpu/onednn_gemm.h"

namespace a8::cpu::internal {

// The register tiles: 6 x 16 floats in ymm registers, or 8 x 32 in zmm ones.
enum class PackedTiles { kAvx2, kAvx512 };

// Whether the CPU has what PackedGemm needs: AVX2, FMA and F16C (checked once), and AVX-512 for
// the AVX-512 tiles.
bool CpuHasPackedGemm();
bool CpuHasPackedTiles(PackedTiles tiles);

// The widest tiles this CPU has (call where CpuHasPackedGemm()), and how FastGemmDescription
// names them ("AVX-512 packed float tiles").
PackedTiles BestPackedTiles();
const char* PackedTilesName(PackedTiles tiles);

// FastGemmArgs' product (onednn_gemm.h) for A and B of f16 or bf16, C of theirs or f32, split
// over up to `threads` threads of the pool. Call only where CpuHasPackedTiles(tiles) and after
// FastGemm's checks of the arguments.
void PackedGemm(const FastGemmArgs& g, const void* a, const void* b, void* c, int threads,
                PackedTiles tiles);

}  // namespace a8::cpu::internal

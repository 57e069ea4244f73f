// Where an f16 or bf16 product runs in the fast mode (onednn_gemm.h's FastGemm asks): oneDNN's
// kernel for the dtype where it has one that pays (OneDnnBf16Pays for bf16), else PackedGemm's
// register tiles (gemm_packed.h), else the reference. Decided once per dtype, from the CPU: the
// one place both FastGemm and FastGemmDescription read.
#pragma once

#include "kernels/cpu/onednn_gemm.h"

namespace a8::cpu::internal {

enum class GemmRoute {
  kOneDnn,       // oneDNN's own kernel for the dtype (f32 always, where it has one)
  kPackedTiles,  // PackedGemm (gemm_packed.h) with the CPU's widest tiles: AVX2 or AVX-512
  kReference,    // declined: the caller runs the reference kernel
};

GemmRoute RouteOf(DType t);

// The route's name in FastGemmDescription (kOneDnn: oneDNN's implementation name, not this).
const char* RouteName(GemmRoute route);

// Runs `g` on `route` (not kOneDnn) with up to `threads` threads; false where it declines: the
// reference route, and products FastGemm would decline in f32 (F32Declines).
bool RunOffOneDnn(GemmRoute route, const FastGemmArgs& g, const void* a, const void* b, void* c,
                  int threads);

}  // namespace a8::cpu::internal

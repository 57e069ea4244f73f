// Where an f16 or bf16 product runs in the fast mode when oneDNN has no kernel for its dtype on
// this CPU (onednn_gemm.h's FastGemm asks), and running it there. Decided once per dtype, from
// the CPU: the one place both FastGemm and FastGemmDescription read.
#pragma once

#include "base/status.h"
#include "kernels/cpu/onednn_gemm.h"

namespace a8::cpu::internal {

enum class GemmRoute {
  kOneDnn,       // oneDNN's own kernel for the dtype (f32 always, where it has one)
  kPackedTiles,  // PackedGemm (gemm_packed.h): CPUs with AVX2 but no AVX-512
  kF32Copies,    // AVX-512 CPUs where oneDNN lacks the dtype or its bf16 kernel loses to f32
                 // (OneDnnBf16Pays): oneDNN's f32 kernel on float copies
  kReference,    // declined: the caller runs the reference kernel
};

GemmRoute RouteOf(DType t);

// The route's name in FastGemmDescription (kOneDnn: oneDNN's implementation name, not this).
const char* RouteName(GemmRoute route);

// Runs `g` on `route` (not kOneDnn) with up to `threads` threads; false where it declines: the
// reference route, and products FastGemm would decline in f32 (F32Declines).
StatusOr<bool> RunOffOneDnn(GemmRoute route, const FastGemmArgs& g, const void* a, const void* b,
                            void* c, int threads);

}  // namespace a8::cpu::internal

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

// Whether oneDNN's bf16 matmul beats its f32 one on this CPU, timed once (a 256^3 product, the
// best of 5 runs of each, alternating; bf16 must take under 0.8x f32's time, so that a CPU where
// the two are close does not flip between runs), or as the environment says:
// A8_CPU_BF16_ONEDNN=1 (oneDNN's bf16 kernels) or 0 (not). AMX multiplies bf16 several times as
// fast as f32, and AVX-512-BF16's vdpbf16ps does twice vfmadd231ps's multiply-adds per
// instruction; but where it issues at a quarter of vfmadd231ps's rate (Sapphire Rapids VMs
// without AMX: tools/bench/README.md) oneDNN's bf16 kernel is half as fast as its f32 one. False
// there, and where oneDNN has no bf16 kernel: bf16 products then run PackedGemm's float tiles at
// f32's rate, and bf16 convolutions oneDNN's f32 primitive (onednn_conv.h).
bool OneDnnBf16Pays();

// Why oneDNN's bf16 kernel is left out where it has one and OneDnnBf16Pays is false, for
// FastGemmDescription: "measured slower than f32", or "left out: A8_CPU_BF16_ONEDNN=0".
const char* Bf16OffReason();

// The route's name in FastGemmDescription (kOneDnn: oneDNN's implementation name, not this).
const char* RouteName(GemmRoute route);

// Runs `g` on `route` (not kOneDnn) with up to `threads` threads; false where it declines: the
// reference route, and products FastGemm would decline in f32 (F32Declines).
bool RunOffOneDnn(GemmRoute route, const FastGemmArgs& g, const void* a, const void* b, void* c,
                  int threads);

}  // namespace a8::cpu::internal

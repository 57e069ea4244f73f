#include "kernels/cpu/low_precision_gemm.h"

#include "kernels/cpu/gemm_packed.h"

namespace a8::cpu::internal {

// Every CPU with AVX-512 has AVX2, FMA and F16C, so PackedGemm runs wherever oneDNN's kernel is
// missing or loses. Its AVX-512 tiles replaced, on AVX-512 CPUs, oneDNN's f32 kernel on whole
// float copies of the operands (f16), and the reference (bf16 where oneDNN has no bf16 kernel):
// 4-10% faster than the copies on BERT-base's products (tools/bench/README.md).
GemmRoute RouteOf(DType t) {
  if (OneDnnMultiplies(t) && (t != DType::kBF16 || OneDnnBf16Pays())) return GemmRoute::kOneDnn;
  if (t == DType::kF32 || !CpuHasPackedGemm()) return GemmRoute::kReference;
  return GemmRoute::kPackedTiles;
}

const char* RouteName(GemmRoute route) {
  switch (route) {
    case GemmRoute::kOneDnn:
      return "oneDNN";
    case GemmRoute::kPackedTiles:
      return PackedTilesName(BestPackedTiles());
    case GemmRoute::kReference:
      break;
  }
  return "reference";
}

bool RunOffOneDnn(GemmRoute route, const FastGemmArgs& g, const void* a, const void* b, void* c,
                  int threads) {
  // Products too small for packing to pay stay with the reference, as f32's do.
  if (route != GemmRoute::kPackedTiles || F32Declines(g)) return false;
  PackedGemm(g, a, b, c, threads, BestPackedTiles());
  return true;
}

}  // namespace a8::cpu::internal

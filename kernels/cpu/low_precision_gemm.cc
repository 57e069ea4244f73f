#include "kernels/cpu/low_precision_gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/gemm_packed.h"

namespace a8::cpu::internal {
namespace {

// A8_CPU_BF16_ONEDNN's value where it is 0 or 1, else null (unset or empty; a word on stderr
// where it is set to anything else).
const char* Bf16Override() {
  static const char* value = [] {
    const char* env = std::getenv("A8_CPU_BF16_ONEDNN");
    if (env == nullptr || env[0] == '\0') return static_cast<const char*>(nullptr);
    if ((env[0] == '0' || env[0] == '1') && env[1] == '\0') return env;
    std::fprintf(stderr, "a800c: A8_CPU_BF16_ONEDNN must be 0 or 1, got '%s'; timing instead\n",
                 env);
    return static_cast<const char*>(nullptr);
  }();
  return value;
}

}  // namespace

bool OneDnnBf16Pays() {
  static const bool pays = [] {
    if (!OneDnnMultiplies(DType::kBF16) || !OneDnnMultiplies(DType::kF32)) return false;
    if (const char* env = Bf16Override()) return env[0] == '1';
    constexpr int64_t kN = 256;
    // Written operands: oneDNN on never-written buffers reads the kernel's zero page, which is
    // always in L1 (tools/bench/README.md).
    std::vector<float> a32(kN * kN), c32(kN * kN);
    for (size_t i = 0; i < a32.size(); ++i) a32[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
    std::vector<BFloat16> a16(a32.size()), c16(a32.size());
    for (size_t i = 0; i < a32.size(); ++i) a16[i] = BFloat16{FloatToBFloat16Bits(a32[i])};
    auto seconds = [](DType t, const void* a, void* c) {
      const auto start = std::chrono::steady_clock::now();
      OneDnnSquareProduct(t, kN, a, c);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    double best_bf16 = 1e30, best_f32 = 1e30;
    for (int r = 0; r < 6; ++r) {  // the first of each warms up
      best_f32 = std::min(best_f32, seconds(DType::kF32, a32.data(), c32.data()));
      best_bf16 = std::min(best_bf16, seconds(DType::kBF16, a16.data(), c16.data()));
    }
    return best_bf16 < 0.8 * best_f32;  // AMX measured about 0.15x, this VM's vdpbf16ps 1.8x
  }();
  return pays;
}

const char* Bf16OffReason() {
  return Bf16Override() != nullptr ? "left out: A8_CPU_BF16_ONEDNN=0" : "measured slower than f32";
}

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

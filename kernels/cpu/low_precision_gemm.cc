#include "kernels/cpu/low_precision_gemm.h"

#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/gemm_packed.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu::internal {
namespace {

// `n` f16 or bf16 (`dtype`) elements at `x` into `*out` as floats, converted over the pool in
// vector registers.
const float* WidenInto(DType dtype, const void* x, int64_t n, std::vector<float>* out) {
  if (static_cast<int64_t>(out->size()) < n) out->resize(static_cast<size_t>(n));
  float* dst = out->data();
  const size_t elem = ElemSize(dtype);
  ParallelFor(n, 1, [&](int64_t b, int64_t e) {
    HalfTypeToF32(dtype, static_cast<const uint8_t*>(x) + b * elem, dst + b, e - b);
  });
  return dst;
}

// An f16 or bf16 product on an AVX-512 CPU where oneDNN has no fast kernel for the dtype, or a
// bf16 one slower than its f32 one (OneDnnBf16Pays): the f32 fast path on float copies of the
// operands (f16 and bf16 are exact in float: the same f32-accumulated product), the output
// rounded once. The conversions are O(mk + kn) against the product's O(mnk) and run in vector
// registers (fast_convert.h); oneDNN's AVX-512 f32 kernel is about twice PackedGemm's AVX2
// tiles, which run where the CPU has no AVX-512.
StatusOr<bool> ViaF32(const FastGemmArgs& g, const void* a, const void* b, void* c) {
  thread_local std::vector<float> a32, b32, c32, add32;
  const int64_t a_n = (g.stride_a == 0 ? 0 : (g.batch - 1) * g.stride_a) + g.m * g.k;
  const int64_t b_n = (g.stride_b == 0 ? 0 : (g.batch - 1) * g.stride_b) + g.k * g.n;
  FastGemmArgs g32 = g;
  g32.ab_type = g32.c_type = DType::kF32;
  const float* pa = WidenInto(g.ab_type, a, a_n, &a32);
  const float* pb = WidenInto(g.ab_type, b, b_n, &b32);
  const bool narrow = g.c_type != DType::kF32;
  if (g.addend != nullptr && narrow) {
    g32.addend = WidenInto(g.c_type, g.addend, g.add_rows * g.add_cols, &add32);
  }
  const int64_t c_n = g.batch * g.m * g.n;
  float* pc = static_cast<float*>(c);
  if (narrow) {
    if (static_cast<int64_t>(c32.size()) < c_n) c32.resize(static_cast<size_t>(c_n));
    pc = c32.data();
  }
  A8_ASSIGN_OR_RETURN(bool ran, FastGemm(g32, pa, pb, pc));
  if (ran && narrow) NarrowFromF32(g.c_type, pc, c_n, c);
  return ran;
}

}  // namespace

GemmRoute RouteOf(DType t) {
  if (OneDnnMultiplies(t) && (t != DType::kBF16 || OneDnnBf16Pays())) return GemmRoute::kOneDnn;
  if (t == DType::kF32) return GemmRoute::kReference;
  // oneDNN's AVX-512 f32 kernel is about twice PackedGemm's AVX2 tiles.
  if (CpuHasAvx512()) return GemmRoute::kF32Copies;
  return CpuHasPackedGemm() ? GemmRoute::kPackedTiles : GemmRoute::kReference;
}

const char* RouteName(GemmRoute route) {
  switch (route) {
    case GemmRoute::kOneDnn:
      return "oneDNN";
    case GemmRoute::kPackedTiles:
      return kPackedGemmName;
    case GemmRoute::kF32Copies:
      return "f32 kernel on converted copies";
    case GemmRoute::kReference:
      break;
  }
  return "reference";
}

StatusOr<bool> RunOffOneDnn(GemmRoute route, const FastGemmArgs& g, const void* a, const void* b,
                            void* c, int threads) {
  // Products too small for packing or copies to pay stay with the reference, as f32's do.
  if (F32Declines(g)) return false;
  switch (route) {
    case GemmRoute::kPackedTiles:
      PackedGemm(g, a, b, c, threads);
      return true;
    case GemmRoute::kF32Copies:
      return ViaF32(g, a, b, c);
    case GemmRoute::kOneDnn:
    case GemmRoute::kReference:
      break;
  }
  return false;
}

}  // namespace a8::cpu::internal

#include "kernels/cpu/fast_convert.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "kernels/cpu/fast_convert_isa.h"
#include "kernels/cpu/fast_convert_lanes.h"

// GCC 12's own intrinsics (avx512fintrin.h) build their "undefined" vectors as `__m512 __Y = __Y`,
// which -Wmaybe-uninitialized reports wherever they are inlined: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/common/float16.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {

bool lanes::CpuHasAvx2F16c() {
  static const bool has = [] {
    __builtin_cpu_init();
    // F16C is CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports does not know "f16c").
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
    return __builtin_cpu_supports("avx2") && f16c;
  }();
  return has;
}

namespace {

enum class ConvertIsa { kScalar, kF16c, kAvx512 };

bool HasAvx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

ConvertIsa DetectIsa() {
  if (HasAvx512f()) return ConvertIsa::kAvx512;
  if (lanes::CpuHasAvx2F16c()) return ConvertIsa::kF16c;
  return ConvertIsa::kScalar;
}

// SetFastConvertIsaForTesting's choice (-1: none, the detected level).
std::atomic<int> isa_override{-1};

// Read once per conversion call (the calls are short runs: it showed at 1.5% of an fp16 step).
inline ConvertIsa Isa() {
  static const ConvertIsa detected = DetectIsa();
  const int o = isa_override.load(std::memory_order_relaxed);
  return o >= 0 ? static_cast<ConvertIsa>(o) : detected;
}

const char* IsaName(ConvertIsa isa) {
  switch (isa) {
    case ConvertIsa::kAvx512:
      return "avx512f";
    case ConvertIsa::kF16c:
      return "f16c+avx2";
    default:
      return "scalar";
  }
}

// The scalar bodies (float16.h), for CPUs without the vector instructions and for the tails.
void HalfToFloatScalar(const Half* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = HalfBitsToFloat(x[i].bits);
}
void FloatToHalfScalar(const float* x, Half* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i].bits = FloatToHalfBits(x[i]);
}
void BFloat16ToFloatScalar(const BFloat16* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = BFloat16BitsToFloat(x[i].bits);
}
void FloatToBFloat16Scalar(const float* x, BFloat16* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i].bits = FloatToBFloat16Bits(x[i]);
}

__attribute__((target("avx512f"))) int64_t HalfToFloatAvx512(const Half* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(h));
  }
  return i;
}
__attribute__((target("avx512f"))) int64_t FloatToHalfAvx512(const float* x, Half* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), h);
  }
  return i;
}
__attribute__((target("avx512f"))) int64_t BFloat16ToFloatAvx512(const BFloat16* x, float* y,
                                                                 int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    _mm512_storeu_si512(y + i, w);
  }
  return i;
}
// FloatToBFloat16Bits in 16 lanes: add 0x7fff plus the kept part's lowest bit, keep the top half;
// NaN keeps its top half with the quiet bit set.
__attribute__((target("avx512f"))) int64_t FloatToBFloat16Avx512(const float* x, BFloat16* y,
                                                                 int64_t n) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i v = _mm512_loadu_si512(x + i);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(v, 16), one);
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(v, _mm512_add_epi32(bias, lsb)), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(v, abs_mask), inf);
    const __m512i nan_bits = _mm512_or_si512(_mm512_srli_epi32(v, 16), quiet);
    const __m512i r = _mm512_mask_blend_epi32(nan, rounded, nan_bits);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtepi32_epi16(r));
  }
  return i;
}

// The F16C+AVX2 level, 8 lanes at a time (fast_convert_lanes.h; bf16 needs only the AVX2 part).
template <typename From, typename To>
__attribute__((target("avx2,f16c"))) int64_t ConvertAvx2(const From* x, To* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if constexpr (std::is_same_v<To, float>) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
      if constexpr (std::is_same_v<From, Half>) {
        _mm256_storeu_ps(y + i, lanes::HalfToFloat8(h));
      } else {
        _mm256_storeu_ps(y + i, lanes::BFloat16ToFloat8(h));
      }
    } else {
      const __m256 v = _mm256_loadu_ps(x + i);
      auto* out = reinterpret_cast<__m128i*>(y + i);
      if constexpr (std::is_same_v<To, Half>) {
        _mm_storeu_si128(out, lanes::FloatToHalf8(v));
      } else {
        _mm_storeu_si128(out, lanes::FloatToBFloat168(v));
      }
    }
  }
  return i;
}

// One conversion call on the level Isa() picks: the vector body converts what it can (returning
// how many elements it did), the scalar body the rest. The AVX-512 and scalar bodies are template
// arguments, so each call is direct.
template <auto kAvx512, auto kScalar, typename From, typename To>
[[gnu::always_inline]] inline void ConvertOnIsa(const From* x, To* y, int64_t n) {
  int64_t done = 0;
  const ConvertIsa isa = Isa();
  if (isa == ConvertIsa::kAvx512) done = kAvx512(x, y, n);
  if (isa == ConvertIsa::kF16c) done = ConvertAvx2(x, y, n);
  kScalar(x + done, y + done, n - done);
}

}  // namespace

const char* FastConvertIsa() { return IsaName(Isa()); }

std::vector<std::string> FastConvertIsas() {
  std::vector<std::string> isas;
  if (HasAvx512f()) isas.push_back(IsaName(ConvertIsa::kAvx512));
  if (lanes::CpuHasAvx2F16c()) isas.push_back(IsaName(ConvertIsa::kF16c));
  isas.push_back(IsaName(ConvertIsa::kScalar));
  return isas;
}

bool SetFastConvertIsaForTesting(const std::string& isa) {
  if (isa.empty()) {
    isa_override.store(-1, std::memory_order_relaxed);
    return true;
  }
  const std::vector<std::string> usable = FastConvertIsas();
  if (std::find(usable.begin(), usable.end(), isa) == usable.end()) return false;
  for (ConvertIsa level : {ConvertIsa::kAvx512, ConvertIsa::kF16c, ConvertIsa::kScalar}) {
    if (isa == IsaName(level))
      isa_override.store(static_cast<int>(level), std::memory_order_relaxed);
  }
  return true;
}

void HalfToFloat(const Half* x, float* y, int64_t n) {
  ConvertOnIsa<HalfToFloatAvx512, HalfToFloatScalar>(x, y, n);
}

void FloatToHalf(const float* x, Half* y, int64_t n) {
  ConvertOnIsa<FloatToHalfAvx512, FloatToHalfScalar>(x, y, n);
}

void BFloat16ToFloat(const BFloat16* x, float* y, int64_t n) {
  ConvertOnIsa<BFloat16ToFloatAvx512, BFloat16ToFloatScalar>(x, y, n);
}

void FloatToBFloat16(const float* x, BFloat16* y, int64_t n) {
  ConvertOnIsa<FloatToBFloat16Avx512, FloatToBFloat16Scalar>(x, y, n);
}

void HalfTypeToF32(DType dtype, const void* x, float* y, int64_t n) {
  if (dtype == DType::kF16) {
    HalfToFloat(static_cast<const Half*>(x), y, n);
  } else {
    BFloat16ToFloat(static_cast<const BFloat16*>(x), y, n);
  }
}

std::vector<float> WidenToF32(DType dtype, const void* x, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  ParallelFor(n, 1, [&](int64_t b, int64_t e) {
    HalfTypeToF32(dtype, static_cast<const uint16_t*>(x) + b, out.data() + b, e - b);
  });
  return out;
}

void NarrowFromF32(DType dtype, const float* x, int64_t n, void* y) {
  ParallelFor(n, 1, [&](int64_t b, int64_t e) {
    if (dtype == DType::kF16) {
      FloatToHalf(x + b, static_cast<Half*>(y) + b, e - b);
    } else {
      FloatToBFloat16(x + b, static_cast<BFloat16*>(y) + b, e - b);
    }
  });
}

}  // namespace a8::cpu

// Unary math, Clip, Cast and Dropout. Binary ops and Where are in binary.cc.
#include "kernels/cpu/elementwise.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/common/philox.h"
#include "kernels/cpu/cast_elem.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

// The polynomial c[0] x^(N-1) + c[1] x^(N-2) + ... + c[N-1] in float by Horner's rule (p = p * x
// + c[i]), the form of every polynomial below. The loop unrolls, so vectorised callers stay so.
template <size_t N>
inline float Horner(float x, const float (&c)[N]) {
  float p = c[0];
  for (size_t i = 1; i < N; ++i) p = p * x + c[i];
  return p;
}

// 2^n e^r for an integral n and |r| <= ln2 / 2: a degree-7 Taylor polynomial of e^r scaled by
// 2^n through the exponent bits (the shared tail of ExpNonPositive and ExpOfSum).
inline float ExpReduced(float n, float r) {
  static constexpr float kTaylor[] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24,
                                      1.0f / 6,    0.5f,       1.0f,       1.0f};
  const float p = Horner(r, kTaylor);
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

// exp(q) for q in [-87, 0] (less is taken as -87, NaN too; callers handle NaN): 2^n e^r with
// |r| <= ln2 / 2 and a degree-7 Taylor polynomial, error a few ulp. Branch-free, so loops of it
// vectorise.
inline float ExpNonPositive(float q) {
  q = q >= -87.0f ? q : -87.0f;  // no fmax/floor: without SSE4.1 they are library calls
  // Round to nearest through the 1.5 * 2^23 shifter (exact for |v| < 2^22).
  const float n = (q * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (q - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
  return ExpReduced(n, r);
}

// erf in float, branch-free (glibc's erff is a scalar call with branches, and dominated BERT's
// GELU): x P(x^2) for |x| < 0.921875, 1 - exp(Q(|x|)) up to 3.925 (Q fits log erfc), and +-1
// beyond, where float erf is 1. Polynomials least-squares fitted against double erf; max
// relative error about 2e-7. NaN stays NaN.
inline float FastErf(float x) {
  const float a = std::fabs(x);
  const float z = a * a;
  static constexpr float kSmall[] = {
      8.504967263434082e-05f, -0.000817528401967138f, 0.005203970242291689f, -0.026860613375902176f,
      0.11283718049526215f,   -0.37612634897232056f,  1.128379225730896f};
  static constexpr float kLarge[] = {
      -5.7023200383810035e-08f, 1.3503728268915438e-06f, -1.2424652595655061e-05f,
      3.8640559068880975e-05f,  0.00027032371144741774f, -0.003918679431080818f,
      0.0249559935182333f,      -0.10837502032518387f,   -0.6330949664115906f,
      -1.129687786102295f,      0.0002170453517464921f};
  const float small = x * Horner(z, kSmall);
  const float t = a < 0.921875f ? 0.921875f : (a > 3.925f ? 3.925f : a);
  const float q = Horner(t, kLarge);
  const float large = std::copysign(a > 3.925f ? 1.0f : 1.0f - ExpNonPositive(q), x);
  const float r = a < 0.921875f ? small : large;
  return x != x ? x : r;
}

// y[i] = FastErf(x[i]); x == y is allowed. Compiled twice, for AVX2 (8 floats a vector) and for
// baseline x86-64, chosen at load time; no FMA, so both give the same bits.
__attribute__((target_clones("avx2", "default"))) void ErfF32(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = FastErf(x[i]);
}

// exp(big + small) for big + small in [-87, 0], where `big` is exact and large and `small` is
// the correction that a rounded sum would lose: the Cody-Waite reduction subtracts n ln2 from
// `big` alone (exactly), then adds `small`. Same polynomial as ExpNonPositive.
inline float ExpOfSum(float big, float small) {
  const float s = big + small;
  const float n = (s * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = ((big - n * 0.693145751953125f) + small) - n * 1.42860682030941723212e-6f;
  return ExpReduced(n, r);
}

// The part FastGelu and FastGeluGrad share: |x| clamped at 12.5 (`tiny` beyond it), t = 1 / (1 +
// |x| / (2 sqrt 2)), the erfcc polynomial P(t), and |x| split into xh (12 bits: xh^2 is exact)
// and xl = |x| - xh.
struct GeluErfcTerms {
  bool tiny;
  float ax, t, p, xh, xl;
};

inline GeluErfcTerms ErfcTermsOf(float x) {
  const float ax_in = std::fabs(x);
  const bool tiny = !(ax_in < 12.5f);
  const float ax = tiny ? 12.5f : ax_in;
  const float t = 1.0f / (1.0f + 0.5f * (ax * 0.70710678118654752f));
  static constexpr float kErfcc[] = {0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f,
                                     0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                                     1.00002368f, -1.26551223f};
  const float p = Horner(t, kErfcc);
  uint32_t bits;
  std::memcpy(&bits, &ax, sizeof(bits));
  bits &= 0xfffff000u;
  float xh;
  std::memcpy(&xh, &bits, sizeof(xh));
  const float xl = ax - xh;
  return {tiny, ax, t, p, xh, xl};
}

// Gelu 0.5 x erfc(-x / sqrt 2) in float, branch-free (glibc's erfcf is a scalar call and was a
// third of BERT's forward step). With h = 0.5 |x| erfc(|x| / sqrt 2), Gelu is x - h for x > 0
// and -h otherwise: no cancellation either side. erfc(a) = t exp(-a^2 + P(t)), t = 1 / (1 +
// a / 2) (Numerical Recipes' erfcc, relative error 1.2e-7 for every a >= 0); a^2 = x^2 / 2 is
// split as xh^2 (exact: xh keeps 12 bits) plus a small part, so the exponent keeps full precision
// in the tail. Max relative error about 5e-7 over all floats; beyond |x| = 12.5 h underflows
// and is taken as 0. NaN stays NaN.
inline float FastGelu(float x) {
  const auto [tiny_h, ax, t, p, xh, xl] = ErfcTermsOf(x);
  const float h = 0.5f * ax * (t * ExpOfSum(-0.5f * (xh * xh), p - 0.5f * (xl * (ax + xh))));
  const float hx = tiny_h ? 0.0f : h;
  const float g = x > 0.0f ? x - hx : -hx;
  return x != x ? x : g;
}

// Gelu's derivative times g: g (Phi(x) + x phi(x)) with Phi(x) = 0.5 erfc(-x / sqrt 2) and
// phi(x) = exp(-x^2 / 2) / sqrt(2 pi), branch-free (the shared body calls glibc's erfcf and expf
// per element: 11% of the encoder's bf16 step). erfc(|x| / sqrt 2) as in FastGelu (t exp(-a^2 +
// P(t)), relative error about 5e-7), so 0.5 erfc is exact in relative terms on either side; the
// exponent -x^2 / 2 split as in FastGelu. Beyond |x| = 12.5, phi and the tail of Phi are taken
// as 0. NaN stays NaN.
inline float FastGeluGrad(float g, float x) {
  const auto [tiny, ax, t, p, xh, xl] = ErfcTermsOf(x);
  const float big = -0.5f * (xh * xh), small = -0.5f * (xl * (ax + xh));
  const float half_erfc = tiny ? 0.0f : 0.5f * (t * ExpOfSum(big, p + small));
  const float pdf = tiny ? 0.0f : 0.39894228040143267794f * ExpOfSum(big, small);
  const float cdf = x > 0.0f ? 1.0f - half_erfc : half_erfc;
  const float r = g * (cdf + x * pdf);
  return x != x ? x : r;
}

// dx[i] = FastGeluGrad(dy[i], x[i]); dx may be dy or x. Clones as GeluF32's.
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void GeluGradF32(
    int64_t n, const float* dy, const float* x, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = FastGeluGrad(dy[i], x[i]);
}

// y[i] = FastGelu(x[i]); x == y is allowed. AVX-512, AVX2+FMA and baseline clones chosen at
// load time: 16 floats a vector halve the time of 8, and contracting the polynomials into FMA
// takes another third off. The FMA clones may differ from the baseline one in the last bit
// (both within the error above). The AVX2+FMA clone is "arch=x86-64-v3" (the ISA level: AVX2,
// FMA, F16C, BMI): target_clones reads "avx2,fma" as two clones, one with AVX2 and no FMA and
// one with FMA and SSE registers, and an AVX2 CPU ran the first (a measured 2.9 ns an element
// against 1.9 on an AMD EPYC Zen 3).
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void GeluF32(int64_t n,
                                                                                    const float* x,
                                                                                    float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = FastGelu(x[i]);
}

// The bits of +infinity in f16 / bf16: a sign-clear pattern up to it is a number, above it NaN.
constexpr uint16_t kHalfInfBits = 0x7c00, kBFloat16InfBits = 0x7f80;

// The Relu kernels on 16-bit float bits, in vector registers (the clones as GeluF32's).
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void ReluBits(
    uint16_t inf, int64_t n, const uint16_t* x, uint16_t* y) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = x[i];
    // Negative (sign set, not NaN), or -0: +0.
    y[i] = (h & 0x8000) != 0 && (h & 0x7fff) <= inf ? uint16_t{0} : h;
  }
}
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void ReluGradBits(
    uint16_t inf, int64_t n, const uint16_t* dy, const uint16_t* y, uint16_t* dx) {
  for (int64_t i = 0; i < n; ++i) {
    // dy read unconditionally: a select, which vectorises (a conditional read did not: 10x slower).
    const uint16_t h = y[i], g = dy[i];
    dx[i] = h != 0 && h <= inf ? g : uint16_t{0};  // y > 0: sign clear, not 0, not NaN
  }
}

}  // namespace

namespace internal {

void ReluHalfBits(bool bf16, int64_t n, const uint16_t* x, uint16_t* y) {
  ReluBits(bf16 ? kBFloat16InfBits : kHalfInfBits, n, x, y);
}
void ReluGradHalfBits(bool bf16, int64_t n, const uint16_t* dy, const uint16_t* y, uint16_t* dx) {
  ReluGradBits(bf16 ? kBFloat16InfBits : kHalfInfBits, n, dy, y, dx);
}

void GeluErfF32(int64_t n, const float* x, float* y) { GeluF32(n, x, y); }
void GeluErfGradF32(int64_t n, const float* dy, const float* x, float* dx) {
  GeluGradF32(n, dy, x, dx);
}

__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void ExpNonPositiveF32(
    int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float e = ExpNonPositive(v);
    y[i] = v != v ? v : (v < -87.0f ? 0.0f : e);
  }
}

}  // namespace internal

namespace {

// y[i] = f(x[i]) over [0, n); x == y is allowed (each element is read before it is written).
template <typename T, typename F>
void MapUnary(int64_t n, int64_t cost, const T* x, T* y, F f) {
  ParallelFor(n, cost, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = Store<T>(f(Load(x[i])));
  });
}

// The fast mode's f16/bf16 unary map: blocks converted to float in vector registers
// (fast_convert.h), `block(len, in, out)` run on the floats, one rounding of each output.
template <typename T, typename B>
void MapUnaryBlocks(int64_t n, int64_t cost, const T* x, T* y, B block) {
  ParallelFor(n, cost, [&](int64_t b, int64_t e) {
    float buf[kF32Block];
    ForEachF32Block(b, e, [&](int64_t i, int64_t len) {
      ToF32(x + i, buf, len);
      block(len, buf, buf);
      FromF32(buf, y + i, len);
    });
  });
}

// One float unary op: the shared body (kernels/common/unary_math.h), except Erf and Gelu in float
// math in the fast mode, which run the CPU's branch-free polynomials (measured: glibc's
// erff/erfcf were a third of BERT's forward step; unit tests check them against the shared body).
// The reference mode runs the shared body, as cuda-emu does (kernel_mode.h).
template <typename T, typename F>
Status FloatUnary(int64_t n, int64_t cost, const T* x, T* y, F f) {
  using A = Compute<T>;
  if (CurrentKernelMode() == KernelMode::kReference) {
    MapUnary(n, cost, x, y, [f](A v) { return f(v); });
  } else if constexpr (kIsHalfElem<T>) {
    if constexpr (std::is_same_v<F, ReluF>) {  // on the bits: no conversion
      ParallelFor(n, 1, [&](int64_t b, int64_t e) {
        internal::ReluHalfBits(std::is_same_v<T, BFloat16>, e - b,
                               reinterpret_cast<const uint16_t*>(x + b),
                               reinterpret_cast<uint16_t*>(y + b));
      });
    } else if constexpr (std::is_same_v<F, ErfF>) {
      MapUnaryBlocks(n, 4, x, y,
                     [](int64_t len, const float* in, float* out) { ErfF32(len, in, out); });
    } else if constexpr (std::is_same_v<F, GeluF>) {
      MapUnaryBlocks(n, 6, x, y,
                     [](int64_t len, const float* in, float* out) { GeluF32(len, in, out); });
    } else {
      MapUnaryBlocks(n, cost, x, y, [f](int64_t len, const float* in, float* out) {
        for (int64_t i = 0; i < len; ++i) out[i] = f(in[i]);
      });
    }
  } else if constexpr (std::is_same_v<F, ErfF> && std::is_same_v<A, float>) {
    if constexpr (std::is_same_v<T, float>) {
      ParallelFor(n, 4, [&](int64_t b, int64_t e) { ErfF32(e - b, x + b, y + b); });
    } else {
      MapUnary(n, 4, x, y, [](A v) { return FastErf(v); });
    }
  } else if constexpr (std::is_same_v<F, GeluF> && std::is_same_v<A, float>) {
    if constexpr (std::is_same_v<T, float>) {
      ParallelFor(n, 6, [&](int64_t b, int64_t e) { GeluF32(e - b, x + b, y + b); });
    } else {
      MapUnary(n, 6, x, y, [](A v) { return FastGelu(v); });
    }
  } else {
    MapUnary(n, cost, x, y, [f](A v) { return f(v); });
  }
  return Status::Ok();
}

// One op of A8_UNARY_OPS, by its Types column.
template <UnaryTypes kTypes, typename F>
Status RunUnary(const char* name, F f, int64_t cost, DType dtype, int64_t n, const void* x,
                void* y) {
  if constexpr (kTypes == UnaryTypes::kBool) {
    if (dtype != DType::kBool) {
      return Unsupported("{}: dtype {} is not bool", name, ElemName(dtype));
    }
    const bool* in = static_cast<const bool*>(x);
    bool* out = static_cast<bool*>(y);
    for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
    return Status::Ok();
  } else if constexpr (kTypes == UnaryTypes::kSigned || kTypes == UnaryTypes::kNumeric) {
    return Dispatch<TypeSet::kNumeric>(dtype, name, [&](auto tag) -> Status {
      using T = A8_TAG_TYPE(tag);
      const T* in = static_cast<const T*>(x);
      T* out = static_cast<T*>(y);
      if constexpr (kIsFloatElem<T>) return FloatUnary(n, cost, in, out, f);
      MapUnary(n, 1, in, out, f);
      return Status::Ok();
    });
  } else {
    return Dispatch<TypeSet::kFloat>(dtype, name, [&](auto tag) -> Status {
      using T = A8_TAG_TYPE(tag);
      const T* in = static_cast<const T*>(x);
      if constexpr (kTypes == UnaryTypes::kPredicate) {
        bool* out = static_cast<bool*>(y);
        ParallelFor(n, cost, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) out[i] = f(Load(in[i]));
        });
        return Status::Ok();
      } else {
        return FloatUnary(n, cost, in, static_cast<T*>(y), f);
      }
    });
  }
}

}  // namespace

Status Unary(UnaryOp op, DType dtype, int64_t n, const void* x, void* y, const UnaryAttrs& at) {
  switch (op) {
#define A8_X(Name, Types, Cost, Fused) \
  case UnaryOp::k##Name:               \
    return RunUnary<UnaryTypes::k##Types>(#Name, Name##F{at}, Cost, dtype, n, x, y);
    A8_UNARY_OPS(A8_X)
#undef A8_X
  }
  return InvalidInput("unary op {} is not in A8_UNARY_OPS", static_cast<int>(op));
}

Status Clip(DType dtype, int64_t n, const void* x, const void* lo, const void* hi, void* y) {
  return Dispatch<TypeSet::kNumeric>(dtype, "Clip", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    const bool has_lo = lo != nullptr, has_hi = hi != nullptr;
    const C lo_v = has_lo ? Load(*static_cast<const T*>(lo)) : C(0);
    const C hi_v = has_hi ? Load(*static_cast<const T*>(hi)) : C(0);
    for (int64_t i = 0; i < n; ++i) {
      C v = Load(in[i]);
      if (has_lo && v < lo_v) v = lo_v;
      if (has_hi && v > hi_v) v = hi_v;
      out[i] = Store<T>(v);
    }
    return Status::Ok();
  });
}

Status Cast(DType from, DType to, int64_t n, const void* x, void* y) {
  return Dispatch<TypeSet::kAll>(from, "Cast", [&](auto from_tag) {
    using F = A8_TAG_TYPE(from_tag);
    return Dispatch<TypeSet::kAll>(to, "Cast", [&](auto to_tag) {
      using T = A8_TAG_TYPE(to_tag);
      const F* in = static_cast<const F*>(x);
      T* out = static_cast<T*>(y);
      // f32 <-> f16/bf16 in vector registers in the fast mode (the same bits, fast_convert.h);
      // the casts of amp's weights and activations each step.
      if constexpr ((std::is_same_v<F, float> && kIsHalfElem<T>) ||
                    (kIsHalfElem<F> && std::is_same_v<T, float>)) {
        if (CurrentKernelMode() == KernelMode::kFast) {
          ParallelFor(n, 1, [&](int64_t b, int64_t e) {
            if constexpr (std::is_same_v<F, float>) {
              FromF32(in + b, out + b, e - b);
            } else {
              ToF32(in + b, out + b, e - b);
            }
          });
          return Status::Ok();
        }
      }
      ParallelFor(n, 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = CastElem<T, F>(in[i]);
      });
      return Status::Ok();
    });
  });
}

Status Dropout(DType dtype, int64_t n, const void* x, float ratio, bool training, uint64_t seed,
               uint64_t offset, void* y, bool* mask) {
  if (!(ratio >= 0.0f && ratio < 1.0f)) {
    return InvalidInput("Dropout: ratio {} is not in [0, 1)", ratio);
  }
  return Dispatch<TypeSet::kFloat>(dtype, "Dropout", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    if (!training || ratio == 0.0f) {
      if (out != in) std::memcpy(out, in, static_cast<size_t>(n) * sizeof(T));
      if (mask != nullptr) std::fill(mask, mask + n, true);
      return Status::Ok();
    }
    const C scale = static_cast<C>(1.0f / (1.0f - ratio));
    ParallelFor(n, kTranscendentalCost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        bool keep = DropoutKeep(seed, offset, static_cast<uint64_t>(i), ratio);
        if (mask != nullptr) mask[i] = keep;
        out[i] = Store<T>(keep ? Load(in[i]) * scale : C(0));
      }
    });
    return Status::Ok();
  });
}

}  // namespace a8::cpu

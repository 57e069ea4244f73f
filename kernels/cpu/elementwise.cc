// Unary math, Clip, Cast and Dropout. Binary ops and Where are in binary.cc.
#include "kernels/cpu/elementwise.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/common/philox.h"
#include "kernels/cpu/cast_elem.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

constexpr int64_t kTranscendentalCost = 16;

const char* UnaryName(UnaryOp op) {
  static const char* const kNames[] = {"Abs",         "Neg",  "Relu",  "Sigmoid",    "Tanh",
                                       "Exp",         "Log",  "Sqrt",  "Reciprocal", "Erf",
                                       "Floor",       "Ceil", "Sin",   "Cos",        "Not",
                                       "LeakyRelu",   "Elu",  "Gelu",  "GeluTanh",   "Softplus",
                                       "HardSigmoid", "Sign", "IsNaN", "IsInf",      "Identity"};
  return kNames[static_cast<int>(op)];
}

// 2^n e^r for an integral n and |r| <= ln2 / 2: a degree-7 Taylor polynomial of e^r scaled by
// 2^n through the exponent bits (the shared tail of ExpNonPositive and ExpOfSum).
inline float ExpReduced(float n, float r) {
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
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
  float sp = 8.504967263434082e-05f;
  sp = sp * z - 0.000817528401967138f;
  sp = sp * z + 0.005203970242291689f;
  sp = sp * z - 0.026860613375902176f;
  sp = sp * z + 0.11283718049526215f;
  sp = sp * z - 0.37612634897232056f;
  sp = sp * z + 1.128379225730896f;
  const float small = x * sp;
  const float t = a < 0.921875f ? 0.921875f : (a > 3.925f ? 3.925f : a);
  float q = -5.7023200383810035e-08f;
  q = q * t + 1.3503728268915438e-06f;
  q = q * t - 1.2424652595655061e-05f;
  q = q * t + 3.8640559068880975e-05f;
  q = q * t + 0.00027032371144741774f;
  q = q * t - 0.003918679431080818f;
  q = q * t + 0.0249559935182333f;
  q = q * t - 0.10837502032518387f;
  q = q * t - 0.6330949664115906f;
  q = q * t - 1.129687786102295f;
  q = q * t + 0.0002170453517464921f;
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

// Gelu 0.5 x erfc(-x / sqrt 2) in float, branch-free (glibc's erfcf is a scalar call and was a
// third of BERT's forward step). With h = 0.5 |x| erfc(|x| / sqrt 2), Gelu is x - h for x > 0
// and -h otherwise: no cancellation either side. erfc(a) = t exp(-a^2 + P(t)), t = 1 / (1 +
// a / 2) (Numerical Recipes' erfcc, relative error 1.2e-7 for every a >= 0); a^2 = x^2 / 2 is
// split as xh^2 (exact: xh keeps 12 bits) plus a small part, so the exponent keeps full precision
// in the tail. Max relative error about 5e-7 over all floats; beyond |x| = 12.5 h underflows
// and is taken as 0. NaN stays NaN.
inline float FastGelu(float x) {
  const float ax_in = std::fabs(x);
  const bool tiny_h = !(ax_in < 12.5f);
  const float ax = tiny_h ? 12.5f : ax_in;
  const float t = 1.0f / (1.0f + 0.5f * (ax * 0.70710678118654752f));
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  uint32_t bits;
  std::memcpy(&bits, &ax, sizeof(bits));
  bits &= 0xfffff000u;
  float xh;
  std::memcpy(&xh, &bits, sizeof(xh));
  const float xl = ax - xh;
  const float h = 0.5f * ax * (t * ExpOfSum(-0.5f * (xh * xh), p - 0.5f * (xl * (ax + xh))));
  const float hx = tiny_h ? 0.0f : h;
  const float g = x > 0.0f ? x - hx : -hx;
  return x != x ? x : g;
}

// y[i] = FastGelu(x[i]); x == y is allowed. AVX-512, AVX2+FMA and baseline clones chosen at
// load time: 16 floats a vector halve the time of 8, and contracting the polynomials into FMA
// takes another third off. The FMA clones may differ from the baseline one in the last bit
// (both within the error above).
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) void GeluF32(int64_t n,
                                                                              const float* x,
                                                                              float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = FastGelu(x[i]);
}

}  // namespace

namespace internal {

__attribute__((target_clones("avx512f", "avx2,fma", "default"))) void ExpNonPositiveF32(
    int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float e = ExpNonPositive(v);
    y[i] = v != v ? v : (v < -87.0f ? 0.0f : e);
  }
}

}  // namespace internal

namespace {

// The float math of one unary op in A (float or double).
template <typename A>
A FloatUnary(UnaryOp op, A x, const UnaryAttrs& at) {
  const A one = 1, zero = 0, half = 0.5;
  switch (op) {
    case UnaryOp::kAbs:
      return std::fabs(x);
    case UnaryOp::kNeg:
      return -x;
    case UnaryOp::kRelu:
      return x > zero ? x : (x == x ? zero : x);
    case UnaryOp::kSigmoid: {
      if (x >= zero) return one / (one + std::exp(-x));
      A e = std::exp(x);
      return e / (one + e);
    }
    case UnaryOp::kTanh:
      return std::tanh(x);
    case UnaryOp::kExp:
      return std::exp(x);
    case UnaryOp::kLog:
      return std::log(x);
    case UnaryOp::kSqrt:
      return std::sqrt(x);
    case UnaryOp::kReciprocal:
      return one / x;
    case UnaryOp::kErf:
      return std::erf(x);
    case UnaryOp::kFloor:
      return std::floor(x);
    case UnaryOp::kCeil:
      return std::ceil(x);
    case UnaryOp::kSin:
      return std::sin(x);
    case UnaryOp::kCos:
      return std::cos(x);
    case UnaryOp::kLeakyRelu:
      return x >= zero ? x : static_cast<A>(at.alpha) * x;
    case UnaryOp::kElu:
      return x >= zero ? x : static_cast<A>(at.alpha) * std::expm1(x);
    // 0.5 x (1 + erf(x / sqrt 2)) and 0.5 x (1 + tanh(u)) written without the cancellation
    // of 1 + erf / 1 + tanh for negative x: erfc, and 1 + tanh(u) = 2 / (1 + exp(-2u)).
    case UnaryOp::kGelu: {
      // erfc(+Inf) is 0 and (-Inf) * 0 is NaN: Gelu(-Inf) is -0, as the f32 kernel gives.
      const A c = std::erfc(-x * static_cast<A>(0.70710678118654752440));
      return c == zero ? std::copysign(zero, x) : half * x * c;
    }
    case UnaryOp::kGeluTanh: {
      const A k = static_cast<A>(0.79788456080286535588);  // sqrt(2 / pi)
      A u = k * (x + static_cast<A>(0.044715) * x * x * x);
      return x / (one + std::exp(-2 * u));
    }
    case UnaryOp::kSoftplus:
      return std::fmax(x, zero) + std::log1p(std::exp(-std::fabs(x)));
    case UnaryOp::kHardSigmoid:
      return std::fmax(zero,
                       std::fmin(one, static_cast<A>(at.alpha) * x + static_cast<A>(at.beta)));
    case UnaryOp::kSign:
      return x > zero ? one : (x < zero ? -one : x);
    default:
      return x;  // kIdentity
  }
}

// y[i] = f(x[i]) over [0, n); x == y is allowed (each element is read before it is written).
template <typename T, typename F>
void MapUnary(int64_t n, int64_t cost, const T* x, T* y, F f) {
  ParallelFor(n, cost, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = Store<T>(f(Load(x[i])));
  });
}

template <typename T>
Status FloatUnaryKernel(UnaryOp op, int64_t n, const T* x, T* y, const UnaryAttrs& at) {
  using A = Compute<T>;
  // The cheap ops as their own loops (the compiler vectorises them); the rest through the
  // generic switch, whose per-element cost is dominated by the libm call anyway.
  switch (op) {
    case UnaryOp::kRelu:
      MapUnary(n, 1, x, y, [](A v) { return v > A(0) ? v : (v == v ? A(0) : v); });
      break;
    case UnaryOp::kNeg:
      MapUnary(n, 1, x, y, [](A v) { return -v; });
      break;
    case UnaryOp::kAbs:
      MapUnary(n, 1, x, y, [](A v) { return std::fabs(v); });
      break;
    case UnaryOp::kIdentity:
      MapUnary(n, 1, x, y, [](A v) { return v; });
      break;
    case UnaryOp::kErf:
      if constexpr (std::is_same_v<T, float>) {
        ParallelFor(n, 4, [&](int64_t b, int64_t e) { ErfF32(e - b, x + b, y + b); });
      } else if constexpr (std::is_same_v<A, float>) {
        MapUnary(n, 4, x, y, [](A v) { return FastErf(v); });
      } else {
        MapUnary(n, kTranscendentalCost, x, y, [](A v) { return std::erf(v); });
      }
      break;
    case UnaryOp::kGelu:
      if constexpr (std::is_same_v<T, float>) {
        ParallelFor(n, 6, [&](int64_t b, int64_t e) { GeluF32(e - b, x + b, y + b); });
      } else if constexpr (std::is_same_v<A, float>) {
        MapUnary(n, 6, x, y, [](A v) { return FastGelu(v); });
      } else {
        MapUnary(n, kTranscendentalCost, x, y, [&](A v) { return FloatUnary(op, v, at); });
      }
      break;
    default:
      MapUnary(n, kTranscendentalCost, x, y, [&](A v) { return FloatUnary(op, v, at); });
      break;
  }
  return Status::Ok();
}

template <typename T>
Status FloatPredicateKernel(UnaryOp op, int64_t n, const T* x, bool* y, const UnaryAttrs& at) {
  for (int64_t i = 0; i < n; ++i) {
    auto v = Load(x[i]);
    if (op == UnaryOp::kIsNaN) {
      y[i] = std::isnan(v);
    } else {
      y[i] = std::isinf(v) && ((v > 0 && at.detect_positive) || (v < 0 && at.detect_negative));
    }
  }
  return Status::Ok();
}

template <typename T>
Status IntUnaryKernel(UnaryOp op, int64_t n, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) {
    T v = x[i];
    bool negative = false;
    if constexpr (std::is_signed_v<T>) negative = v < 0;
    switch (op) {
      case UnaryOp::kAbs:
        y[i] = negative ? static_cast<T>(0 - v) : v;
        break;
      case UnaryOp::kNeg:
        y[i] = static_cast<T>(0 - v);
        break;
      case UnaryOp::kRelu:
        y[i] = negative ? T(0) : v;
        break;
      case UnaryOp::kSign:
        y[i] = static_cast<T>(v == 0 ? 0 : (negative ? -1 : 1));
        break;
      default:
        y[i] = v;
        break;
    }
  }
  return Status::Ok();
}

}  // namespace

Status Unary(UnaryOp op, DType dtype, int64_t n, const void* x, void* y, const UnaryAttrs& at) {
  const char* name = UnaryName(op);
  if (op == UnaryOp::kNot) {
    if (dtype != DType::kBool)
      return Unsupported("{}: dtype {} is not bool", name, ElemName(dtype));
    const bool* in = static_cast<const bool*>(x);
    bool* out = static_cast<bool*>(y);
    for (int64_t i = 0; i < n; ++i) out[i] = !in[i];
    return Status::Ok();
  }
  const bool int_ok = op == UnaryOp::kAbs || op == UnaryOp::kNeg || op == UnaryOp::kRelu ||
                      op == UnaryOp::kSign || op == UnaryOp::kIdentity;
  auto kernel = [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    const T* in = static_cast<const T*>(x);
    if constexpr (kIsFloatElem<T>) {
      if (op == UnaryOp::kIsNaN || op == UnaryOp::kIsInf) {
        return FloatPredicateKernel(op, n, in, static_cast<bool*>(y), at);
      }
      return FloatUnaryKernel(op, n, in, static_cast<T*>(y), at);
    } else {
      return IntUnaryKernel(op, n, in, static_cast<T*>(y));
    }
  };
  if (int_ok) return Dispatch<TypeSet::kNumeric>(dtype, name, kernel);
  return Dispatch<TypeSet::kFloat>(dtype, name, kernel);
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

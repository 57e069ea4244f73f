// The one math body of every elementwise unary op and activation gradient: an A8_HD functor per
// op, and the two lists (A8_UNARY_OPS, A8_ACT_GRAD_OPS) from which everything else is generated:
// the CPU enums and kernels (kernels/cpu/elementwise.cc, grad_math.cc), the CUDA enums and kernels
// (kernels/device/elementwise*.h), both backends' registry entries (runtime/*/ops_elementwise.cc,
// runtime/cpu/ops_grad_math.cc), the fused-elementwise opcodes and evaluator
// (kernels/common/fused_elementwise.h, passes/fusion/fuse_elementwise.cc) and constant folding
// (passes/cleanup/constant_folding_math.cc, which runs the CPU kernel).
//
// To add a unary op `Foo` with gradient `a8.FooGrad`: write FooF and FooGradF below, add one line
// to each list, and declare the op in compiler/ir/op_table.cc (ActivationOp). Nothing else.
//
// A functor maps one element in its compute type A (float for f16/bf16/f32, double for f64, the
// integer itself for integer ops) and reads its ONNX attributes from `at`. Plain ::expf-style
// math only (device intrinsics under nvcc): no std:: containers, no exceptions.
#pragma once

#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "kernels/common/float16.h"

namespace a8 {

// The CPU thread pool's cost of one libm call (an exp, a log, an erf) against a few instructions'
// 1: the scale of the cost column below and of the host launches' cost_per_item
// (kernels/device/launch.h; the GPU ignores it), so that a loop of heavy items goes parallel.
inline constexpr int64_t kTranscendentalCost = 16;

// The ONNX attributes a unary op or activation gradient reads. The values of an op that has no
// such attribute are ignored; DefaultUnaryAttrs gives the ONNX defaults.
struct UnaryAttrs {
  float alpha = 0.0f;           // LeakyRelu, Elu, HardSigmoid, Selu, Celu, ThresholdedRelu, Swish
  float beta = 0.0f;            // HardSigmoid
  bool detect_positive = true;  // IsInf
  bool detect_negative = true;  // IsInf
  float gamma = 0.0f;           // Selu
  float bias = 0.0f;            // Shrink
  float lambd = 0.0f;           // Shrink
};

// The lists. Columns:
// - Name: the ONNX op (GeluTanh: Gelu with approximate="tanh", no op of its own), the functor
//   NameF / NameGradF, the enumerators k<Name>, the gradient op "a8.<Name>Grad".
// - Types (unary ops): Float (f32/f16/bf16/f64), Signed (also i64/i32/i8), Numeric (also u8),
//   Predicate (float in, bool out), Bool (bool in and out), Variant (Float, selected by an
//   attribute of another op's entry).
// - Reads (gradients): Output (the forward output y) or Input (the forward input x); Variant as
//   above.
// - Cost: the CPU thread pool's per-element cost (1: a few instructions, 16: a libm call,
//   kTranscendentalCost above).
// - Fused: the op's a8.FusedElementwise opcode (part of the plan format: never renumber), or -1
//   when the fuse pass leaves the op alone (ops with attributes, and the ops added after the
//   opcodes were fixed). The next free opcode is 27.
#define A8_UNARY_OPS(X)            \
  X(Abs, Numeric, 1, 9)            \
  X(Neg, Signed, 1, 8)             \
  X(Relu, Signed, 1, 1)            \
  X(Sigmoid, Float, 16, 4)         \
  X(Tanh, Float, 16, 5)            \
  X(Exp, Float, 16, 6)             \
  X(Log, Float, 16, 7)             \
  X(Sqrt, Float, 16, 10)           \
  X(Reciprocal, Float, 16, 11)     \
  X(Erf, Float, 16, 12)            \
  X(Floor, Float, 16, -1)          \
  X(Ceil, Float, 16, -1)           \
  X(Sin, Float, 16, -1)            \
  X(Cos, Float, 16, -1)            \
  X(Not, Bool, 1, -1)              \
  X(LeakyRelu, Float, 16, -1)      \
  X(Elu, Float, 16, -1)            \
  X(Gelu, Float, 16, 2)            \
  X(GeluTanh, Variant, 16, 3)      \
  X(Softplus, Float, 16, -1)       \
  X(HardSigmoid, Float, 16, -1)    \
  X(Sign, Numeric, 16, -1)         \
  X(IsNaN, Predicate, 16, -1)      \
  X(IsInf, Predicate, 16, -1)      \
  X(Mish, Float, 16, 25)           \
  X(Tan, Float, 16, -1)            \
  X(Asin, Float, 16, -1)           \
  X(Acos, Float, 16, -1)           \
  X(Atan, Float, 16, -1)           \
  X(Sinh, Float, 16, -1)           \
  X(Cosh, Float, 16, -1)           \
  X(Asinh, Float, 16, -1)          \
  X(Acosh, Float, 16, -1)          \
  X(Atanh, Float, 16, -1)          \
  X(Round, Float, 1, -1)           \
  X(Softsign, Float, 1, -1)        \
  X(Selu, Float, 16, -1)           \
  X(Celu, Float, 16, -1)           \
  X(ThresholdedRelu, Float, 1, -1) \
  X(Shrink, Float, 1, -1)          \
  X(Swish, Float, 16, -1)          \
  X(HardSwish, Float, 1, -1)

#define A8_ACT_GRAD_OPS(X)         \
  X(Relu, Output, 1, 20)           \
  X(Sigmoid, Output, 1, 23)        \
  X(Tanh, Output, 1, 24)           \
  X(LeakyRelu, Input, 1, -1)       \
  X(Elu, Input, 16, -1)            \
  X(Gelu, Input, 16, 21)           \
  X(GeluTanh, Variant, 16, 22)     \
  X(Erf, Input, 16, -1)            \
  X(Softplus, Input, 16, -1)       \
  X(HardSigmoid, Input, 1, -1)     \
  X(Mish, Input, 16, 26)           \
  X(Tan, Input, 16, -1)            \
  X(Asin, Input, 16, -1)           \
  X(Acos, Input, 16, -1)           \
  X(Atan, Input, 16, -1)           \
  X(Sinh, Input, 16, -1)           \
  X(Cosh, Input, 16, -1)           \
  X(Asinh, Input, 16, -1)          \
  X(Acosh, Input, 16, -1)          \
  X(Atanh, Input, 16, -1)          \
  X(Softsign, Input, 1, -1)        \
  X(Selu, Input, 16, -1)           \
  X(Celu, Input, 16, -1)           \
  X(ThresholdedRelu, Input, 1, -1) \
  X(Shrink, Input, 1, -1)          \
  X(Swish, Input, 16, -1)          \
  X(HardSwish, Input, 1, -1)

// The ONNX defaults of the attributes of `op` (an ONNX op name), as compiler/ir/op_table.cc
// declares them (a registry test checks that they agree).
inline UnaryAttrs DefaultUnaryAttrs(const char* op) {
  UnaryAttrs at;
  auto is = [op](const char* s) {
    const char* a = op;
    while (*a != 0 && *a == *s) ++a, ++s;
    return *a == 0 && *s == 0;
  };
  if (is("LeakyRelu")) at.alpha = 0.01f;
  if (is("Elu")) at.alpha = 1.0f;
  if (is("HardSigmoid")) at.alpha = 0.2f, at.beta = 0.5f;
  if (is("Selu")) at.alpha = 1.67326319217681884765625f, at.gamma = 1.05070102214813232421875f;
  if (is("Celu") || is("ThresholdedRelu") || is("Swish")) at.alpha = 1.0f;
  if (is("Shrink")) at.bias = 0.0f, at.lambd = 0.5f;
  return at;
}

// ---- libm by overload (the float functions are device intrinsics under nvcc).
A8_HD float MExp(float x) { return ::expf(x); }
A8_HD double MExp(double x) { return ::exp(x); }
// Below kExpIsZero, exp rounds to exactly +0: ExpOrZero skips the call there (and libm's slow
// underflow path, taken by every masked softmax score) and gives the same bits.
template <typename C>
inline constexpr C kExpIsZero = std::is_same_v<C, float> ? C(-104) : C(-746);
template <typename C>
A8_HD C ExpOrZero(C d) {
  return d < kExpIsZero<C> ? C(0) : MExp(d);
}
A8_HD float MExpm1(float x) { return ::expm1f(x); }
A8_HD double MExpm1(double x) { return ::expm1(x); }
A8_HD float MLog(float x) { return ::logf(x); }
A8_HD double MLog(double x) { return ::log(x); }
A8_HD float MLog1p(float x) { return ::log1pf(x); }
A8_HD double MLog1p(double x) { return ::log1p(x); }
A8_HD float MTanh(float x) { return ::tanhf(x); }
A8_HD double MTanh(double x) { return ::tanh(x); }
A8_HD float MErf(float x) { return ::erff(x); }
A8_HD double MErf(double x) { return ::erf(x); }
A8_HD float MErfc(float x) { return ::erfcf(x); }
A8_HD double MErfc(double x) { return ::erfc(x); }
A8_HD float MSqrt(float x) { return ::sqrtf(x); }
A8_HD double MSqrt(double x) { return ::sqrt(x); }
A8_HD float MAbs(float x) { return ::fabsf(x); }
A8_HD double MAbs(double x) { return ::fabs(x); }
A8_HD float MFloor(float x) { return ::floorf(x); }
A8_HD double MFloor(double x) { return ::floor(x); }
A8_HD float MCeil(float x) { return ::ceilf(x); }
A8_HD double MCeil(double x) { return ::ceil(x); }
A8_HD float MSin(float x) { return ::sinf(x); }
A8_HD double MSin(double x) { return ::sin(x); }
A8_HD float MCos(float x) { return ::cosf(x); }
A8_HD double MCos(double x) { return ::cos(x); }
A8_HD float MTan(float x) { return ::tanf(x); }
A8_HD double MTan(double x) { return ::tan(x); }
A8_HD float MAsin(float x) { return ::asinf(x); }
A8_HD double MAsin(double x) { return ::asin(x); }
A8_HD float MAcos(float x) { return ::acosf(x); }
A8_HD double MAcos(double x) { return ::acos(x); }
A8_HD float MAtan(float x) { return ::atanf(x); }
A8_HD double MAtan(double x) { return ::atan(x); }
A8_HD float MSinh(float x) { return ::sinhf(x); }
A8_HD double MSinh(double x) { return ::sinh(x); }
A8_HD float MCosh(float x) { return ::coshf(x); }
A8_HD double MCosh(double x) { return ::cosh(x); }
A8_HD float MAsinh(float x) { return ::asinhf(x); }
A8_HD double MAsinh(double x) { return ::asinh(x); }
A8_HD float MAcosh(float x) { return ::acoshf(x); }
A8_HD double MAcosh(double x) { return ::acosh(x); }
A8_HD float MAtanh(float x) { return ::atanhf(x); }
A8_HD double MAtanh(double x) { return ::atanh(x); }
// Round half to even (ONNX Round), in the default rounding mode.
A8_HD float MRint(float x) { return ::rintf(x); }
A8_HD double MRint(double x) { return ::rint(x); }
A8_HD float MMax(float a, float b) { return ::fmaxf(a, b); }
A8_HD double MMax(double a, double b) { return ::fmax(a, b); }
A8_HD float MMin(float a, float b) { return ::fminf(a, b); }
A8_HD double MMin(double a, double b) { return ::fmin(a, b); }
A8_HD float MPow(float a, float b) { return ::powf(a, b); }
A8_HD double MPow(double a, double b) { return ::pow(a, b); }
A8_HD float MFmod(float a, float b) { return ::fmodf(a, b); }
A8_HD double MFmod(double a, double b) { return ::fmod(a, b); }
A8_HD bool MIsNaN(float x) { return ::isnan(x); }
A8_HD bool MIsNaN(double x) { return ::isnan(x); }
A8_HD bool MIsInf(float x) { return ::isinf(x); }
A8_HD bool MIsInf(double x) { return ::isinf(x); }

// 1 / (1 + e^-x) without overflow for large |x|.
template <typename A>
A8_HD A SigmoidOf(A x) {
  if (x >= A(0)) return A(1) / (A(1) + MExp(-x));
  const A e = MExp(x);
  return e / (A(1) + e);
}

// log(1 + e^x) without overflow.
template <typename A>
A8_HD A SoftplusOf(A x) {
  return MMax(x, A(0)) + MLog1p(MExp(-MAbs(x)));
}

// ---- unary functors. A8_UNARY_BODY(Name, expr) is the functor NameF whose body is one
// expression of x (and the attributes `at`); longer bodies are written out.
#define A8_UNARY_BODY(Name, ...)    \
  struct Name##F {                  \
    UnaryAttrs at;                  \
    template <typename A>           \
    A8_HD A operator()(A x) const { \
      return __VA_ARGS__;           \
    }                               \
  };

// Integer negation that wraps as two's complement (-INT64_MIN == INT64_MIN, as numpy and
// onnxruntime give) instead of overflowing, which is undefined for signed types.
template <typename A>
A8_HD A WrapNeg(A x) {
  using U = std::make_unsigned_t<A>;
  return static_cast<A>(static_cast<U>(0) - static_cast<U>(x));
}

struct AbsF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A x) const {
    if constexpr (std::is_integral_v<A>) {
      if constexpr (std::is_signed_v<A>) return x < 0 ? WrapNeg(x) : x;
      return x;
    } else {
      return MAbs(x);
    }
  }
};
struct NegF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A x) const {
    if constexpr (std::is_integral_v<A>) return WrapNeg(x);
    return -x;
  }
};
struct ReluF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A x) const {
    if constexpr (std::is_integral_v<A>) return x > A(0) ? x : A(0);
    return x > A(0) ? x : (x == x ? A(0) : x);
  }
};
struct SignF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A x) const {
    if constexpr (std::is_integral_v<A>) {
      if constexpr (std::is_signed_v<A>) return static_cast<A>(x == 0 ? 0 : (x < 0 ? -1 : 1));
      return static_cast<A>(x == 0 ? 0 : 1);
    } else {
      return x > A(0) ? A(1) : (x < A(0) ? A(-1) : x);
    }
  }
};
A8_UNARY_BODY(Sigmoid, SigmoidOf(x))
A8_UNARY_BODY(Tanh, MTanh(x))
A8_UNARY_BODY(Exp, MExp(x))
A8_UNARY_BODY(Log, MLog(x))
A8_UNARY_BODY(Sqrt, MSqrt(x))
A8_UNARY_BODY(Reciprocal, A(1) / x)
// The library erf. The CPU runs a branch-free polynomial for float math instead (a measured fast
// path, kernels/cpu/elementwise.cc FastErf, checked against this body).
A8_UNARY_BODY(Erf, MErf(x))
A8_UNARY_BODY(Floor, MFloor(x))
A8_UNARY_BODY(Ceil, MCeil(x))
A8_UNARY_BODY(Sin, MSin(x))
A8_UNARY_BODY(Cos, MCos(x))
struct NotF {
  UnaryAttrs at;
  A8_HD bool operator()(bool x) const { return !x; }
};
A8_UNARY_BODY(LeakyRelu, x >= A(0) ? x : static_cast<A>(at.alpha) * x)
A8_UNARY_BODY(Elu, x >= A(0) ? x : static_cast<A>(at.alpha) * MExpm1(x))
// 0.5 x erfc(-x / sqrt 2): no cancellation of 1 + erf for negative x. Where erfc underflows
// (x below about -14 in float, -38 in double) the result is -0, also for -Inf ((-Inf) * 0 would
// be NaN). The CPU runs a polynomial for float math (FastGelu), as for Erf.
struct GeluF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A x) const {
    const A e = MErfc(-x * A(0.70710678118654752440));
    return e == A(0) ? A(-0.0) : A(0.5) * x * e;
  }
};
// 0.5 x (1 + tanh u) = x / (1 + exp(-2u)), u = sqrt(2 / pi) (x + 0.044715 x^3).
struct GeluTanhF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A x) const {
    const A u = A(0.79788456080286535588) * (x + A(0.044715) * x * x * x);
    return x / (A(1) + MExp(A(-2) * u));
  }
};
A8_UNARY_BODY(Softplus, SoftplusOf(x))
A8_UNARY_BODY(HardSigmoid,
              MMax(A(0), MMin(A(1), static_cast<A>(at.alpha) * x + static_cast<A>(at.beta))))
struct IsNaNF {
  UnaryAttrs at;
  template <typename A>
  A8_HD bool operator()(A x) const {
    return MIsNaN(x);
  }
};
struct IsInfF {
  UnaryAttrs at;
  template <typename A>
  A8_HD bool operator()(A x) const {
    return MIsInf(x) && ((x > A(0) && at.detect_positive) || (x < A(0) && at.detect_negative));
  }
};

// x tanh(softplus(x)) (ONNX Mish-18).
// clang-format off
A8_UNARY_BODY(Mish, x * MTanh(SoftplusOf(x)))
A8_UNARY_BODY(Tan, MTan(x))
A8_UNARY_BODY(Asin, MAsin(x))
A8_UNARY_BODY(Acos, MAcos(x))
A8_UNARY_BODY(Atan, MAtan(x))
A8_UNARY_BODY(Sinh, MSinh(x))
A8_UNARY_BODY(Cosh, MCosh(x))
A8_UNARY_BODY(Asinh, MAsinh(x))
A8_UNARY_BODY(Acosh, MAcosh(x))
A8_UNARY_BODY(Atanh, MAtanh(x))
A8_UNARY_BODY(Round, MRint(x))
A8_UNARY_BODY(Softsign, x / (A(1) + MAbs(x)))
// gamma * (x > 0 ? x : alpha * (e^x - 1)) (ONNX Selu-6).
A8_UNARY_BODY(Selu, static_cast<A>(at.gamma) *
                        (x > A(0) ? x : static_cast<A>(at.alpha) * MExpm1(x)))
// max(0, x) + min(0, alpha * (e^(x / alpha) - 1)) (ONNX Celu-12).
A8_UNARY_BODY(Celu, x > A(0) ? x : static_cast<A>(at.alpha) * MExpm1(x / static_cast<A>(at.alpha)))
A8_UNARY_BODY(ThresholdedRelu, x > static_cast<A>(at.alpha) ? x : A(0))
// x < -lambd ? x + bias : x > lambd ? x - bias : 0 (ONNX Shrink-9).
A8_UNARY_BODY(Shrink, x < -static_cast<A>(at.lambd) ? x + static_cast<A>(at.bias)
                      : x > static_cast<A>(at.lambd) ? x - static_cast<A>(at.bias) : A(0))
// x * sigmoid(alpha * x) (ONNX Swish-24).
A8_UNARY_BODY(Swish, x * SigmoidOf(static_cast<A>(at.alpha) * x))
// x * max(0, min(1, x / 6 + 1/2)) (ONNX HardSwish-14).
A8_UNARY_BODY(HardSwish, x * MMax(A(0), MMin(A(1), x / A(6) + A(0.5))))
// clang-format on

// ---- activation gradients: dx = NameGradF(g = dy, z), z the saved forward output y or input x
// (the Reads column). A8_GRAD_BODY(Name, z, expr): a one-expression body of g and z (x or y).
#define A8_GRAD_BODY(Name, z, ...)       \
  struct Name##GradF {                   \
    UnaryAttrs at;                       \
    template <typename A>                \
    A8_HD A operator()(A g, A z) const { \
      return __VA_ARGS__;                \
    }                                    \
  };

// (clang-format would take the products below for pointer declarations.)
// clang-format off
A8_GRAD_BODY(Relu, y, y > A(0) ? g : A(0))
A8_GRAD_BODY(Sigmoid, y, g * y * (A(1) - y))
A8_GRAD_BODY(Tanh, y, g * (A(1) - y * y))
A8_GRAD_BODY(LeakyRelu, x, x > A(0) ? g : static_cast<A>(at.alpha) * g)
A8_GRAD_BODY(Elu, x, x > A(0) ? g : static_cast<A>(at.alpha) * MExp(x) * g)
// clang-format on
// d/dx [x Phi(x)] = Phi(x) + x phi(x), Phi through erfc (no cancellation for x < 0).
struct GeluGradF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    const A cdf = A(0.5) * MErfc(-x * A(0.70710678118654752440));
    const A pdf = MExp(A(-0.5) * x * x) * A(0.39894228040143267794);
    return g * (cdf + x * pdf);
  }
};
// With s = (1 + tanh u) / 2 = sigmoid(2u): y = x s, dy/dx = s + 2 x s (1 - s) u'(x).
struct GeluTanhGradF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    const A k = A(0.79788456080286535588), c = A(0.044715);
    const A u = k * (x + c * x * x * x);
    const A s = SigmoidOf(A(2) * u);
    const A du = k * (A(1) + A(3) * c * x * x);
    return g * (s + A(2) * x * s * (A(1) - s) * du);
  }
};
// clang-format off
A8_GRAD_BODY(Erf, x, g * A(1.12837916709551257390) * MExp(-x * x))
A8_GRAD_BODY(Softplus, x, g * SigmoidOf(x))
// clang-format on
struct HardSigmoidGradF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    const A a = static_cast<A>(at.alpha);
    const A v = a * x + static_cast<A>(at.beta);
    return v > A(0) && v < A(1) ? a * g : A(0);
  }
};

// With t = tanh(softplus(x)): d/dx [x t] = t + x (1 - t^2) sigmoid(x).
struct MishGradF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    const A t = MTanh(SoftplusOf(x));
    return g * (t + x * (A(1) - t * t) * SigmoidOf(x));
  }
};

// The trigonometric and hyperbolic family, Softsign, Selu, Celu, ThresholdedRelu, Shrink, Swish
// and HardSwish, from the saved input x.
// clang-format off
A8_GRAD_BODY(Tan, x, g * (A(1) + MTan(x) * MTan(x)))
A8_GRAD_BODY(Asin, x, g / MSqrt(A(1) - x * x))
A8_GRAD_BODY(Acos, x, -g / MSqrt(A(1) - x * x))
A8_GRAD_BODY(Atan, x, g / (A(1) + x * x))
A8_GRAD_BODY(Sinh, x, g * MCosh(x))
A8_GRAD_BODY(Cosh, x, g * MSinh(x))
A8_GRAD_BODY(Asinh, x, g / MSqrt(x * x + A(1)))
A8_GRAD_BODY(Acosh, x, g / MSqrt(x * x - A(1)))
A8_GRAD_BODY(Atanh, x, g / (A(1) - x * x))
A8_GRAD_BODY(Softsign, x, g / ((A(1) + MAbs(x)) * (A(1) + MAbs(x))))
A8_GRAD_BODY(Selu, x, static_cast<A>(at.gamma) *
                          (x > A(0) ? g : static_cast<A>(at.alpha) * MExp(x) * g))
A8_GRAD_BODY(Celu, x, x > A(0) ? g : MExp(x / static_cast<A>(at.alpha)) * g)
A8_GRAD_BODY(ThresholdedRelu, x, x > static_cast<A>(at.alpha) ? g : A(0))
A8_GRAD_BODY(Shrink, x, x < -static_cast<A>(at.lambd) || x > static_cast<A>(at.lambd) ? g : A(0))
A8_GRAD_BODY(HardSwish, x, x < A(-3) ? A(0) : (x > A(3) ? g : g * (x / A(3) + A(0.5))))
// clang-format on
// d/dx [x s(a x)] = s + a x s (1 - s), s = sigmoid(a x).
struct SwishGradF {
  UnaryAttrs at;
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    const A a = static_cast<A>(at.alpha);
    const A s = SigmoidOf(a * x);
    return g * (s + a * x * s * (A(1) - s));
  }
};

// ---- the enums every backend shares (generated from the lists) and the lists' columns.
enum class UnaryKind : int32_t {
#define A8_X(Name, Types, Cost, Fused) k##Name,
  A8_UNARY_OPS(A8_X)
#undef A8_X
};
enum class ActGradKind : int32_t {
#define A8_X(Name, Reads, Cost, Fused) k##Name,
  A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
};
enum class UnaryTypes { kFloat, kSigned, kNumeric, kPredicate, kBool, kVariant };
enum class GradReads { kOutput, kInput, kVariant };

}  // namespace a8

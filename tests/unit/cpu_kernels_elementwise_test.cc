#include <cmath>
#include <functional>
#include <string>

#include "compiler/ir/types.h"  // kAllDTypes (inline: links nothing of the compiler)
#include "kernels/common/philox.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_mode.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using namespace testing;  // cpu::testing: Buffer, ExpectClose, ExpectRoundedExactly, FromValues,
                          // MakeBuffer, RandomBuffer, Values

struct UnaryCase {
  UnaryOp op;
  double lo, hi;
  std::function<double(double)> ref;
  bool exact;  // correctly rounded in every dtype: compared bit for bit
  UnaryAttrs attrs = {};
};

std::vector<UnaryCase> UnaryCases() {
  const double k = std::sqrt(2.0 / M_PI);
  return {
      {UnaryOp::kAbs, -3, 3, [](double x) { return std::fabs(x); }, true},
      {UnaryOp::kNeg, -3, 3, [](double x) { return -x; }, true},
      {UnaryOp::kRelu, -3, 3, [](double x) { return x > 0 ? x : 0; }, true},
      {UnaryOp::kSigmoid, -6, 6, [](double x) { return 1 / (1 + std::exp(-x)); }, false},
      {UnaryOp::kTanh, -3, 3, [](double x) { return std::tanh(x); }, false},
      {UnaryOp::kExp, -4, 4, [](double x) { return std::exp(x); }, false},
      {UnaryOp::kLog, 0.05, 9, [](double x) { return std::log(x); }, false},
      {UnaryOp::kSqrt, 0.01, 9, [](double x) { return std::sqrt(x); }, true},
      {UnaryOp::kReciprocal, 0.1, 9, [](double x) { return 1 / x; }, true},
      {UnaryOp::kErf, -3, 3, [](double x) { return std::erf(x); }, false},
      {UnaryOp::kFloor, -9, 9, [](double x) { return std::floor(x); }, true},
      {UnaryOp::kCeil, -9, 9, [](double x) { return std::ceil(x); }, true},
      {UnaryOp::kSin, -3, 3, [](double x) { return std::sin(x); }, false},
      {UnaryOp::kCos, -3, 3, [](double x) { return std::cos(x); }, false},
      {UnaryOp::kLeakyRelu,
       -3,
       3,
       [](double x) { return x >= 0 ? x : double(0.01f) * x; },
       false,
       {0.01f, 0.0f}},
      {UnaryOp::kElu,
       -3,
       3,
       [](double x) { return x >= 0 ? x : double(0.7f) * std::expm1(x); },
       false,
       {0.7f, 0.0f}},
      {UnaryOp::kGelu, -4, 4, [](double x) { return 0.5 * x * std::erfc(-x / M_SQRT2); }, false},
      {UnaryOp::kGeluTanh, -4, 4,
       [k](double x) { return x / (1 + std::exp(-2 * k * (x + 0.044715 * x * x * x))); }, false},
      {UnaryOp::kSoftplus, -30, 30, [](double x) { return std::log1p(std::exp(x)); }, false},
      {UnaryOp::kHardSigmoid,
       -4,
       4,
       [](double x) { return std::fmax(0, std::fmin(1, 0.25 * x + 0.5)); },
       false,
       {0.25f, 0.5f}},
      {UnaryOp::kSign, -3, 3, [](double x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }, true},
  };
}

// Both modes: the fast one runs Erf and Gelu as polynomials, the reference the shared body.
TEST(CpuKernelUnaryTest, FloatOpsMatchFloat64Reference) {
  std::mt19937_64 rng(1);
  for (KernelMode mode : {KernelMode::kReference, KernelMode::kFast}) {
    ScopedKernelMode scoped(mode);
    for (const UnaryCase& c : UnaryCases()) {
      for (DType dt : testing::kFloatDTypes) {
        for (int64_t n : {1, 3, 17, 65, 4099}) {
          SCOPED_TRACE(std::to_string(static_cast<int>(c.op)) + " " + ElemName(dt) +
                       " n=" + std::to_string(n));
          Buffer x = RandomBuffer(dt, {n}, rng, c.lo, c.hi);
          Buffer y = MakeBuffer(dt, {n});
          ASSERT_TRUE(Unary(c.op, dt, n, x.data(), y.data(), c.attrs).ok());
          std::vector<double> want;
          for (double v : Values(x)) want.push_back(c.ref(v));
          if (c.exact) {
            ExpectRoundedExactly(y, want);
          } else {
            double tol = dt == DType::kF64 ? 1e-13 : 2 * testing::ToleranceFor(dt);
            ExpectClose(y, want, tol, nullptr, 1e-5);
          }
        }
      }
    }
  }
}

TEST(CpuKernelUnaryTest, IntegerOpsAndPredicates) {
  Buffer x = FromValues(DType::kI32, {5}, {-7, 0, 3, -1, 12});
  Buffer y = MakeBuffer(DType::kI32, {5});
  ASSERT_TRUE(Unary(UnaryOp::kAbs, DType::kI32, 5, x.data(), y.data()).ok());
  EXPECT_EQ(Values(y), (std::vector<double>{7, 0, 3, 1, 12}));
  ASSERT_TRUE(Unary(UnaryOp::kSign, DType::kI32, 5, x.data(), y.data()).ok());
  EXPECT_EQ(Values(y), (std::vector<double>{-1, 0, 1, -1, 1}));
  ASSERT_TRUE(Unary(UnaryOp::kRelu, DType::kI32, 5, x.data(), y.data()).ok());
  EXPECT_EQ(Values(y), (std::vector<double>{0, 0, 3, 0, 12}));
  EXPECT_FALSE(Unary(UnaryOp::kExp, DType::kI32, 5, x.data(), y.data()).ok());

  Buffer f = FromValues(DType::kF16, {4}, {NAN, INFINITY, -INFINITY, 1.5});
  Buffer b = MakeBuffer(DType::kBool, {4});
  ASSERT_TRUE(Unary(UnaryOp::kIsNaN, DType::kF16, 4, f.data(), b.data()).ok());
  EXPECT_EQ(Values(b), (std::vector<double>{1, 0, 0, 0}));
  UnaryAttrs neg_only;
  neg_only.detect_positive = false;
  ASSERT_TRUE(Unary(UnaryOp::kIsInf, DType::kF16, 4, f.data(), b.data(), neg_only).ok());
  EXPECT_EQ(Values(b), (std::vector<double>{0, 0, 1, 0}));
  Buffer nb = MakeBuffer(DType::kBool, {4});
  ASSERT_TRUE(Unary(UnaryOp::kNot, DType::kBool, 4, b.data(), nb.data()).ok());
  EXPECT_EQ(Values(nb), (std::vector<double>{1, 1, 0, 1}));
}

// Gelu's float path is a polynomial erfc, not libm: check it tightly (relative error, no
// absolute floor) over the whole range, tails included, on random values in several widths
// (odd sizes exercise the vector loop's remainder), in place, and with the special values.
TEST(CpuKernelUnaryTest, GeluIsRelativelyAccurateInTheTails) {
  std::mt19937_64 rng(7);
  ScopedKernelMode fast(KernelMode::kFast);
  auto ref = [](double x) { return 0.5 * x * std::erfc(-x / M_SQRT2); };
  for (double range : {0.5, 3.0, 9.0, 12.0}) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (int64_t n : {1, 7, 33, 1031, 20001}) {
        SCOPED_TRACE(std::string(ElemName(dt)) + " range=" + std::to_string(range) +
                     " n=" + std::to_string(n));
        Buffer x = RandomBuffer(dt, {n}, rng, -range, range);
        Buffer y = MakeBuffer(dt, {n});
        ASSERT_TRUE(Unary(UnaryOp::kGelu, dt, n, x.data(), y.data()).ok());
        std::vector<double> want;
        for (double v : Values(x)) want.push_back(ref(v));
        // f32: a few ulp; f16/bf16: one rounding of an accurate float.
        const double tol = dt == DType::kF32 ? 2e-6 : testing::ToleranceFor(dt);
        ExpectClose(y, want, tol, nullptr, dt == DType::kF16 ? 1e-4 : 1e-30);
        ASSERT_TRUE(Unary(UnaryOp::kGelu, dt, n, x.data(), x.data()).ok());
        EXPECT_EQ(Values(x), Values(y));  // in place gives the same bits
      }
    }
  }
  Buffer s = FromValues(DType::kF32, {6}, {NAN, INFINITY, -INFINITY, 0.0, 14.0, -14.0});
  Buffer g = MakeBuffer(DType::kF32, {6});
  ASSERT_TRUE(Unary(UnaryOp::kGelu, DType::kF32, 6, s.data(), g.data()).ok());
  std::vector<double> v = Values(g);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], INFINITY);
  EXPECT_EQ(v[2], 0.0);
  EXPECT_EQ(v[3], 0.0);
  EXPECT_EQ(v[4], 14.0);
  EXPECT_LE(std::fabs(v[5]), 1e-37);
}

// The reference Cast of one value, from its definition (see Cast in elementwise.h).
double RefCast(double v, DType to) {
  auto wrap = [](double t, int bits, bool is_signed) {
    int64_t i = static_cast<int64_t>(t);
    int64_t m = int64_t{1} << bits;
    i = ((i % m) + m) % m;
    if (is_signed && i >= m / 2) i -= m;
    return static_cast<double>(i);
  };
  switch (to) {
    case DType::kBool:
      return v != 0;
    case DType::kI64:
    case DType::kI32:
      return std::trunc(v);
    case DType::kI8:
      return wrap(std::trunc(v), 8, true);
    case DType::kU8:
      return wrap(std::trunc(v), 8, false);
    case DType::kI16:
      return wrap(std::trunc(v), 16, true);
    case DType::kU16:
      return wrap(std::trunc(v), 16, false);
    case DType::kU32:
      return wrap(std::trunc(v), 32, false);
    case DType::kU64:  // -3 stands for 2^64 - 3 (SetValue stores it as its two's complement)
      return std::trunc(v);
    default:
      return v;  // floats: rounded once by ExpectRoundedExactly's reference
  }
}

// Equal takes bool operands (its registry entry lists bool), with broadcasting.
TEST(CpuKernelBinaryTest, EqualOnBool) {
  const bool a[] = {true, false, true, false, true, true};
  const bool b[] = {true, false, false};
  bool y[6];
  ASSERT_TRUE(Binary(BinaryOp::kEqual, DType::kBool, {2, 3}, a, DType::kBool, {3}, b, y).ok());
  const bool want[] = {true, true, false, false, false, false};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]) << i;
  EXPECT_FALSE(Binary(BinaryOp::kLess, DType::kBool, {3}, b, DType::kBool, {3}, b, y).ok());
}

TEST(CpuKernelCastTest, AllPairsMatchDefinitionBitForBit) {
  std::mt19937_64 rng(2);
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      SCOPED_TRACE(std::string(ElemName(from)) + "->" + ElemName(to));
      const int64_t n = 513;
      // Wide enough to wrap when narrowing to i8/u8, within the source type's own range.
      const bool is_unsigned =
          from == DType::kU8 || from == DType::kU16 || from == DType::kU32 || from == DType::kU64;
      double lo = is_unsigned ? 0 : (from == DType::kI8 ? -128 : -300);
      double hi = from == DType::kU8 ? 256 : (from == DType::kI8 ? 128 : 300);
      Buffer x = RandomBuffer(from, {n}, rng, lo, hi);
      Buffer y = MakeBuffer(to, {n});
      ASSERT_TRUE(Cast(from, to, n, x.data(), y.data()).ok());
      std::vector<double> want;
      for (double v : Values(x)) want.push_back(RefCast(v, to));
      ExpectRoundedExactly(y, want);
    }
  }
}

TEST(CpuKernelCastTest, DoubleAndIntegersToHalfRoundOnce) {
  // Values whose double rounding through float would differ from one rounding to f16/bf16.
  std::vector<double> v = {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),
                           -(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)),
                           65519.99,
                           65520.0,
                           1e-8,
                           3.0e38,
                           1.0 / 3};
  Buffer x = FromValues(DType::kF64, {7}, v);
  for (DType to : {DType::kF16, DType::kBF16}) {
    Buffer y = MakeBuffer(to, {7});
    ASSERT_TRUE(Cast(DType::kF64, to, 7, x.data(), y.data()).ok());
    ExpectRoundedExactly(y, v);
  }
  std::vector<double> iv = {16777217.0 * 4 + 1, 2049, -2051, 65535, 1 << 30};
  Buffer xi = FromValues(DType::kI64, {5}, iv);
  for (DType to : {DType::kF16, DType::kBF16, DType::kF32}) {
    Buffer y = MakeBuffer(to, {5});
    ASSERT_TRUE(Cast(DType::kI64, to, 5, xi.data(), y.data()).ok());
    ExpectRoundedExactly(y, iv);
  }
}

TEST(CpuKernelCastTest, NaNAndOutOfRangeMatchOnnxRuntime) {
  // From onnxruntime 1.x CPU on x86-64 for these float inputs.
  std::vector<double> v = {NAN,  INFINITY, -INFINITY, -1.5, 300.7, -300.7, 3e9,
                           -3e9, 1e20,     2.5,       -0.5, 127.9, -129.0};
  Buffer x = FromValues(DType::kF32, {13}, v);
  struct Want {
    DType to;
    std::vector<double> values;
  };
  const double i32min = -2147483648.0, i64min = -9223372036854775808.0;
  std::vector<Want> wants = {
      {DType::kI8, {0, 0, 0, -1, 44, -44, 0, 0, 0, 2, 0, 127, 127}},
      {DType::kU8, {0, 0, 0, 255, 44, 212, 0, 0, 0, 2, 0, 127, 127}},
      {DType::kI32,
       {i32min, i32min, i32min, -1, 300, -300, i32min, i32min, i32min, 2, 0, 127, -129}},
      {DType::kI64, {i64min, i64min, i64min, -1, 300, -300, 3e9, -3e9, i64min, 2, 0, 127, -129}},
      {DType::kBool, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
  };
  for (const Want& w : wants) {
    Buffer y = MakeBuffer(w.to, {13});
    ASSERT_TRUE(Cast(DType::kF32, w.to, 13, x.data(), y.data()).ok());
    EXPECT_EQ(Values(y), w.values) << ElemName(w.to);
  }
}

struct BinaryCase {
  BinaryOp op;
  std::function<double(double, double)> ref;
  bool exact;
};

TEST(CpuKernelBinaryTest, FloatOpsBroadcastAgainstFloat64) {
  std::vector<BinaryCase> cases = {
      {BinaryOp::kAdd, [](double a, double b) { return a + b; }, true},
      {BinaryOp::kSub, [](double a, double b) { return a - b; }, true},
      {BinaryOp::kMul, [](double a, double b) { return a * b; }, true},
      {BinaryOp::kDiv, [](double a, double b) { return a / b; }, true},
      {BinaryOp::kPow, [](double a, double b) { return std::pow(a, b); }, false},
      {BinaryOp::kFMod, [](double a, double b) { return std::fmod(a, b); }, true},
      {BinaryOp::kMod,
       [](double a, double b) {
         double r = std::fmod(a, b);
         return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
       },
       false},
      {BinaryOp::kMax, [](double a, double b) { return std::max(a, b); }, true},
      {BinaryOp::kMin, [](double a, double b) { return std::min(a, b); }, true},
      {BinaryOp::kLess, [](double a, double b) { return double(a < b); }, true},
      {BinaryOp::kGreaterOrEqual, [](double a, double b) { return double(a >= b); }, true},
      {BinaryOp::kEqual, [](double a, double b) { return double(a == b); }, true},
      {BinaryOp::kGreater, [](double a, double b) { return double(a > b); }, true},
      {BinaryOp::kLessOrEqual, [](double a, double b) { return double(a <= b); }, true},
  };
  std::vector<std::pair<Dims, Dims>> shapes = {
      {{17}, {17}}, {{3, 17}, {17}},      {{1, 65}, {5, 1}},  {{2, 3, 4}, {2, 1, 4}},
      {{}, {3, 1}}, {{65, 33}, {65, 33}}, {{257, 513}, {513}}};
  std::mt19937_64 rng(3);
  for (const BinaryCase& c : cases) {
    for (DType dt : testing::kFloatDTypes) {
      for (const auto& [ad, bd] : shapes) {
        SCOPED_TRACE(std::to_string(static_cast<int>(c.op)) + " " + ElemName(dt));
        const bool pow = c.op == BinaryOp::kPow;
        Buffer a = RandomBuffer(dt, ad, rng, pow ? 0.1 : -4, 4);
        Buffer b = RandomBuffer(dt, bd, rng, pow ? -2 : 0.25, 2);
        if (c.op == BinaryOp::kEqual) b = a.dims == bd ? a : b;
        Dims od = *BroadcastDims({ad, bd}, "test");
        DType out_dt = BinaryOutputIsBool(c.op) ? DType::kBool : dt;
        Buffer y = MakeBuffer(out_dt, od);
        ASSERT_TRUE(Binary(c.op, dt, ad, a.data(), dt, bd, b.data(), y.data()).ok());
        std::vector<double> av = Values(a), bv = Values(b), want;
        for (int64_t i = 0; i < y.size(); ++i) {
          want.push_back(c.ref(av[testing::BroadcastSource(od, ad, i)],
                               bv[testing::BroadcastSource(od, bd, i)]));
        }
        if (c.exact)
          ExpectRoundedExactly(y, want);
        else
          ExpectClose(y, want, 2 * testing::ToleranceFor(dt), nullptr, 1e-2);
      }
    }
  }
}

TEST(CpuKernelBinaryTest, IntegerOpsAndMixedPow) {
  Buffer a = FromValues(DType::kI64, {6}, {7, -7, 7, -7, 9, 0});
  Buffer b = FromValues(DType::kI64, {6}, {2, 2, -2, -2, 0, 3});
  Buffer y = MakeBuffer(DType::kI64, {6});
  ASSERT_TRUE(
      Binary(BinaryOp::kDiv, DType::kI64, {6}, a.data(), DType::kI64, {6}, b.data(), y.data())
          .ok());
  EXPECT_EQ(Values(y), (std::vector<double>{3, -3, -3, 3, 0, 0}));
  ASSERT_TRUE(
      Binary(BinaryOp::kMod, DType::kI64, {6}, a.data(), DType::kI64, {6}, b.data(), y.data())
          .ok());
  EXPECT_EQ(Values(y), (std::vector<double>{1, 1, -1, -1, 0, 0}));
  ASSERT_TRUE(
      Binary(BinaryOp::kFMod, DType::kI64, {6}, a.data(), DType::kI64, {6}, b.data(), y.data())
          .ok());
  EXPECT_EQ(Values(y), (std::vector<double>{1, -1, 1, -1, 0, 0}));
  ASSERT_TRUE(
      Binary(BinaryOp::kPow, DType::kI64, {6}, a.data(), DType::kI64, {6}, b.data(), y.data())
          .ok());
  EXPECT_EQ(Values(y), (std::vector<double>{49, 49, 0, 0, 1, 0}));

  Buffer x = FromValues(DType::kF16, {3}, {1.5, -2.0, 3.0});
  Buffer e = FromValues(DType::kF32, {1}, {2.0});
  Buffer p = MakeBuffer(DType::kF16, {3});
  ASSERT_TRUE(
      Binary(BinaryOp::kPow, DType::kF16, {3}, x.data(), DType::kF32, {1}, e.data(), p.data())
          .ok());
  EXPECT_EQ(Values(p), (std::vector<double>{2.25, 4.0, 9.0}));
  EXPECT_FALSE(
      Binary(BinaryOp::kAdd, DType::kF16, {3}, x.data(), DType::kF32, {1}, e.data(), p.data())
          .ok());
  EXPECT_FALSE(
      Binary(BinaryOp::kAdd, DType::kF16, {3}, x.data(), DType::kF16, {2}, x.data(), p.data())
          .ok());

  Buffer cmp = MakeBuffer(DType::kBool, {6});
  ASSERT_TRUE(Binary(BinaryOp::kLessOrEqual, DType::kI64, {6}, a.data(), DType::kI64, {6}, b.data(),
                     cmp.data())
                  .ok());
  EXPECT_EQ(Values(cmp), (std::vector<double>{0, 1, 0, 1, 0, 1}));

  Buffer t = FromValues(DType::kBool, {2, 2}, {1, 1, 0, 0});
  Buffer u = FromValues(DType::kBool, {2}, {1, 0});
  Buffer r = MakeBuffer(DType::kBool, {2, 2});
  ASSERT_TRUE(
      Binary(BinaryOp::kXor, DType::kBool, {2, 2}, t.data(), DType::kBool, {2}, u.data(), r.data())
          .ok());
  EXPECT_EQ(Values(r), (std::vector<double>{0, 1, 1, 0}));
}

TEST(CpuKernelWhereTest, BroadcastsThreeWays) {
  std::mt19937_64 rng(4);
  Buffer c = RandomBuffer(DType::kBool, {3, 1}, rng);
  Buffer x = RandomBuffer(DType::kBF16, {17}, rng);
  Buffer y = RandomBuffer(DType::kBF16, {2, 3, 17}, rng);
  Buffer o = MakeBuffer(DType::kBF16, {2, 3, 17});
  ASSERT_TRUE(Where({3, 1}, static_cast<const bool*>(c.data()), DType::kBF16, {17}, x.data(),
                    {2, 3, 17}, y.data(), o.data())
                  .ok());
  std::vector<double> cv = Values(c), xv = Values(x), yv = Values(y), want;
  for (int64_t i = 0; i < o.size(); ++i) {
    want.push_back(cv[(i / 17) % 3] ? xv[i % 17] : yv[i]);
  }
  ExpectRoundedExactly(o, want);
}

TEST(CpuKernelClipTest, BoundsAreOptional) {
  std::mt19937_64 rng(5);
  for (DType dt : {DType::kF32, DType::kF16, DType::kI32}) {
    Buffer x = RandomBuffer(dt, {65}, rng, -5, 5);
    Buffer lo = FromValues(dt, {1}, {-1});
    Buffer hi = FromValues(dt, {1}, {2});
    Buffer y = MakeBuffer(dt, {65});
    ASSERT_TRUE(Clip(dt, 65, x.data(), lo.data(), hi.data(), y.data()).ok());
    std::vector<double> want;
    for (double v : Values(x)) want.push_back(std::min(2.0, std::max(-1.0, v)));
    ExpectRoundedExactly(y, want);
    ASSERT_TRUE(Clip(dt, 65, x.data(), nullptr, hi.data(), y.data()).ok());
    want.clear();
    for (double v : Values(x)) want.push_back(std::min(2.0, v));
    ExpectRoundedExactly(y, want);
  }
}

TEST(CpuKernelDropoutTest, MaskComesFromPhiloxAndScales) {
  std::mt19937_64 rng(6);
  const int64_t n = 10007;
  for (DType dt : {DType::kF32, DType::kF16}) {
    Buffer x = RandomBuffer(dt, {n}, rng, 0.5, 2);
    Buffer y = MakeBuffer(dt, {n});
    std::vector<unsigned char> mask_bytes(n);
    bool* mask = reinterpret_cast<bool*>(mask_bytes.data());
    ASSERT_TRUE(Dropout(dt, n, x.data(), 0.3f, true, 1234, 77, y.data(), mask).ok());
    std::vector<double> xv = Values(x), want;
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      bool keep = DropoutKeep(1234, 77, i, 0.3f);
      ASSERT_EQ(mask[i], keep);
      kept += keep;
      want.push_back(keep ? double(float(xv[i]) * (1.0f / 0.7f)) : 0.0);
    }
    ExpectRoundedExactly(y, want);
    EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.02);
    ASSERT_TRUE(Dropout(dt, n, x.data(), 0.3f, false, 1234, 77, y.data(), mask).ok());
    ExpectRoundedExactly(y, xv);
  }
}

TEST(CpuKernelPhiloxTest, KnownAnswerVectors) {
  struct Kat {
    Philox4x32 ctr;
    uint32_t k0, k1;
    Philox4x32 want;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Kat& k : kats) {
    Philox4x32 got = Philox4x32_10(k.ctr, k.k0, k.k1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], k.want.v[i]) << "word " << i;
  }
  // Element i of a stream is lane i % 4 of block i / 4.
  Philox4x32 block = Philox4x32_10({{2, 0, 5, 0}}, 9, 0);
  EXPECT_EQ(PhiloxBits(9, 5, 10), block.v[2]);
}

}  // namespace
}  // namespace a8::cpu

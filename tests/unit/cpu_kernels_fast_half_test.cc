// The fast mode's f16/bf16 kernels (kernels/cpu/fast_convert.h: blocks converted to float in
// vector registers, f32 math, one rounding of each output) against the reference kernels on
// random data, within each dtype's tolerance (cpu_kernels_test_util.h); and the vector
// conversions against the scalar bodies of kernels/common/float16.h, bit for bit (NaN payloads
// aside, for f16). Where the CPU has neither AVX-512F nor F16C+AVX2, the conversion tests that
// exist to check the vector code skip and say so; the kernel tests then check the scalar
// fallback.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/float16.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/fused.h"
#include "kernels/cpu/grad_conv_pool.h"
#include "kernels/cpu/grad_math.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/optim.h"
#include "kernels/cpu/pool.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using testing::Buffer;
using testing::ConversionBoundaryInputs;
using testing::ExpectClose;
using testing::IsHalfNaN;
using testing::MakeBuffer;
using testing::PoolCase;
using testing::RandomBuffer;
using testing::Values;

bool HasVectorConversions() { return std::string(FastConvertIsa()) != "scalar"; }

#define A8_SKIP_WITHOUT_VECTOR_CONVERSIONS()                                             \
  if (!HasVectorConversions()) {                                                         \
    GTEST_SKIP() << "this CPU has neither AVX-512F nor F16C+AVX2: the fast kernels run " \
                    "the scalar conversions, checked by the kernel tests";               \
  }

// Every f16 bit pattern widens to the scalar body's float (NaN: a NaN), at every offset of the
// vector loop and its tail.
TEST(FastConvertTest, HalfToFloatMatchesScalarForAllPatterns) {
  A8_SKIP_WITHOUT_VECTOR_CONVERSIONS();
  testing::ExpectEveryHalfPatternWidensAsScalar(7, 3);
}

// The boundary floats of f16 and bf16, then random bit patterns, with a length that leaves a tail.
std::vector<float> ConversionInputs() {
  std::vector<float> v = ConversionBoundaryInputs(7, 13, 7, 100000);
  v.push_back(1.0f);
  return v;
}

// `x` through the vector conversion `convert` (FloatToHalf, BFloat16ToFloat, ...).
template <typename From, typename To>
std::vector<To> VectorConverted(void (*convert)(const From*, To*, int64_t),
                                const std::vector<From>& x) {
  std::vector<To> y(x.size());
  convert(x.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

TEST(FastConvertTest, FloatToHalfMatchesScalar) {
  A8_SKIP_WITHOUT_VECTOR_CONVERSIONS();
  const std::vector<float> x = ConversionInputs();
  const std::vector<Half> h = VectorConverted(FloatToHalf, x);
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t want = FloatToHalfBits(x[i]);
    if (std::isnan(x[i])) {
      ASSERT_TRUE(IsHalfNaN(h[i].bits)) << "input " << x[i];
    } else {
      ASSERT_EQ(h[i].bits, want) << "input " << x[i] << " (bits " << FloatToBits(x[i]) << ")";
    }
  }
}

TEST(FastConvertTest, BFloat16MatchesScalarExactly) {
  A8_SKIP_WITHOUT_VECTOR_CONVERSIONS();
  const std::vector<float> x = ConversionInputs();
  const std::vector<BFloat16> b = VectorConverted(FloatToBFloat16, x);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(b[i].bits, FloatToBFloat16Bits(x[i])) << "input bits " << FloatToBits(x[i]);
  }
  const std::vector<float> back = VectorConverted(BFloat16ToFloat, b);
  for (size_t i = 0; i < b.size(); ++i) {
    ASSERT_EQ(FloatToBits(back[i]), FloatToBits(BFloat16BitsToFloat(b[i].bits)));
  }
}

// The kernels: the same call in the reference and the fast mode, compared within the dtype's
// tolerance. Sizes are not multiples of the blocks or of the vector width.
class FastHalfKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { RecordProperty("conversions", FastConvertIsa()); }
  std::mt19937_64 rng_{2020};
};

// Runs f(out) in both modes into two buffers of `dims` and compares them.
template <typename F>
void CompareModes(DType t, const Dims& dims, double tol, F f) {
  Buffer ref = MakeBuffer(t, dims), fast = MakeBuffer(t, dims);
  ASSERT_TRUE(f(ref.data()).ok());
  {
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(f(fast.data()).ok());
  }
  ExpectClose(fast, Values(ref), tol);
}

TEST_P(FastHalfKernelTest, UnaryMatchesReference) {
  const DType t = GetParam();
  const int64_t n = 3 * kF32Block + 37;
  Buffer x = RandomBuffer(t, {n}, rng_, -4.0, 4.0);
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kGelu, UnaryOp::kErf, UnaryOp::kTanh,
                     UnaryOp::kSigmoid, UnaryOp::kExp}) {
    SCOPED_TRACE(static_cast<int>(op));
    CompareModes(t, {n}, testing::ToleranceFor(t),
                 [&](void* y) { return Unary(op, t, n, x.data(), y); });
  }
}

TEST_P(FastHalfKernelTest, BinaryMatchesReference) {
  const DType t = GetParam();
  // Both contiguous, a broadcast row (bias), a broadcast column (scalar per row), and a
  // strided pattern the block path leaves to the element loop.
  struct Case {
    Dims a, b;
  };
  const Case cases[] = {{{7, 300}, {7, 300}},
                        {{9, 1100}, {1100}},
                        {{5, 700}, {5, 1}},
                        {{6, 1}, {1, 40}},
                        {{4, 3, 50}, {4, 1, 50}}};
  for (const Case& c : cases) {
    Buffer a = RandomBuffer(t, c.a, rng_), b = RandomBuffer(t, c.b, rng_, 0.5, 2.0);
    Dims out;
    for (size_t i = 0; i < c.a.size(); ++i) {
      // b is aligned to a's last dims; a dim b lacks broadcasts as 1.
      const size_t lead = c.a.size() - c.b.size();
      out.push_back(std::max(c.a[i], i < lead ? int64_t{1} : c.b[i - lead]));
    }
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
      CompareModes(t, out, testing::ToleranceFor(t),
                   [&](void* y) { return Binary(op, t, c.a, a.data(), t, c.b, b.data(), y); });
    }
  }
}

TEST_P(FastHalfKernelTest, ActivationGradMatchesReference) {
  const DType t = GetParam();
  const int64_t n = 2 * kF32Block + 129;
  Buffer dy = RandomBuffer(t, {n}, rng_), z = RandomBuffer(t, {n}, rng_, -3.0, 3.0);
  for (ActivationGradOp op :
       {ActivationGradOp::kRelu, ActivationGradOp::kGelu, ActivationGradOp::kTanh}) {
    SCOPED_TRACE(static_cast<int>(op));
    CompareModes(t, {n}, testing::ToleranceFor(t),
                 [&](void* dx) { return ActivationGrad(op, t, n, dy.data(), z.data(), dx); });
  }
}

// The fast mode's Relu and its gradient work on the bits: every f16/bf16 pattern gives the
// reference's bits (NaN: a NaN), +0 for -0 and every negative number; the gradient passes dy
// where y > 0 (every y pattern against random dy) and writes +0 elsewhere.
TEST_P(FastHalfKernelTest, ReluAndItsGradientOnEveryBitPatternMatchReference) {
  const DType t = GetParam();
  const int64_t n = 65536;
  Buffer x = MakeBuffer(t, {n}), dy = RandomBuffer(t, {n}, rng_);
  for (int64_t i = 0; i < n; ++i) {
    const auto bits = static_cast<uint16_t>(i);
    std::memcpy(x.bytes.data() + 2 * i, &bits, 2);
  }
  auto is_nan = [t](uint16_t h) {
    return t == DType::kF16 ? IsHalfNaN(h) : (h & 0x7fffu) > 0x7f80u;
  };
  auto expect_same_bits = [&](const Buffer& fast, const Buffer& ref, const char* what) {
    int failures = 0;
    for (int64_t i = 0; i < n && failures < 5; ++i) {
      uint16_t f, r;
      std::memcpy(&f, fast.bytes.data() + 2 * i, 2);
      std::memcpy(&r, ref.bytes.data() + 2 * i, 2);
      if (is_nan(r) ? !is_nan(f) : f != r) {
        ADD_FAILURE() << what << " of pattern " << i << ": fast " << f << ", reference " << r;
        ++failures;
      }
    }
  };
  Buffer ref = MakeBuffer(t, {n}), fast = MakeBuffer(t, {n});
  ASSERT_TRUE(Unary(UnaryOp::kRelu, t, n, x.data(), ref.data()).ok());
  {
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(Unary(UnaryOp::kRelu, t, n, x.data(), fast.data()).ok());
  }
  expect_same_bits(fast, ref, "Relu");
  ASSERT_TRUE(ActivationGrad(ActivationGradOp::kRelu, t, n, dy.data(), x.data(), ref.data()).ok());
  {
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(
        ActivationGrad(ActivationGradOp::kRelu, t, n, dy.data(), x.data(), fast.data()).ok());
  }
  expect_same_bits(fast, ref, "ReluGrad");
}

TEST_P(FastHalfKernelTest, CastMatchesReferenceExactly) {
  const DType t = GetParam();
  const int64_t n = 4 * kF32Block + 3;
  Buffer x = RandomBuffer(DType::kF32, {n}, rng_, -70000.0, 70000.0);
  // To the low type: the same rounding, so the same bits (no NaN here).
  CompareModes(t, {n}, 0.0, [&](void* y) { return Cast(DType::kF32, t, n, x.data(), y); });
  Buffer h = RandomBuffer(t, {n}, rng_);
  CompareModes(DType::kF32, {n}, 0.0,
               [&](void* y) { return Cast(t, DType::kF32, n, h.data(), y); });
}

// a8.FusedElementwise: (x + bias) * s, Relu'd, with a broadcast scalar, in and out of the low
// type and from the low type to f32.
TEST_P(FastHalfKernelTest, FusedElementwiseMatchesReference) {
  const DType t = GetParam();
  const int64_t n = 5 * 128 + 77;
  FusedProgram p{};
  p.num_inputs = 3;
  p.num_instrs = 3;
  p.num_consts = 0;
  const int32_t code[3][4] = {{kFusedAdd, 3, 0, 1}, {kFusedMul, 4, 3, 2}, {kFusedRelu, 5, 4, 0}};
  std::memcpy(p.code, code, sizeof(code));
  Buffer x = RandomBuffer(t, {n}, rng_), bias = RandomBuffer(t, {n}, rng_),
         s = RandomBuffer(t, {1}, rng_, 0.5, 1.5);
  const void* inputs[3] = {x.data(), bias.data(), s.data()};
  const int64_t counts[3] = {n, n, 1};
  for (DType out : {t, DType::kF32}) {
    CompareModes(out, {n}, testing::ToleranceFor(t),
                 [&](void* y) { return FusedElementwise(p, t, inputs, counts, out, n, y); });
  }
}

// a8.FusedMatMul's epilogues in the low type (the product itself is FastGemmTest's).
TEST_P(FastHalfKernelTest, FusedMatMulEpilogueMatchesReference) {
  const DType t = GetParam();
  for (int32_t epilogue : {kEpilogueBiasGelu, kEpilogueBiasRelu, kEpilogueDGelu}) {
    const FusedMatMulParams p = testing::FusedMatMulOf(t, 19, 600, 24, epilogue);
    Buffer a = RandomBuffer(t, {p.m, p.k}, rng_, -0.5, 0.5), b = RandomBuffer(t, {p.k, p.n}, rng_);
    Buffer bias = RandomBuffer(t, {p.n}, rng_), aux = RandomBuffer(t, {p.m, p.n}, rng_);
    const bool has_bias = EpilogueHasBias(epilogue), backward = EpilogueIsBackward(epilogue);
    // The product's own rounding differs between the paths: compare on its scale (k terms).
    std::vector<double> mag(static_cast<size_t>(p.m * p.n), p.k + 2.0);
    Buffer ref = MakeBuffer(t, {p.m, p.n}), fast = MakeBuffer(t, {p.m, p.n});
    Buffer ref1 = MakeBuffer(t, {p.m, p.n}), fast1 = MakeBuffer(t, {p.m, p.n});
    ASSERT_TRUE(FusedMatMul(p, a.data(), b.data(), has_bias ? bias.data() : nullptr,
                            backward ? aux.data() : nullptr, ref.data(),
                            backward ? nullptr : ref1.data())
                    .ok());
    {
      ScopedKernelMode mode(KernelMode::kFast);
      ASSERT_TRUE(FusedMatMul(p, a.data(), b.data(), has_bias ? bias.data() : nullptr,
                              backward ? aux.data() : nullptr, fast.data(),
                              backward ? nullptr : fast1.data())
                      .ok());
    }
    ExpectClose(fast, Values(ref), 2 * testing::ToleranceFor(t), &mag);
    if (!backward) ExpectClose(fast1, Values(ref1), 2 * testing::ToleranceFor(t), &mag);
  }
}

// Conv, ConvTranspose (dX) and a8.ConvGradFilter (dW): in the fast mode an f16 convolution that
// oneDNN declines runs the f32 fast path on converted operands (in_f32.h).
TEST_P(FastHalfKernelTest, ConvolutionsMatchReference) {
  const DType t = GetParam();
  const ConvParams p =
      testing::ParamsOf(testing::Conv2dCase{3, 16, 9, 9, 24, 3, 1, 1, 1, 1, true}, t);
  const Dims x_dims = {3, 16, 9, 9}, w_dims = {24, 16, 3, 3}, y_dims = {3, 24, 9, 9};
  Buffer x = RandomBuffer(t, x_dims, rng_), w = RandomBuffer(t, w_dims, rng_);
  Buffer bias = RandomBuffer(t, {24}, rng_), dy = RandomBuffer(t, y_dims, rng_);
  ConvParams pt = p;  // dX = ConvTranspose(dY, W)
  pt.in_channels = 24;
  pt.out_channels = 16;
  // Scales: the number of products summed per output, values of magnitude about 1.
  const double tol = 2 * testing::ToleranceFor(t);
  {
    std::vector<double> mag(static_cast<size_t>(NumElements(y_dims)), 16 * 9 + 2.0);
    Buffer ref = MakeBuffer(t, y_dims), fast = MakeBuffer(t, y_dims);
    ASSERT_TRUE(Conv(p, x.data(), w.data(), bias.data(), ref.data()).ok());
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(Conv(p, x.data(), w.data(), bias.data(), fast.data()).ok());
    ExpectClose(fast, Values(ref), tol, &mag);
  }
  {
    std::vector<double> mag(static_cast<size_t>(NumElements(x_dims)), 24 * 9);
    Buffer ref = MakeBuffer(t, x_dims), fast = MakeBuffer(t, x_dims);
    ASSERT_TRUE(ConvTranspose(pt, dy.data(), w.data(), nullptr, ref.data()).ok());
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(ConvTranspose(pt, dy.data(), w.data(), nullptr, fast.data()).ok());
    ExpectClose(fast, Values(ref), tol, &mag);
  }
  {
    std::vector<double> mag(static_cast<size_t>(NumElements(w_dims)), 3 * 81);
    Buffer ref = MakeBuffer(t, w_dims), fast = MakeBuffer(t, w_dims);
    ASSERT_TRUE(ConvGradFilter(p, dy.data(), x.data(), ref.data()).ok());
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(ConvGradFilter(p, dy.data(), x.data(), fast.data()).ok());
    ExpectClose(fast, Values(ref), tol, &mag);
  }
}

// Pooling and its gradients: in the fast mode f16/bf16 data runs the f32 loops on converted
// copies (in_f32.h), a block of planes at a time. Maxima and the converted values are exact and the
// sums run in the same order, each rounded once: the same bits as the reference, one element at a
// time.
TEST_P(FastHalfKernelTest, PoolsMatchReferenceBitForBit) {
  const DType t = GetParam();
  // The last case has planes of 960 elements: the f32 route takes it in blocks of a few planes
  // (PlanesInF32), the others in one block.
  for (const PoolCase& c :
       {PoolCase{{3, 5, 9, 8}, {2, 2}, {2, 2}, {}, {}, false, false},
        PoolCase{{3, 5, 9, 8}, {3, 3}, {2, 2}, {}, {1, 1, 1, 0}, false, true},
        PoolCase{{3, 5, 9, 8}, {3, 3}, {1, 1}, {}, {}, false, false},
        PoolCase{{4, 7, 32, 30}, {3, 2}, {2, 2}, {}, {1, 0, 0, 1}, false, false}}) {
    const PoolParams p = ParamsOf(c, t);
    const int64_t batch = c.x[0], channels = c.x[1];
    const Dims out = PoolOutputSpatial(p).value();
    const Dims& x_dims = c.x;
    const Dims y_dims = {batch, channels, out[0], out[1]}, g_dims = {batch, channels};
    const int64_t spatial = c.x[2] * c.x[3];
    Buffer x = RandomBuffer(t, x_dims, rng_), dy = RandomBuffer(t, y_dims, rng_);
    // Runs `f(buffer)` in both modes and expects the same bytes.
    auto same = [&](const Dims& dims, const char* what, auto f) {
      SCOPED_TRACE(what);
      Buffer ref = MakeBuffer(t, dims), fast = MakeBuffer(t, dims);
      ASSERT_TRUE(f(ref.data()).ok());
      ScopedKernelMode mode(KernelMode::kFast);
      ASSERT_TRUE(f(fast.data()).ok());
      EXPECT_EQ(Values(fast), Values(ref));
    };
    same(y_dims, "MaxPool", [&](void* y) { return MaxPool(p, x.data(), y, nullptr); });
    same(y_dims, "AveragePool", [&](void* y) { return AveragePool(p, x.data(), y); });
    same(x_dims, "MaxPoolGrad", [&](void* dx) { return MaxPoolGrad(p, dy.data(), x.data(), dx); });
    same(x_dims, "AveragePoolGrad", [&](void* dx) { return AveragePoolGrad(p, dy.data(), dx); });
    same(g_dims, "GlobalAveragePool",
         [&](void* y) { return GlobalAveragePool(t, batch, channels, spatial, x.data(), y); });
    same(g_dims, "GlobalMaxPool",
         [&](void* y) { return GlobalMaxPool(t, batch, channels, spatial, x.data(), y); });
    // With indices: each mode writes its own (the indices of a block of planes count from the
    // tensor's first plane).
    std::vector<int64_t> ref_at(static_cast<size_t>(NumElements(y_dims)));
    std::vector<int64_t> fast_at(ref_at.size());
    same(y_dims, "MaxPool with indices", [&](void* y) {
      const bool fast = CurrentKernelMode() == KernelMode::kFast;
      return MaxPool(p, x.data(), y, fast ? fast_at.data() : ref_at.data());
    });
    EXPECT_EQ(fast_at, ref_at);
  }
}

// a8.UnscaleCheckFinite on f16/bf16 gradients, in both modes: each output is the gradient's
// float value times 1/scale (one f32 multiply), and the flag finds an infinity or a NaN wherever
// it lies: in the 8-lane body or the scalar tail of a chunk (the second gradient is a chunk of
// the check and 333 more, 333 = 41 x 8 + 5). The expected values come from the test's own
// scalar widening, not from the kernel.
TEST_P(FastHalfKernelTest, UnscaleCheckFiniteIsTheScaledGradientAndFindsEveryNonFinite) {
  const DType t = GetParam();
  const int64_t n0 = 1000, n1 = (int64_t{1} << 14) + 333;
  const float inv = 1.0f / 1024.0f;
  struct Case {
    const char* what;
    int64_t at;  // in the second gradient; -1: none
    float value;
  };
  const Case cases[] = {{"finite", -1, 0.0f},
                        {"an infinity in a vector", 5000, INFINITY},
                        {"a NaN in the tail", n1 - 2, NAN},
                        {"-inf in the last vector", n1 - 6, -INFINITY}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Buffer g0 = RandomBuffer(t, {n0}, rng_), g1 = RandomBuffer(t, {n1}, rng_);
    if (c.at >= 0) testing::SetValue(g1, c.at, c.value);
    for (KernelMode m : {KernelMode::kReference, KernelMode::kFast}) {
      ScopedKernelMode mode(m);
      std::vector<float> o0(n0, -1.0f), o1(n1, -1.0f);
      float found = -1.0f;
      ASSERT_TRUE(UnscaleCheckFinite(1024.0f, {t, t}, {n0, n1}, {g0.data(), g1.data()},
                                     {o0.data(), o1.data()}, &found)
                      .ok());
      EXPECT_EQ(found, c.at >= 0 ? 1.0f : 0.0f);
      for (int64_t i = 0; i < n0; ++i) {
        ASSERT_EQ(o0[i], static_cast<float>(testing::GetValue(g0, i)) * inv) << i;
      }
      for (int64_t i = 0; i < n1; ++i) {
        const float want = static_cast<float>(testing::GetValue(g1, i)) * inv;
        if (i == c.at && std::isnan(want)) {
          ASSERT_TRUE(std::isnan(o1[i])) << i;
        } else {
          ASSERT_EQ(o1[i], want) << i;
        }
      }
    }
  }
}

// An f32 gradient unscaled in place (`out` is `g`), as the plans do: the same products, and an
// infinity found in the vector body and in the tail.
TEST(UnscaleCheckFiniteTest, F32InPlace) {
  const int64_t n = 4099;  // 512 vectors and 3
  std::mt19937_64 rng(9);
  for (int64_t at : {int64_t{-1}, int64_t{17}, n - 1}) {
    SCOPED_TRACE(::testing::Message() << "infinity at " << at);
    Buffer g = RandomBuffer(DType::kF32, {n}, rng);
    if (at >= 0) testing::SetValue(g, at, INFINITY);
    std::vector<float> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      want[static_cast<size_t>(i)] = static_cast<float>(testing::GetValue(g, i)) * 0.25f;
    }
    float found = -1.0f;
    auto* p = static_cast<float*>(g.data());
    ASSERT_TRUE(UnscaleCheckFinite(4.0f, {DType::kF32}, {n}, {p}, {p}, &found).ok());
    EXPECT_EQ(found, at >= 0 ? 1.0f : 0.0f);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(p[i], want[static_cast<size_t>(i)]) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FastHalfKernelTest, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(ElemName(info.param)); });

}  // namespace
}  // namespace a8::cpu

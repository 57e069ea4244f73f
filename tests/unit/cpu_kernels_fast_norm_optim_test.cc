// The fast mode's BatchNormalization (kernels/cpu/batch_norm_fast.h) against a float64 reference
// on random data, in f32, f16 and bf16, with sizes that leave block and vector tails; the fast
// AdamW/Adam update (optim_fast.h) and a8.FusedMatMul's f32 GELU epilogue against the reference
// mode of the same kernels, within f32's tolerance. The vector loops are compiled for AVX-512,
// AVX2+FMA and baseline x86-64 and picked at load time: these tests check whichever this CPU runs
// (recorded as the "conversions" property with the conversion level).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/batch_norm_fast.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/fused.h"
#include "kernels/cpu/grad_math.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/optim.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using testing::Buffer;
using testing::ExpectClose;
using testing::FusedMatMulOf;
using testing::MakeBuffer;
using testing::RandomBuffer;
using testing::RandomF32;
using testing::ToleranceFor;
using testing::Values;

// The batch mean and biased variance of each channel, in float64.
void Moments(const std::vector<double>& x, const Dims& d, std::vector<double>* mean,
             std::vector<double>* var) {
  const int64_t batch = d[0], channels = d[1], spatial = NumElements(d) / (batch * channels);
  mean->assign(channels, 0.0);
  var->assign(channels, 0.0);
  const double count = static_cast<double>(batch * spatial);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t i = 0; i < spatial; ++i) (*mean)[c] += x[(n * channels + c) * spatial + i];
    (*mean)[c] /= count;
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t i = 0; i < spatial; ++i) {
        const double dv = x[(n * channels + c) * spatial + i] - (*mean)[c];
        (*var)[c] += dv * dv;
      }
    }
    (*var)[c] /= count;
  }
}

// The fields that BatchNormFastArgs and BatchNormGradFastArgs share, for an input x of dims d
// ([N, C, spatial...]) in dtype t and its f32 scale, with epsilon 1e-5.
template <typename Args>
Args BatchNormArgs(DType t, const Dims& d, const Buffer& x, const std::vector<float>& scale) {
  Args a;
  a.dtype = t;
  a.batch = d[0];
  a.channels = d[1];
  a.spatial = NumElements(d) / (d[0] * d[1]);
  a.epsilon = 1e-5f;
  a.x = x.data();
  a.scale = scale.data();
  return a;
}

class FastBatchNormTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { RecordProperty("conversions", FastConvertIsa()); }
  std::mt19937_64 rng_{4242};
};

TEST_P(FastBatchNormTest, ForwardMatchesFloat64) {
  const DType t = GetParam();
  for (const Dims& d :
       {Dims{3, 5, 7, 9}, Dims{2, 3, 41, 40}, Dims{4, 6}, Dims{8, 4, 4, 4}, Dims{2, 2, 130, 130}}) {
    for (bool training : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "dims[1]=" << d[1] << " training=" << training);
      const int64_t channels = d[1];
      Buffer x = RandomBuffer(t, d, rng_, -1.5, 2.5);
      std::vector<float> scale = RandomF32(channels, rng_, 0.5, 1.5);
      std::vector<float> bias = RandomF32(channels, rng_, -1, 1);
      std::vector<float> rmean = RandomF32(channels, rng_, -0.5, 0.5);
      std::vector<float> rvar = RandomF32(channels, rng_, 0.5, 2);
      std::vector<float> rmean_out(channels), rvar_out(channels);
      Buffer y = MakeBuffer(t, d);
      auto a = BatchNormArgs<BatchNormFastArgs>(t, d, x, scale);
      const int64_t spatial = a.spatial;
      a.momentum = 0.9f;
      a.training = training;
      a.bias = bias.data();
      a.mean = rmean.data();
      a.var = rvar.data();
      a.y = y.data();
      a.running_mean_out = rmean_out.data();
      a.running_var_out = rvar_out.data();
      ASSERT_TRUE(BatchNormFast(a).ok());
      const std::vector<double> xv = Values(x);
      std::vector<double> m, v;
      Moments(xv, d, &m, &v);
      if (!training) {
        m.assign(rmean.begin(), rmean.end());
        v.assign(rvar.begin(), rvar.end());
      }
      std::vector<double> want(xv.size()), mag(xv.size());
      for (int64_t i = 0; i < static_cast<int64_t>(xv.size()); ++i) {
        const int64_t c = (i / spatial) % channels;
        const double k = scale[c] / std::sqrt(v[c] + 1e-5);
        want[i] = (xv[i] - m[c]) * k + bias[c];
        mag[i] = std::fabs((xv[i] - m[c]) * k) + std::fabs(bias[c]);
      }
      ExpectClose(y, want, 2 * ToleranceFor(t), &mag);
      if (training) {
        for (int64_t c = 0; c < channels; ++c) {
          EXPECT_NEAR(rmean_out[c], 0.9 * rmean[c] + 0.1 * m[c], 1e-5) << "channel " << c;
          EXPECT_NEAR(rvar_out[c], 0.9 * rvar[c] + 0.1 * v[c], 1e-5 * (1 + v[c])) << c;
        }
      }
    }
  }
}

TEST_P(FastBatchNormTest, TrainingGradientMatchesFloat64) {
  const DType t = GetParam();
  for (const Dims& d :
       {Dims{3, 5, 7, 9}, Dims{2, 3, 41, 40}, Dims{8, 4, 4, 4}, Dims{2, 2, 130, 130}}) {
    const int64_t channels = d[1];
    Buffer x = RandomBuffer(t, d, rng_, -1.5, 2.5), dy = RandomBuffer(t, d, rng_, -1, 1);
    std::vector<float> scale = RandomF32(channels, rng_, 0.5, 1.5);
    std::vector<float> dscale(channels), dbias(channels);
    Buffer dx = MakeBuffer(t, d);
    auto a = BatchNormArgs<BatchNormGradFastArgs>(t, d, x, scale);
    const int64_t batch = a.batch, spatial = a.spatial;
    a.dy = dy.data();
    a.dx = dx.data();
    a.dscale = dscale.data();
    a.dbias = dbias.data();
    ASSERT_TRUE(BatchNormGradFast(a).ok());
    const std::vector<double> xv = Values(x), gv = Values(dy);
    std::vector<double> m, v;
    Moments(xv, d, &m, &v);
    std::vector<double> sdy(channels, 0.0), sdyx(channels, 0.0), sabs(channels, 0.0);
    const int64_t total = static_cast<int64_t>(xv.size());
    for (int64_t i = 0; i < total; ++i) {
      const int64_t c = (i / spatial) % channels;
      const double xhat = (xv[i] - m[c]) / std::sqrt(v[c] + 1e-5);
      sdy[c] += gv[i];
      sdyx[c] += gv[i] * xhat;
      sabs[c] += std::fabs(gv[i]) * (1 + std::fabs(xhat));
    }
    const double count = static_cast<double>(batch * spatial);
    for (int64_t c = 0; c < channels; ++c) {
      EXPECT_NEAR(dbias[c], sdy[c], 1e-5 * sabs[c]) << "channel " << c;
      EXPECT_NEAR(dscale[c], sdyx[c], 1e-5 * sabs[c]) << "channel " << c;
    }
    std::vector<double> want(xv.size()), mag(xv.size());
    for (int64_t i = 0; i < total; ++i) {
      const int64_t c = (i / spatial) % channels;
      const double inv = 1 / std::sqrt(v[c] + 1e-5), xhat = (xv[i] - m[c]) * inv;
      const double k = scale[c] * inv;
      want[i] = k * (gv[i] - sdy[c] / count - xhat * sdyx[c] / count);
      mag[i] = std::fabs(k) * (std::fabs(gv[i]) + sabs[c] / count * (1 + std::fabs(xhat)));
    }
    ExpectClose(dx, want, 2 * ToleranceFor(t), &mag);
  }
}

TEST(FastBatchNormTest, RejectsOtherDtypes) {
  BatchNormFastArgs a;
  a.dtype = DType::kF64;
  EXPECT_FALSE(BatchNormFast(a).ok());
  BatchNormGradFastArgs g;
  g.dtype = DType::kI32;
  EXPECT_FALSE(BatchNormGradFast(g).ok());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FastBatchNormTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(ElemName(info.param)); });

// AdamUpdate over f32 parameters: the fast mode's vector blocks against the reference mode's
// AdamElement loop, for f32/f16/bf16 gradients, Adam and AdamW, in place and not.
class FastAdamTest : public ::testing::TestWithParam<DType> {
 protected:
  std::mt19937_64 rng_{99};
};

TEST_P(FastAdamTest, MatchesReferenceMode) {
  const DType gt = GetParam();
  const int64_t n = 3 * kF32Block + 37;
  const float ctl[kCtlSize] = {1e-3f, 0.5f, 1.0f, 3.0f, 0.0f};
  for (bool decoupled : {true, false}) {
    for (float wd : {0.0f, 0.01f}) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "decoupled=" << decoupled << " wd=" << wd << " in_place=" << in_place);
        AdamParams p;
        p.decoupled = decoupled;
        p.weight_decay = wd;
        Buffer g = RandomBuffer(gt, {n}, rng_, -1, 1);
        const std::vector<float> x = RandomF32(n, rng_, -1, 1);
        const std::vector<float> m = RandomF32(n, rng_, -0.1, 0.1);
        const std::vector<float> v = RandomF32(n, rng_, 0, 0.01);
        std::vector<float> out[2][3];  // [reference, fast][param, m, v]
        for (int fast = 0; fast < 2; ++fast) {
          std::vector<float> xi = x, mi = m, vi = v;
          out[fast][0].resize(n);
          out[fast][1].resize(n);
          out[fast][2].resize(n);
          float* xo = in_place ? xi.data() : out[fast][0].data();
          float* mo = in_place ? mi.data() : out[fast][1].data();
          float* vo = in_place ? vi.data() : out[fast][2].data();
          ScopedKernelMode mode(fast ? KernelMode::kFast : KernelMode::kReference);
          ASSERT_TRUE(AdamUpdate(p, DType::kF32, gt, n, ctl, xi.data(), g.data(), mi.data(),
                                 vi.data(), xo, mo, vo)
                          .ok());
          if (in_place) {
            out[fast][0] = xi;
            out[fast][1] = mi;
            out[fast][2] = vi;
          }
        }
        // FMA contraction rounds differently: within a few ulp of each output's terms (m's
        // two terms, beta1 * m and (1 - beta1) * g, are up to 0.1 and may cancel).
        for (int k = 0; k < 3; ++k) {
          const float floor = k == 1 ? 0.1f : 1e-3f;
          for (int64_t i = 0; i < n; ++i) {
            const float want = out[0][k][i], got = out[1][k][i];
            ASSERT_NEAR(got, want, 1e-6f * (std::fabs(want) + floor))
                << "output " << k << " element " << i;
          }
        }
        // The update moved the parameters (the comparison above is not of two no-ops).
        EXPECT_NE(out[1][0][5], x[5]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GradDtypes, FastAdamTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(ElemName(info.param)); });

// a8.FusedMatMul in f32 with the erf GELU epilogues: the fast mode's polynomial GELU against the
// reference mode's erfc body, with and without bias, y and the pre-activation.
TEST(FastFusedMatMulTest, F32GeluEpilogueMatchesReference) {
  std::mt19937_64 rng(5);
  for (int32_t epilogue : {kEpilogueBiasGelu, kEpilogueGelu, kEpilogueBiasRelu, kEpilogueDGelu}) {
    const FusedMatMulParams p = FusedMatMulOf(DType::kF32, 17, 530, 24, epilogue);
    Buffer a = RandomBuffer(DType::kF32, {p.m, p.k}, rng, -0.5, 0.5);
    Buffer b = RandomBuffer(DType::kF32, {p.k, p.n}, rng);
    Buffer bias = RandomBuffer(DType::kF32, {p.n}, rng);
    Buffer aux = RandomBuffer(DType::kF32, {p.m, p.n}, rng, -4, 4);
    const bool has_bias = EpilogueHasBias(epilogue);
    const void* aux_in = EpilogueIsBackward(epilogue) ? aux.data() : nullptr;
    Buffer ref = MakeBuffer(DType::kF32, {p.m, p.n}), fast = MakeBuffer(DType::kF32, {p.m, p.n});
    Buffer ref1 = MakeBuffer(DType::kF32, {p.m, p.n});
    Buffer fast1 = MakeBuffer(DType::kF32, {p.m, p.n});
    ASSERT_TRUE(FusedMatMul(p, a.data(), b.data(), has_bias ? bias.data() : nullptr, aux_in,
                            ref.data(), ref1.data())
                    .ok());
    {
      ScopedKernelMode mode(KernelMode::kFast);
      ASSERT_TRUE(FusedMatMul(p, a.data(), b.data(), has_bias ? bias.data() : nullptr, aux_in,
                              fast.data(), fast1.data())
                      .ok());
    }
    // The products differ in summation order between the paths: compare on their scale.
    std::vector<double> mag(static_cast<size_t>(p.m * p.n), p.k + 2.0);
    ExpectClose(fast, Values(ref), 2e-5, &mag);
    ExpectClose(fast1, Values(ref1), 2e-5, &mag);
  }
}

// a8.GeluGrad in the fast mode (the branch-free Phi and phi) against the reference mode's erfc and
// exp, on x across [-14, 14] (both tails, the cancellation near x = -0.75) and a few specials,
// compared on the scale of its two terms, |dy| (Phi + |x| phi).
class FastGeluGradTest : public ::testing::TestWithParam<DType> {};

TEST_P(FastGeluGradTest, MatchesReferenceMode) {
  const DType t = GetParam();
  std::mt19937_64 rng(17);
  const int64_t n = 4 * kF32Block + 29;
  Buffer dy = RandomBuffer(t, {n}, rng, -2, 2), x = RandomBuffer(t, {n}, rng, -14, 14);
  for (int64_t i = 0; i < 40; ++i) testing::SetValue(x, i, -3.0 + 0.125 * i);
  testing::SetValue(x, 40, 0.0);
  testing::SetValue(x, 41, NAN);
  testing::SetValue(x, 42, INFINITY);
  Buffer ref = MakeBuffer(t, {n}), fast = MakeBuffer(t, {n});
  ASSERT_TRUE(ActivationGrad(ActivationGradOp::kGelu, t, n, dy.data(), x.data(), ref.data()).ok());
  {
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(
        ActivationGrad(ActivationGradOp::kGelu, t, n, dy.data(), x.data(), fast.data()).ok());
  }
  std::vector<double> mag(n);
  for (int64_t i = 0; i < n; ++i) {
    const double g = testing::GetValue(dy, i), xv = testing::GetValue(x, i);
    const double phi = std::exp(-0.5 * xv * xv) * 0.3989422804014327;
    mag[i] = std::fabs(g) * (0.5 * std::erfc(-xv / std::sqrt(2.0)) + std::fabs(xv) * phi);
  }
  ExpectClose(fast, Values(ref), 4 * ToleranceFor(t), &mag, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FastGeluGradTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(ElemName(info.param)); });

// Program `p` over f32 inputs of n elements, in the reference mode and in the fast mode.
std::pair<Buffer, Buffer> FusedInBothModes(const FusedProgram& p, const void* const* inputs,
                                           const int64_t* counts, int64_t n) {
  Buffer ref = MakeBuffer(DType::kF32, {n}), fast = MakeBuffer(DType::kF32, {n});
  EXPECT_TRUE(FusedElementwise(p, DType::kF32, inputs, counts, DType::kF32, n, ref.data()).ok());
  ScopedKernelMode mode(KernelMode::kFast);
  EXPECT_TRUE(FusedElementwise(p, DType::kF32, inputs, counts, DType::kF32, n, fast.data()).ok());
  return {std::move(ref), std::move(fast)};
}

// a8.FusedElementwise in f32: the fast mode evaluates the program a block at a time
// (EvalFusedBlock), the reference one element at a time; each element sees the same float
// operations in the same order, so the outputs are the same bits. Every kind of instruction:
// constant, the four arithmetic ops, a unary op, an activation gradient, a rounding.
TEST(FastFusedElementwiseTest, F32BlocksGiveTheReferenceBits) {
  FusedProgram p{};
  p.num_inputs = 4;
  p.num_consts = 1;
  p.consts[0] = 0.25f;
  const int32_t code[][4] = {{kFusedConst, 4, 0, 0},     {kFusedAdd, 5, 0, 1},
                             {kFusedMul, 6, 5, 2},       {kFusedSub, 7, 6, 4},
                             {kFusedDiv, 8, 7, 3},       {kFusedTanh, 9, 8, 0},
                             {kFusedReluGrad, 10, 9, 7}, {kFusedRoundBF16, 11, 10, 0}};
  p.num_instrs = static_cast<int32_t>(std::size(code));
  std::memcpy(p.code, code, sizeof(code));
  std::mt19937_64 rng(31);
  const int64_t n = 7 * 128 + 45;
  Buffer x = RandomBuffer(DType::kF32, {n}, rng), y = RandomBuffer(DType::kF32, {n}, rng);
  Buffer s = RandomBuffer(DType::kF32, {1}, rng, 0.5, 1.5);
  Buffer z = RandomBuffer(DType::kF32, {n}, rng, 0.5, 2.0);
  const void* inputs[4] = {x.data(), y.data(), s.data(), z.data()};
  const int64_t counts[4] = {n, n, 1, n};
  const auto [ref, fast] = FusedInBothModes(p, inputs, counts, n);
  EXPECT_EQ(std::memcmp(ref.data(), fast.data(), ref.bytes.size()), 0);
  int nonzero = 0;  // the program is not trivially zero (ReluGrad keeps about half)
  for (double v : Values(fast)) nonzero += v != 0.0;
  EXPECT_GT(nonzero, n / 4);
}

// The fast mode reads f32 inputs where they lie and writes an f32 result straight into Y, which
// may be an input's own bytes (plan-memory puts an elementwise result in place): the same bits
// as the reference computing out of place, for a result over input 0 and over input 1, at a
// length that ends in a partial block.
TEST(FastFusedElementwiseTest, F32ResultInPlaceOfAnInputGivesTheReferenceBits) {
  FusedProgram p{};
  p.num_inputs = 2;
  const int32_t code[][4] = {{kFusedAdd, 2, 0, 1}, {kFusedMul, 3, 2, 0}, {kFusedRelu, 4, 3, 0}};
  p.num_instrs = static_cast<int32_t>(std::size(code));
  std::memcpy(p.code, code, sizeof(code));
  std::mt19937_64 rng(37);
  const int64_t n = 9 * 128 + 3;
  const Buffer x = RandomBuffer(DType::kF32, {n}, rng), y = RandomBuffer(DType::kF32, {n}, rng);
  const int64_t counts[2] = {n, n};
  const void* inputs[2] = {x.data(), y.data()};
  Buffer ref = MakeBuffer(DType::kF32, {n});
  ASSERT_TRUE(FusedElementwise(p, DType::kF32, inputs, counts, DType::kF32, n, ref.data()).ok());
  for (int over = 0; over < 2; ++over) {
    Buffer a = x, b = y;
    const void* in_place[2] = {a.data(), b.data()};
    void* out = over == 0 ? a.data() : b.data();
    ScopedKernelMode mode(KernelMode::kFast);
    ASSERT_TRUE(FusedElementwise(p, DType::kF32, in_place, counts, DType::kF32, n, out).ok());
    EXPECT_EQ(std::memcmp(out, ref.data(), ref.bytes.size()), 0) << "over input " << over;
  }
}

// The f16 and bf16 rounding opcodes alone: the fast blocks round through the vector conversions,
// the reference through float16.h's scalar body; the same bits (NaN: a NaN) on values across
// both formats' ranges, their overflow to infinity, subnormals and underflow to zero.
TEST(FastFusedElementwiseTest, RoundingOpcodesGiveTheReferenceBits) {
  std::mt19937_64 rng(33);
  const int64_t n = 5 * 128 + 77;
  Buffer x = RandomBuffer(DType::kF32, {n}, rng, -1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-40, 40);
  const std::vector<double> unit = testing::Values(x);
  for (int64_t i = 0; i < n; ++i) {  // magnitudes from 1e-12 to 1e12
    testing::SetValue(x, i, unit[i] * std::ldexp(1.0, exponent(rng)));
  }
  const double specials[] = {NAN,  INFINITY, -INFINITY, 65504.0, 65520.0,          -65536.0, 6e-8,
                             3e-8, 1e-9,     0.0,       -0.0,    1.0 + 1.0 / 2048, 3.4e38f,  1e-39};
  for (int k = 0; k < static_cast<int>(std::size(specials)); ++k) {
    testing::SetValue(x, k, specials[k]);
  }
  const void* inputs[1] = {x.data()};
  const int64_t counts[1] = {n};
  for (int32_t op : {kFusedRoundF16, kFusedRoundBF16}) {
    FusedProgram p{};
    p.num_inputs = 1;
    p.num_instrs = 1;
    const int32_t code[4] = {op, 1, 0, 0};
    std::memcpy(p.code[0], code, sizeof(code));
    const auto [ref, fast] = FusedInBothModes(p, inputs, counts, n);
    const float* r = reinterpret_cast<const float*>(ref.data());
    const float* f = reinterpret_cast<const float*>(fast.data());
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(r[i])) {
        EXPECT_TRUE(std::isnan(f[i])) << "opcode " << op << " element " << i;
      } else {
        EXPECT_EQ(std::memcmp(&r[i], &f[i], sizeof(float)), 0)
            << "opcode " << op << " element " << i << ": " << r[i] << " vs " << f[i];
      }
    }
  }
}

// Every unary and activation-gradient opcode alone, fast blocks (one loop per opcode,
// UnaryBlock in fused.cc) against the reference's element-at-a-time evaluation: the same bits on
// values that reach each function's branches (negative, around zero, large, infinities, NaN),
// except a NaN's sign, which the vectorised loops may give either way (x86's NaN takes an
// operand's sign, and the compiler may swap a commutative operation's operands).
TEST(FastFusedElementwiseTest, EveryOpcodeGivesTheReferenceBits) {
  std::mt19937_64 rng(32);
  const int64_t n = 3 * 128 + 19;
  Buffer x = RandomBuffer(DType::kF32, {n}, rng, -6.0, 6.0);
  Buffer y = RandomBuffer(DType::kF32, {n}, rng, -2.0, 2.0);
  const double specials[] = {0.0, NAN, INFINITY, -INFINITY, 1e-30, -1e-30, 90.0, -90.0};
  for (int k = 0; k < static_cast<int>(std::size(specials)); ++k) {
    testing::SetValue(x, k, specials[k]);
  }
  const void* inputs[2] = {x.data(), y.data()};
  const int64_t counts[2] = {n, n};
  int checked = 0;
  for (int32_t op = 1; op < kFusedNumOpcodes; ++op) {
    if (!FusedOpcodeIsValid(op) || (op >= kFusedRoundF16 && op <= kFusedDiv)) continue;
    FusedProgram p{};
    p.num_inputs = 2;
    p.num_instrs = 1;
    // An activation gradient reads (dy, x): y as dy, x as its saved tensor.
    const int32_t code[4] = {op, 2, FusedOpcodeIsBinary(op) ? 1 : 0, 0};
    std::memcpy(p.code[0], code, sizeof(code));
    const auto [ref, fast] = FusedInBothModes(p, inputs, counts, n);
    const float* r = reinterpret_cast<const float*>(ref.data());
    const float* f = reinterpret_cast<const float*>(fast.data());
    int differ = 0;
    for (int64_t i = 0; i < n; ++i) {
      const bool both_nan = std::isnan(r[i]) && std::isnan(f[i]);
      differ += !both_nan && std::memcmp(&r[i], &f[i], sizeof(float)) != 0;
    }
    EXPECT_EQ(differ, 0) << "opcode " << op;
    ++checked;
  }
  int fusable = 0;  // the Fused column of unary_math.h's two lists
#define A8_X(Name, Kind, Cost, Fused) fusable += Fused > 0;
  A8_UNARY_OPS(A8_X)
  A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
  EXPECT_EQ(checked, fusable);
  EXPECT_GE(checked, 19);
}

}  // namespace
}  // namespace a8::cpu

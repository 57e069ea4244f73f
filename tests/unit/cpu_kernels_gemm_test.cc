#include <gmock/gmock.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/gemm.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using namespace testing;  // cpu::testing: Buffer, ExpectClose, MakeBuffer, RandomBuffer, Values

// Reference numpy matmul in float64; `mag` gets sum |a||b| per output element.
std::vector<double> RefMatMul(const Dims& ad, const std::vector<double>& a, const Dims& bd,
                              const std::vector<double>& b, const Dims& od,
                              std::vector<double>* mag) {
  Dims a2 = ad, b2 = bd;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  const int64_t m = a2[a2.size() - 2], k = a2.back(), n = b2.back();
  Dims abatch(a2.begin(), a2.end() - 2), bbatch(b2.begin(), b2.end() - 2);
  Dims obatch = *BroadcastDims({abatch, bbatch}, "test");
  std::vector<double> y;
  mag->clear();
  for (int64_t bi = 0; bi < NumElements(obatch); ++bi) {
    int64_t ao = testing::BroadcastSource(obatch, abatch, bi) * m * k;
    int64_t bo = testing::BroadcastSource(obatch, bbatch, bi) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, sm = 0;
        for (int64_t l = 0; l < k; ++l) {
          s += a[ao + i * k + l] * b[bo + l * n + j];
          sm += std::fabs(a[ao + i * k + l] * b[bo + l * n + j]);
        }
        y.push_back(s);
        mag->push_back(sm);
      }
    }
  }
  EXPECT_EQ(static_cast<int64_t>(y.size()), NumElements(od));
  return y;
}

TEST(CpuKernelMatMulTest, BroadcastBatchesAgainstFloat64) {
  std::vector<std::pair<Dims, Dims>> shapes = {{{3}, {3}},
                                               {{17, 3}, {3}},
                                               {{3}, {3, 65}},
                                               {{2, 3, 17, 5}, {5, 4}},
                                               {{2, 1, 3, 4}, {3, 4, 2}},
                                               {{1, 65, 17}, {17, 33}},
                                               {{4, 1, 1}, {1, 1}},
                                               {{5, 2, 3}, {5, 3, 7}},
                                               // attention's per-head products, split over
                                               // threads by batch; a linear layer on a batch
                                               {{9, 4, 16, 16}, {9, 4, 16, 16}},
                                               {{3, 45, 64}, {64, 257}}};
  std::mt19937_64 rng(10);
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI32}) {
    for (const auto& [ad, bd] : shapes) {
      SCOPED_TRACE(std::string(ElemName(dt)) + " case " + std::to_string(ad.size()));
      Buffer a = RandomBuffer(dt, ad, rng, -3, 3);
      Buffer b = RandomBuffer(dt, bd, rng, -3, 3);
      auto od = MatMulOutputDims(ad, bd);
      ASSERT_TRUE(od.ok()) << od.status().message();
      Buffer y = MakeBuffer(dt, *od);
      ASSERT_TRUE(MatMul(dt, ad, a.data(), bd, b.data(), y.data()).ok());
      std::vector<double> mag;
      std::vector<double> want = RefMatMul(ad, Values(a), bd, Values(b), *od, &mag);
      if (dt == DType::kI32) {
        EXPECT_EQ(Values(y), want);
      } else {
        ExpectClose(y, want, testing::ToleranceFor(dt), &mag);
      }
    }
  }
  EXPECT_FALSE(MatMulOutputDims({2, 3}, {4, 2}).ok());
}

// The register-tile GEMMs directly (they serve MatMul/Gemm f32 and the reference convolutions):
// every row remainder of both tile widths, masked column tails, packed and unpacked B panels, B
// transposed, operands inside larger matrices (ld > width), alpha/beta, and C not read when beta
// is 0 (NaN there). Each element is checked against float64 within float rounding and, to the
// bit, against the arithmetic blas.h promises (an FMA chain from zero in k order, times alpha,
// plus beta C by one more FMA): the same bits from either ISA, whatever the tiling, is what
// keeps the reference kernels bit-identical to cuda-emu on every CPU.
using TileGemm = void (*)(bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);

void CheckTileGemm(TileGemm gemm) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t m : {1, 5, 7, 8, 13, 23, 64}) {
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 32, 33, 50, 64}) {
      for (int64_t k : {0, 1, 3, 16, 17, 70}) {
        for (int variant = 0; variant < 4; ++variant) {
          const float beta = variant % 2 == 0 ? 0.0f : 0.75f;
          const bool trans_b = variant >= 2;  // B is [n, k]
          SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) +
                       " k=" + std::to_string(k) + " beta=" + std::to_string(beta) +
                       (trans_b ? " transB" : ""));
          const int64_t lda = k + 3, ldb = (trans_b ? k : n) + 5, ldc = n + 2;
          std::vector<float> a(m * lda), b(std::max<int64_t>(trans_b ? n : k, 1) * ldb);
          std::vector<float> c(m * ldc);
          for (float& v : a) v = dist(rng);
          for (float& v : b) v = dist(rng);
          for (float& v : c) v = beta == 0.0f ? NAN : dist(rng);
          const std::vector<float> c0 = c;
          const float alpha = 1.25f;
          gemm(trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
          int failures = 0;
          for (int64_t i = 0; i < m && failures < 5; ++i) {
            for (int64_t j = 0; j < ldc; ++j) {
              if (j >= n) {  // outside C: untouched
                if (std::memcmp(&c[i * ldc + j], &c0[i * ldc + j], sizeof(float)) != 0) {
                  ADD_FAILURE() << "wrote outside C at " << i << "," << j;
                  ++failures;
                }
                continue;
              }
              double want = beta == 0.0f ? 0.0 : double(beta) * c0[i * ldc + j], mag = 0;
              float chain = 0.0f;
              for (int64_t l = 0; l < k; ++l) {
                const float bv = trans_b ? b[j * ldb + l] : b[l * ldb + j];
                const double t = double(alpha) * a[i * lda + l] * bv;
                want += t;
                mag += std::fabs(t);
                chain = std::fma(a[i * lda + l], bv, chain);
              }
              float bits = alpha * chain;
              if (beta != 0.0f) bits = std::fma(beta, c0[i * ldc + j], bits);
              if (beta != 0.0f) mag += std::fabs(double(beta) * c0[i * ldc + j]);
              const float got = c[i * ldc + j];
              if (!(std::fabs(got - want) <= 1e-6 * (mag + 1e-3)) ||
                  std::memcmp(&got, &bits, sizeof(float)) != 0) {
                ADD_FAILURE() << i << "," << j << ": got " << got << " want " << want
                              << ", the FMA chain gives " << bits;
                ++failures;
              }
            }
          }
        }
      }
    }
  }
}

TEST(CpuKernelGemmTest, Avx512TilesAgainstFloat64AndTheFmaChain) {
  if (!internal::CpuHasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  CheckTileGemm(&internal::GemmF32Avx512);
}

TEST(CpuKernelGemmTest, Avx2TilesAgainstFloat64AndTheFmaChain) {
  if (!internal::CpuHasAvx2Fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  CheckTileGemm(&internal::GemmF32Avx2);
}

// SmallGemmF32 directly: on AVX-512 CPUs MatMul no longer reaches it, elsewhere it serves the
// tiny products (AVX2/baseline clones).
TEST(CpuKernelGemmTest, SmallGemmAgainstFloat64) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t m : {1, 5, 16}) {
    for (int64_t n : {1, 7, 16, 33}) {
      for (int64_t k : {1, 16, 19}) {
        for (float beta : {0.0f, 0.5f}) {
          SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) +
                       " k=" + std::to_string(k) + " beta=" + std::to_string(beta));
          std::vector<float> a(m * k), b(k * n), c(m * n);
          for (float& v : a) v = dist(rng);
          for (float& v : b) v = dist(rng);
          for (float& v : c) v = beta == 0.0f ? NAN : dist(rng);
          const std::vector<float> c0 = c;
          internal::SmallGemmF32(m, n, k, 0.5f, a.data(), k, b.data(), n, beta, c.data(), n);
          for (int64_t i = 0; i < m * n; ++i) {
            double want = beta == 0.0f ? 0.0 : double(beta) * c0[i], mag = std::fabs(want);
            for (int64_t l = 0; l < k; ++l) {
              const double t = 0.5 * a[i / n * k + l] * b[l * n + i % n];
              want += t;
              mag += std::fabs(t);
            }
            ASSERT_LE(std::fabs(c[i] - want), 1e-6 * (mag + 1e-3)) << "element " << i;
          }
        }
      }
    }
  }
}

TEST(CpuKernelGemmTest, TransposesAlphaBetaAndBroadcastC) {
  std::mt19937_64 rng(11);
  const int64_t m = 17, n = 5, k = 65;
  for (DType dt : testing::kFloatDTypes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (const Dims& cd : {Dims{}, Dims{n}, Dims{m, 1}, Dims{m, n}, Dims{1, n}, Dims{0}}) {
          SCOPED_TRACE(std::string(ElemName(dt)) + " ta=" + std::to_string(ta) +
                       " tb=" + std::to_string(tb) + " c_rank=" + std::to_string(cd.size()));
          const bool no_c = cd == Dims{0};
          Buffer a = RandomBuffer(dt, ta ? Dims{k, m} : Dims{m, k}, rng);
          Buffer b = RandomBuffer(dt, tb ? Dims{n, k} : Dims{k, n}, rng);
          Buffer c = RandomBuffer(dt, no_c ? Dims{1} : cd, rng);
          Buffer y = MakeBuffer(dt, {m, n});
          GemmParams p;
          p.dtype = dt;
          p.m = m, p.n = n, p.k = k;
          p.trans_a = ta, p.trans_b = tb;
          p.alpha = 0.5f, p.beta = 1.5f;
          p.c_dims = cd;
          ASSERT_TRUE(Gemm(p, a.data(), b.data(), no_c ? nullptr : c.data(), y.data()).ok());
          std::vector<double> av = Values(a), bv = Values(b), cv = Values(c), want, mag;
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              double s = 0, sm = 0;
              for (int64_t l = 0; l < k; ++l) {
                double t = av[ta ? l * m + i : i * k + l] * bv[tb ? j * k + l : l * n + j];
                s += t;
                sm += std::fabs(t);
              }
              double cval = 0;
              if (!no_c) cval = cv[testing::BroadcastSource({m, n}, cd, i * n + j)];
              want.push_back(0.5 * s + 1.5 * cval);
              mag.push_back(0.5 * sm + 1.5 * std::fabs(cval));
            }
          }
          ExpectClose(y, want, testing::ToleranceFor(dt), &mag);
        }
      }
    }
  }
}

struct GemmConvCase {
  int64_t n, c, m, group;
  Dims in, kernel, strides, dilations, pads, output_padding;
};

// Direct float64 convolution (or transposed convolution), padded to 3 spatial dims.
std::vector<double> RefConv(const GemmConvCase& cc, bool transpose, const Dims& out_sp,
                            const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& b, std::vector<double>* mag) {
  const size_t r = cc.in.size();
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
          pb[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  for (size_t i = 0; i < r; ++i) {
    size_t j = 3 - r + i;
    in[j] = cc.in[i], k[j] = cc.kernel[i], out[j] = out_sp[i];
    if (!cc.strides.empty()) s[j] = cc.strides[i];
    if (!cc.dilations.empty()) d[j] = cc.dilations[i];
    if (!cc.pads.empty()) pb[j] = cc.pads[i];
  }
  const int64_t in_size = in[0] * in[1] * in[2], out_size = out[0] * out[1] * out[2];
  const int64_t ks = k[0] * k[1] * k[2];
  const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
  std::vector<double> y(cc.n * cc.m * out_size, 0.0);
  mag->assign(y.size(), 0.0);
  for (int64_t n = 0; n < cc.n; ++n) {
    for (int64_t m = 0; m < cc.m; ++m) {
      for (int64_t o = 0; o < out_size; ++o) {
        y[(n * cc.m + m) * out_size + o] = b.empty() ? 0 : b[m];
        (*mag)[(n * cc.m + m) * out_size + o] = b.empty() ? 0 : std::fabs(b[m]);
      }
      const int64_t g = m / mg;
      for (int64_t ci = 0; ci < cg; ++ci) {
        const int64_t c = g * cg + ci;
        for (int64_t kk = 0; kk < ks; ++kk) {
          int64_t kidx[3] = {kk / (k[1] * k[2]), (kk / k[2]) % k[1], kk % k[2]};
          double wv = transpose ? w[(c * mg + (m % mg)) * ks + kk] : w[(m * cg + ci) * ks + kk];
          // Conv: grid = output, image = input; transpose: grid = input, image = output.
          const int64_t* grid = transpose ? in : out;
          const int64_t* img = transpose ? out : in;
          for (int64_t p = 0; p < grid[0] * grid[1] * grid[2]; ++p) {
            int64_t gi[3] = {p / (grid[1] * grid[2]), (p / grid[2]) % grid[1], p % grid[2]};
            const int64_t ii = testing::WindowTapSource(gi, kidx, s, pb, d, img);
            if (ii < 0) continue;
            double xv =
                transpose ? x[(n * cc.c + c) * in_size + p] : x[(n * cc.c + c) * in_size + ii];
            int64_t yi = (n * cc.m + m) * out_size + (transpose ? ii : p);
            y[yi] += wv * xv;
            (*mag)[yi] += std::fabs(wv * xv);
          }
        }
      }
    }
  }
  return y;
}

void RunConvCase(const GemmConvCase& cc, bool transpose, DType dt, std::mt19937_64& rng) {
  ConvParams p;
  p.dtype = dt;
  p.batch = cc.n, p.in_channels = cc.c, p.out_channels = cc.m, p.group = cc.group;
  p.in_spatial = cc.in, p.kernel = cc.kernel, p.strides = cc.strides, p.dilations = cc.dilations;
  p.pads = cc.pads, p.output_padding = cc.output_padding;
  auto out_sp = ConvOutputSpatial(p, transpose);
  ASSERT_TRUE(out_sp.ok()) << out_sp.status().message();
  Dims xd = {cc.n, cc.c},
       wd = transpose ? Dims{cc.c, cc.m / cc.group} : Dims{cc.m, cc.c / cc.group};
  Dims yd = {cc.n, cc.m};
  xd.insert(xd.end(), cc.in.begin(), cc.in.end());
  wd.insert(wd.end(), cc.kernel.begin(), cc.kernel.end());
  yd.insert(yd.end(), out_sp->begin(), out_sp->end());
  Buffer x = RandomBuffer(dt, xd, rng), w = RandomBuffer(dt, wd, rng),
         b = RandomBuffer(dt, {cc.m}, rng);
  Buffer y = MakeBuffer(dt, yd);
  Status st = transpose ? ConvTranspose(p, x.data(), w.data(), b.data(), y.data())
                        : Conv(p, x.data(), w.data(), b.data(), y.data());
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<double> mag;
  std::vector<double> want = RefConv(cc, transpose, *out_sp, Values(x), Values(w), Values(b), &mag);
  ExpectClose(y, want, testing::ToleranceFor(dt), &mag);
}

std::vector<GemmConvCase> ConvCases() {
  return {
      {2, 3, 4, 1, {9, 7}, {3, 3}, {}, {}, {1, 1, 1, 1}, {}},
      {1, 4, 6, 2, {11, 10}, {3, 2}, {2, 2}, {2, 1}, {0, 1, 2, 0}, {1, 0}},
      {1, 3, 5, 1, {17}, {3}, {3}, {}, {2, 1}, {}},
      {1, 2, 3, 1, {5, 4, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}, {}},
      {2, 4, 4, 4, {6, 5}, {3, 3}, {1, 1}, {}, {1, 1, 1, 1}, {}},
      {3, 5, 7, 1, {4, 3}, {1, 1}, {}, {}, {}, {}},
      {1, 65, 3, 1, {1}, {1}, {}, {}, {}, {}},
      {2, 16, 32, 1, {28, 28}, {3, 3}, {1, 1}, {}, {1, 1, 1, 1}, {}},  // threads split im2col
  };
}

// Every case in every float dtype, each traced as "<dtype><label> case <i>".
void RunConvCases(const std::vector<GemmConvCase>& cases, bool transpose, const std::string& label,
                  std::mt19937_64& rng) {
  for (DType dt : testing::kFloatDTypes) {
    int i = 0;
    for (const GemmConvCase& cc : cases) {
      SCOPED_TRACE(std::string(ElemName(dt)) + label + " case " + std::to_string(i++));
      RunConvCase(cc, transpose, dt, rng);
    }
  }
}

TEST(CpuKernelConvTest, MatchesDirectFloat64) {
  std::mt19937_64 rng(12);
  RunConvCases(ConvCases(), false, "", rng);
}

// Stride-1 1-D/2-D shapes for the direct (padded-row) path: row blocks with remainders
// (M = 13, 9, 5), groups with dilations, asymmetric pads, 1x1 (also padded), several column
// tiles, a 1x1 output, batches over several sample chunks (a last, shorter one), and one image
// too large for it (the im2col + GEMM path again), and the row mode's shapes.
TEST(CpuKernelConvTest, StrideOneShapesMatchDirectFloat64) {
  const std::vector<GemmConvCase> cases = {
      {3, 5, 13, 1, {7, 9}, {3, 3}, {}, {}, {1, 0, 2, 1}, {}},
      {2, 6, 9, 3, {10, 11}, {3, 2}, {1, 1}, {2, 3}, {2, 1, 0, 2}, {}},
      {2, 7, 5, 1, {9, 6}, {1, 1}, {}, {}, {}, {}},
      {1, 3, 8, 1, {40}, {5}, {}, {2}, {3, 1}, {}},
      {4, 16, 32, 1, {4, 4}, {3, 3}, {}, {}, {1, 1, 1, 1}, {}},
      {2, 5, 11, 1, {23, 19}, {5, 3}, {}, {}, {2, 1, 2, 1}, {}},
      {3, 2, 3, 1, {3, 3}, {3, 3}, {}, {}, {}, {}},
      {7, 4, 5, 1, {12, 11}, {3, 3}, {}, {}, {1, 1, 1, 1}, {}},  // several sample chunks
      {9, 1, 4, 1, {8, 8}, {3, 3}, {}, {}, {0, 2, 1, 0}, {}},
      {5, 3, 4, 1, {6, 5}, {1, 1}, {}, {}, {1, 2, 0, 1}, {}},  // 1x1 with pads
      {2, 48, 4, 1, {28, 28}, {3, 3}, {}, {}, {1, 1, 1, 1}, {}},
      // Row mode (output rows a whole number of vectors: 4 with SSE2, 8 with AVX2 and
      // AVX-512's 8-wide form, 16): the example CNN's 8x8 over several chunks with a shorter
      // last one, rows of 16 and 24, a group with dilation, a 4-wide 1-D row.
      {7, 16, 16, 1, {8, 8}, {3, 3}, {}, {}, {1, 1, 1, 1}, {}},
      {2, 3, 5, 1, {16, 16}, {3, 3}, {}, {}, {1, 1, 1, 1}, {}},
      {3, 4, 7, 1, {5, 24}, {3, 3}, {}, {}, {1, 1, 1, 1}, {}},
      {2, 6, 4, 2, {12, 12}, {3, 3}, {1, 1}, {2, 2}, {0, 0, 0, 0}, {}},
      {3, 2, 3, 1, {6}, {3}, {}, {}, {0, 0}, {}},
  };
  std::mt19937_64 rng(14);
  // Every vector width the machine has (a narrower cap on a machine without the wider one just
  // runs the same variant again).
  for (CpuIsa isa : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kBest}) {
    internal::SetConvIsaForTesting(isa);
    RunConvCases(cases, false, " isa " + std::to_string(static_cast<int>(isa)), rng);
  }
  internal::SetConvIsaForTesting(CpuIsa::kBest);
}

TEST(CpuKernelConvTransposeTest, MatchesDirectFloat64) {
  std::mt19937_64 rng(13);
  RunConvCases(ConvCases(), true, "", rng);
}

TEST(CpuKernelConvTest, RejectsBadParams) {
  auto message = [](const ConvParams& p) {
    StatusOr<Dims> out = ConvOutputSpatial(p, false);
    return out.ok() ? std::string("ok") : out.status().message();
  };
  ConvParams p;
  p.in_channels = 3, p.out_channels = 4, p.group = 2;
  p.in_spatial = {5, 5}, p.kernel = {3, 3};
  EXPECT_THAT(message(p), ::testing::HasSubstr("Conv: group 2 does not divide channels 3 -> 4"));
  p.group = 1;
  p.kernel = {7, 3};
  EXPECT_THAT(message(p), ::testing::HasSubstr("Conv: spatial dim 0 has no output (input 5"));
  p.kernel = {3, 3};
  p.strides = {1};
  EXPECT_THAT(message(p), ::testing::HasSubstr("Conv: strides has 1 values, expected 2"));
}

}  // namespace
}  // namespace a8::cpu

// PackedGemm (kernels/cpu/gemm_packed.h), the f16/bf16 GEMM in float registers, with each of its
// register tiles (AVX2 6 x 16, AVX-512 8 x 32), against a float64 reference on random data:
// every transpose, alpha, the addend's broadcasts, batches (B shared and not), and sizes at and
// across the register tiles' and the blocks' edges (k 256 and 1024, n 1024). Skips, saying so,
// on a CPU without AVX2, FMA and F16C, and the AVX-512 tiles without AVX-512.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>

#include "kernels/cpu/gemm_packed.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using namespace testing;  // cpu::testing: Buffer, MakeBuffer, RandomBuffer, Values

struct Shape {
  int64_t m, n, k;
};

// Which addend a case adds: none, a row [1, n], the whole [m, n], a column [m, 1].
enum class Addend { kNone, kRow, kFull, kColumn };

class PackedGemmTest : public ::testing::TestWithParam<std::tuple<DType, internal::PackedTiles>> {
 protected:
  void SetUp() override {
    if (!internal::CpuHasPackedGemm()) GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
    if (!internal::CpuHasPackedTiles(Tiles())) GTEST_SKIP() << "this CPU lacks AVX-512";
  }
  static DType Type() { return std::get<0>(GetParam()); }
  static internal::PackedTiles Tiles() { return std::get<1>(GetParam()); }

  // Runs g on random operands with `threads` threads and checks every output against float64:
  // within one rounding to C's dtype of the exact value plus the float sum's error bound
  // (k 2^-24 sum |alpha a b|), which a wrong transpose, block edge or addend exceeds by far.
  void Check(internal::FastGemmArgs g, Addend addend, int threads) {
    const DType t = g.ab_type;
    const int64_t a_matrices = g.stride_a == 0 ? 1 : g.batch;
    const int64_t b_matrices = g.stride_b == 0 ? 1 : g.batch;
    Buffer a = RandomBuffer(t, {a_matrices, g.m * g.k}, rng_);
    Buffer b = RandomBuffer(t, {b_matrices, g.k * g.n}, rng_);
    g.add_rows = addend == Addend::kFull || addend == Addend::kColumn ? g.m : 1;
    g.add_cols = addend == Addend::kFull || addend == Addend::kRow ? g.n : 1;
    Buffer add = RandomBuffer(g.c_type, {g.add_rows, g.add_cols}, rng_);
    g.addend = addend == Addend::kNone ? nullptr : add.data();
    Buffer c = MakeBuffer(g.c_type, {g.batch, g.m, g.n});
    internal::PackedGemm(g, a.data(), b.data(), c.data(), threads, Tiles());

    const std::vector<double> av = Values(a), bv = Values(b), addv = Values(add), got = Values(c);
    const double unit = g.c_type == DType::kF16    ? std::ldexp(1.0, -11)
                        : g.c_type == DType::kBF16 ? std::ldexp(1.0, -8)
                                                   : 0.0;
    int failures = 0;
    for (int64_t bi = 0; bi < g.batch && failures < 5; ++bi) {
      const double* pa = av.data() + (g.stride_a == 0 ? 0 : bi * g.m * g.k);
      const double* pb = bv.data() + (g.stride_b == 0 ? 0 : bi * g.k * g.n);
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0, mag = 0;
          for (int64_t l = 0; l < g.k; ++l) {
            const double p = pa[g.trans_a ? l * g.m + i : i * g.k + l] *
                             pb[g.trans_b ? j * g.k + l : l * g.n + j];
            sum += p;
            mag += std::fabs(p);
          }
          double want = g.alpha * sum;
          if (g.addend != nullptr) {
            want += addv[(g.add_rows == 1 ? 0 : i) * g.add_cols + (g.add_cols == 1 ? 0 : j)];
          }
          const double y = got[(bi * g.m + i) * g.n + j];
          const double tol = std::fabs(want) * unit +
                             1.01 * static_cast<double>(g.k + 2) * std::ldexp(1.0, -24) *
                                 (std::fabs(g.alpha) * mag + 4.0) +
                             1e-30;
          if (!(std::fabs(y - want) <= tol)) {
            ADD_FAILURE() << "batch " << bi << " [" << i << "," << j << "]: got " << y << " want "
                          << want << " (tol " << tol << ")";
            if (++failures == 5) break;
          }
        }
      }
    }
  }

  std::mt19937_64 rng_{41};
};

TEST_P(PackedGemmTest, MatchesFloat64AcrossShapesTransposesAndAddends) {
  const Shape shapes[] = {{1, 1, 1},      {7, 5, 3},    {13, 33, 300}, {100, 70, 513},
                          {6, 16, 1024},  {8, 32, 256}, {9, 20, 2100}, {50, 1030, 20},
                          {80, 17, 1025}, {17, 65, 257}};
  for (const Shape& s : shapes) {
    for (int variant = 0; variant < 8; ++variant) {
      internal::FastGemmArgs g;
      g.ab_type = Type();
      g.c_type = variant >= 4 ? DType::kF32 : Type();
      g.trans_a = (variant & 1) != 0;
      g.trans_b = (variant & 2) != 0;
      g.m = s.m;
      g.n = s.n;
      g.k = s.k;
      g.alpha = variant % 3 == 0 ? 1.0f : 0.5f;
      for (Addend addend : {Addend::kNone, Addend::kRow, Addend::kFull, Addend::kColumn}) {
        SCOPED_TRACE(::testing::Message()
                     << "m " << s.m << " n " << s.n << " k " << s.k << " variant " << variant
                     << " addend " << static_cast<int>(addend));
        Check(g, addend, 1);
      }
    }
  }
}

TEST_P(PackedGemmTest, BatchesWithSharedAndStridedOperands) {
  for (int shared = 0; shared < 3; ++shared) {  // 0: both strided, 1: B shared, 2: A shared
    internal::FastGemmArgs g;
    g.ab_type = g.c_type = Type();
    g.batch = 5;
    g.m = 20;
    g.n = 24;
    g.k = 40;
    g.trans_b = shared == 1;
    g.stride_a = shared == 2 ? 0 : g.m * g.k;
    g.stride_b = shared == 1 ? 0 : g.k * g.n;
    SCOPED_TRACE(::testing::Message() << "shared " << shared);
    Check(g, Addend::kNone, 1);
    Check(g, Addend::kNone, 3);
  }
}

// Split over threads by column strips (a wide C) and by row strips (a tall one): each output is
// computed by one strip with the same blocks, so the bits do not depend on the thread count.
TEST_P(PackedGemmTest, ThreadCountDoesNotChangeTheBits) {
  const Shape shapes[] = {{40, 700, 1100}, {700, 40, 300}};
  for (const Shape& s : shapes) {
    internal::FastGemmArgs g;
    g.ab_type = g.c_type = Type();
    g.m = s.m;
    g.n = s.n;
    g.k = s.k;
    g.trans_a = true;
    SCOPED_TRACE(::testing::Message() << "m " << s.m << " n " << s.n);
    Check(g, Addend::kRow, 3);
    Buffer a = RandomBuffer(g.ab_type, {g.k, g.m}, rng_);
    Buffer b = RandomBuffer(g.ab_type, {g.k, g.n}, rng_);
    Buffer one = MakeBuffer(g.c_type, {g.m, g.n}), three = MakeBuffer(g.c_type, {g.m, g.n});
    internal::PackedGemm(g, a.data(), b.data(), one.data(), 1, Tiles());
    internal::PackedGemm(g, a.data(), b.data(), three.data(), 3, Tiles());
    EXPECT_EQ(one.bytes, three.bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(DtypesAndTiles, PackedGemmTest,
                         ::testing::Combine(::testing::Values(DType::kF16, DType::kBF16),
                                            ::testing::Values(internal::PackedTiles::kAvx2,
                                                              internal::PackedTiles::kAvx512)),
                         [](const auto& info) {
                           return std::string(ElemName(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) == internal::PackedTiles::kAvx512
                                       ? "_avx512"
                                       : "_avx2");
                         });

}  // namespace
}  // namespace a8::cpu

// Stable memory (kernels/cpu/stable_regions.h) and the fast GEMM's packed copies of a B that lies
// in it (onednn_gemm.h): packed once per write, and a product after a write sees the new values.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/cpu/onednn_gemm.h"
#include "kernels/cpu/stable_regions.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

using testing::Buffer;
using testing::MakeBuffer;
using testing::RandomBuffer;

TEST(StableRegionsTest, AGenerationChangesOnlyWithAnOverlappingWrite) {
  std::vector<char> mem(400);
  const int owner = 0;
  char* p = mem.data() + 100;
  EXPECT_EQ(internal::StableGeneration(p, 100), 0u);
  WatchStableRegion(&owner, p, 100);
  const uint64_t g0 = internal::StableGeneration(p, 100);
  EXPECT_NE(g0, 0u);
  EXPECT_EQ(internal::StableGeneration(p + 50, 50), g0);
  EXPECT_EQ(internal::StableGeneration(p, 101), 0u) << "a range past the region's end";
  EXPECT_EQ(internal::StableGeneration(p - 1, 10), 0u) << "a range before the region";
  // An overlapping region is not registered.
  WatchStableRegion(&owner, p + 50, 100);
  EXPECT_EQ(internal::StableGeneration(p + 100, 10), 0u);
  // Writes beside the region leave it alone; one that overlaps it by a byte does not.
  NoteWrite(p + 100, 10);
  NoteWrite(p - 10, 10);
  EXPECT_EQ(internal::StableGeneration(p, 100), g0);
  NoteWrite(p + 99, 10);
  const uint64_t g1 = internal::StableGeneration(p, 100);
  EXPECT_NE(g1, g0);
  NoteWrite(p - 5, 6);
  EXPECT_NE(internal::StableGeneration(p, 100), g1);
  // The same overlap rule answers OverlapsStableRegion (which outputs the CPU backend reports).
  EXPECT_TRUE(OverlapsStableRegion(p + 99, 10));
  EXPECT_TRUE(OverlapsStableRegion(p - 5, 6));
  EXPECT_FALSE(OverlapsStableRegion(p + 100, 10));
  EXPECT_FALSE(OverlapsStableRegion(p - 10, 10));
  ForgetStableRegions(&owner);
  EXPECT_EQ(internal::StableGeneration(p, 100), 0u);
  EXPECT_FALSE(OverlapsStableRegion(p, 100));
}

// C = A B, one product on the calling thread, in OneDnnPackingDtype (bf16, or f32 where bf16 does
// not reach oneDNN's own kernel, which packs the B it is given).
class PackedWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    t_ = testing::OneDnnPackingDtype();
    g_.ab_type = g_.c_type = t_;
    g_.m = 32;
    g_.n = g_.k = 256;
    a_ = RandomBuffer(t_, {32, 256}, rng_);
    b_ = RandomBuffer(t_, {256, 256}, rng_);
    const int64_t packs = internal::FastGemmPacks();
    Buffer y = MakeBuffer(t_, {32, 256});
    StatusOr<bool> ran = internal::FastGemm(g_, a_.data(), b_.data(), y.data());
    ASSERT_TRUE(ran.ok()) << ran.status().message();
    if (!*ran) {
      GTEST_SKIP() << "oneDNN has no fast " << ElemName(t_)
                   << " matmul with this CPU and oneDNN version ("
                   << internal::FastGemmDescription() << ")";
    }
    if (internal::FastGemmPacks() == packs)
      GTEST_SKIP() << "the fast " << ElemName(t_) << " kernel reads B as it is here, nothing to "
                   << "cache (" << internal::FastGemmDescription() << ")";
  }
  Buffer Product(const Buffer& b) {
    Buffer y = MakeBuffer(t_, {32, 256});
    StatusOr<bool> ran = internal::FastGemm(g_, a_.data(), b.data(), y.data());
    EXPECT_TRUE(ran.ok() && *ran) << "the fast path failed or declined after SetUp ran it";
    return y;
  }
  // The packs one product of `b` makes.
  int64_t PacksOf(const Buffer& b, Buffer* y) {
    const int64_t before = internal::FastGemmPacks();
    *y = Product(b);
    return internal::FastGemmPacks() - before;
  }
  DType t_ = DType::kBF16;
  internal::FastGemmArgs g_;
  std::mt19937_64 rng_{21};
  Buffer a_, b_;
};

TEST_F(PackedWeightsTest, AWeightIsPackedOncePerWriteAndProductsFollowTheWrites) {
  const int owner = 0;
  Buffer plain, y1, y2, y3, y4;
  ASSERT_EQ(PacksOf(b_, &plain), 1) << "a B outside stable memory is packed on every product";
  WatchStableRegion(&owner, b_.data(), b_.bytes.size());
  EXPECT_EQ(PacksOf(b_, &y1), 1);
  EXPECT_EQ(PacksOf(b_, &y2), 0) << "unchanged stable B packed again";
  EXPECT_EQ(y1.bytes, plain.bytes);
  EXPECT_EQ(y2.bytes, plain.bytes);

  // New values in B, reported by a write that covers only part of it.
  Buffer fresh = RandomBuffer(t_, {256, 256}, rng_);
  b_.bytes = fresh.bytes;  // same size: B's storage stays where it is
  NoteWrite(static_cast<char*>(b_.data()) + 10, 2);
  EXPECT_EQ(PacksOf(b_, &y3), 1) << "a written B was not packed again";
  Buffer expected = Product(fresh);  // `fresh` is not stable memory: packed from its own values
  EXPECT_EQ(y3.bytes, expected.bytes);
  EXPECT_NE(y3.bytes, plain.bytes);

  ForgetStableRegions(&owner);
  EXPECT_EQ(PacksOf(b_, &y4), 1);
  EXPECT_EQ(PacksOf(b_, &y4), 1) << "a forgotten region still served a cached copy";
  EXPECT_EQ(y4.bytes, expected.bytes);
}

}  // namespace
}  // namespace a8::cpu

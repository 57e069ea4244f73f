// PlacementTest: PlaceInOrder (the segment tree of merged intervals) gives the offsets of the
// direct O(n^2) walk, PlaceInOrderReference, on hand-made cases and random buffer sets shaped
// like short-lived intermediates plus long-lived saved activations; and its placements never
// give conflicting buffers overlapping bytes.
#include "passes/memory/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace a8 {
namespace {

std::vector<int> BySizeDescending(const std::vector<PlacedBuffer>& buffers) {
  std::vector<int> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return buffers[a].size > buffers[b].size; });
  return order;
}

void ExpectSameAsReference(std::vector<PlacedBuffer> buffers, const std::vector<int>& order,
                           Fit fit) {
  std::vector<PlacedBuffer> expected = buffers;
  const int64_t arena = PlaceInOrder(buffers, order, fit);
  const int64_t expected_arena = PlaceInOrderReference(expected, order, fit);
  ASSERT_EQ(arena, expected_arena);
  for (int b : order) {
    ASSERT_EQ(buffers[b].offset, expected[b].offset) << "buffer " << b;
  }
  for (size_t a = 0; a < buffers.size(); ++a) {
    for (size_t b = a + 1; b < buffers.size(); ++b) {
      const PlacedBuffer& x = buffers[a];
      const PlacedBuffer& y = buffers[b];
      if (x.last < y.first || y.last < x.first) continue;
      ASSERT_TRUE(x.offset + x.size <= y.offset || y.offset + y.size <= x.offset)
          << "buffers " << a << " and " << b << " live together and share bytes";
    }
    ASSERT_LE(buffers[a].offset + buffers[a].size, arena);
  }
}

TEST(PlacementTest, HandMadeHolesAndTops) {
  // Live ranges that overlap, nest, touch and miss each other, including a graph input that is
  // also an output (-1 .. 10).
  std::vector<PlacedBuffer> buffers = {{640, 0, 5}, {320, 2, 3}, {640, 6, 8},
                                       {128, 2, 2}, {64, 0, 9},  {64, -1, 10}};
  for (Fit fit : {Fit::kLowest, Fit::kBest}) {
    ExpectSameAsReference(buffers, BySizeDescending(buffers), fit);
    std::vector<int> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    ExpectSameAsReference(buffers, order, fit);
  }
  std::vector<PlacedBuffer> placed = buffers;
  PlaceInOrder(placed, {0, 2}, Fit::kLowest);
  EXPECT_EQ(placed[0].offset, 0);
  EXPECT_EQ(placed[2].offset, 0);  // not live with buffer 0
}

// A at 0, B (live only at 1) at 64, C at 256, D (live only at 1) at 320, E on top at 448.
// At position 2 the holes are [64, 256) (192 bytes) and [320, 448) (128 bytes): F, 128 bytes
// live at 2, goes to 64 with kLowest and to 320 with kBest. Placed in this order.
const std::vector<PlacedBuffer> kTwoHoles = {{64, 0, 4},  {192, 1, 1}, {64, 0, 4},
                                             {128, 1, 1}, {64, 0, 4},  {128, 2, 2}};

TEST(PlacementTest, BestFitTakesTheSmallestHoleThatHolds) {
  const std::vector<PlacedBuffer>& buffers = kTwoHoles;
  const std::vector<int> order = {0, 1, 2, 3, 4, 5};
  for (Fit fit : {Fit::kLowest, Fit::kBest}) {
    std::vector<PlacedBuffer> placed = buffers;
    EXPECT_EQ(PlaceInOrder(placed, order, fit), 512);
    EXPECT_EQ(placed[2].offset, 256);
    EXPECT_EQ(placed[3].offset, 320);
    EXPECT_EQ(placed[4].offset, 448);
    EXPECT_EQ(placed[5].offset, fit == Fit::kLowest ? 64 : 320);
    ExpectSameAsReference(buffers, order, fit);
  }
}

TEST(PlacementTest, StopsOncePastTheLimitAndNotBefore) {
  // The arena reaches 512 with the last buffers placed (E at 448).
  const std::vector<PlacedBuffer>& buffers = kTwoHoles;
  const std::vector<int> order = {0, 1, 2, 3, 4, 5};
  for (Fit fit : {Fit::kLowest, Fit::kBest}) {
    std::vector<PlacedBuffer> placed = buffers;
    EXPECT_EQ(PlaceInOrder(placed, order, fit, 512), 512);  // at the limit: placed to the end
    EXPECT_EQ(placed[5].offset, fit == Fit::kLowest ? 64 : 320);
    // D ends at 448, E at 512: a limit of 448 is passed at E, which is placed; F is not.
    std::vector<PlacedBuffer> stopped = buffers;
    stopped[5].offset = -1;
    EXPECT_EQ(PlaceInOrder(stopped, order, fit, 448), 512);
    EXPECT_EQ(stopped[4].offset, 448);
    EXPECT_EQ(stopped[5].offset, -1);
    // Below 448 it stops at D.
    std::vector<PlacedBuffer> early = buffers;
    early[4].offset = early[5].offset = -1;
    EXPECT_EQ(PlaceInOrder(early, order, fit, 447), 448);
    EXPECT_EQ(early[3].offset, 320);
    EXPECT_EQ(early[4].offset, -1);
  }
}

TEST(PlacementTest, RandomBuffersMatchTheReference) {
  std::mt19937 rng(15);
  for (int round = 0; round < 300; ++round) {
    const int positions = 1 + static_cast<int>(rng() % 60);
    const int count = 1 + static_cast<int>(rng() % 80);
    std::vector<PlacedBuffer> buffers;
    for (int i = 0; i < count; ++i) {
      PlacedBuffer b;
      b.size = 64 * (1 + static_cast<int64_t>(rng() % (round % 3 == 0 ? 4 : 40)));
      b.first = static_cast<int>(rng() % (positions + 1)) - 1;
      const int kind = static_cast<int>(rng() % 4);
      const int span = kind == 0 ? positions : kind == 1 ? 3 : static_cast<int>(rng() % 8);
      b.last = std::min(positions, b.first + static_cast<int>(rng() % (span + 1)));
      buffers.push_back(b);
    }
    std::vector<int> shuffled(buffers.size());
    std::iota(shuffled.begin(), shuffled.end(), 0);
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    for (Fit fit : {Fit::kLowest, Fit::kBest}) {
      SCOPED_TRACE(::testing::Message() << "round " << round);
      ExpectSameAsReference(buffers, BySizeDescending(buffers), fit);
      ExpectSameAsReference(buffers, shuffled, fit);
    }
  }
}

TEST(PlacementTest, NestedSavedActivationsMatchTheReference) {
  // A training graph's shape: layer l's saved activations live from its forward position to its
  // backward position (nested ranges), with short-lived temporaries in between.
  std::mt19937 rng(7);
  const int layers = 40;
  const int positions = 4 * layers;
  std::vector<PlacedBuffer> buffers;
  for (int l = 0; l < layers; ++l) {
    for (int k = 0; k < 3; ++k) {
      buffers.push_back({64 * (1 + static_cast<int64_t>(rng() % 6)), 2 * l, positions - 2 * l});
    }
    buffers.push_back({64 * (1 + static_cast<int64_t>(rng() % 9)), 2 * l, 2 * l + 1});
    buffers.push_back(
        {64 * (1 + static_cast<int64_t>(rng() % 9)), positions - 2 * l - 1, positions - 2 * l});
  }
  for (Fit fit : {Fit::kLowest, Fit::kBest}) {
    ExpectSameAsReference(buffers, BySizeDescending(buffers), fit);
  }
}

}  // namespace
}  // namespace a8

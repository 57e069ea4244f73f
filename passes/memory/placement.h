// Arena placement of buffers with live ranges, for plan-memory (plan_memory.h).
//
// A buffer has an aligned size and a closed live range [first, last] of node positions
// (-1 = before the first node, num_nodes = after the last). Two buffers conflict when their
// live ranges overlap; conflicting buffers must get disjoint bytes.
//
// PlaceInOrder places buffers one by one in the given order, each at the lowest offset
// (Fit::kLowest) or in the smallest hole (Fit::kBest; the lowest of equal holes) between the
// buffers already placed that conflict with it, else on top of all of them: the greedy step of
// TFLite's "greedy by size" arena planner. It finds those holes with a segment tree over the
// positions whose nodes hold merged address intervals: `own`, the buffers whose canonical
// decomposition includes the node, and `starts`, the buffers whose first position lies in the
// node's range. The buffers conflicting with [first, last] are those covering `first` (the
// `own` sets on the path from that leaf to the root) and those starting in [first, last] (the
// `starts` sets of its canonical nodes): O(log n) small sets, whose holes a heap of each set's
// next interval walks in address order. A placement reads the pieces of those unions below the
// offset it picks rather than every placed buffer; a training graph's long-lived activations
// still make that a few pieces per layer. The offsets are those of PlaceInOrderReference, the
// direct O(n^2) walk over every placed buffer in address order, kept as the unit tests' oracle.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace a8 {

struct PlacedBuffer {
  int64_t size = 0;  // > 0
  int first = 0;     // >= -1
  int last = 0;      // >= first
  int64_t offset = 0;
};

enum class Fit { kLowest, kBest };

// Sets buffers[b].offset for every b in `order`; returns the largest offset + size (0 if
// nothing is placed). Buffers not in `order` are ignored. Once that arena passes `limit` the
// placement stops and returns it (> limit; the offsets are then partial): a caller keeping the
// smallest of several placements need not finish one that has lost.
int64_t PlaceInOrder(std::vector<PlacedBuffer>& buffers, const std::vector<int>& order, Fit fit,
                     int64_t limit = std::numeric_limits<int64_t>::max());

// The same result by the direct walk (O(n^2)); for tests.
int64_t PlaceInOrderReference(std::vector<PlacedBuffer>& buffers, const std::vector<int>& order,
                              Fit fit);

}  // namespace a8

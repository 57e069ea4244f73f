#include "passes/memory/placement.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace a8 {
namespace {

// Disjoint, non-touching address intervals [begin, end), sorted: the union of the buffers added.
// These sets stay small (buffers placed side by side merge into one interval), so a sorted
// vector beats a tree.
class IntervalUnion {
 public:
  bool empty() const { return spans_.empty(); }

  void Add(int64_t begin, int64_t end) {
    // The spans that overlap or touch [begin, end): from the first ending at or after `begin`
    // to the last beginning at or before `end`.
    auto lo = std::partition_point(spans_.begin(), spans_.end(),
                                   [&](const Span& s) { return s.second < begin; });
    auto hi = std::partition_point(lo, spans_.end(), [&](const Span& s) { return s.first <= end; });
    if (lo == hi) {
      spans_.insert(lo, {begin, end});
      return;
    }
    lo->first = std::min(lo->first, begin);
    lo->second = std::max((hi - 1)->second, end);
    spans_.erase(lo + 1, hi);
  }

  using Span = std::pair<int64_t, int64_t>;

  // The first span ending after x (x inside it when its begin is <= x), or nullptr.
  const Span* After(int64_t x) const {
    auto it = std::partition_point(spans_.begin(), spans_.end(),
                                   [&](const Span& s) { return s.second <= x; });
    return it == spans_.end() ? nullptr : &*it;
  }

 private:
  std::vector<Span> spans_;
};

class Placer {
 public:
  explicit Placer(int positions) {
    while (leaves_ < positions) leaves_ *= 2;
    own_.resize(2 * leaves_);
    starts_.resize(2 * leaves_);
  }

  // The offset for `size` bytes conflicting with nothing placed over [first, last] (leaf
  // indices). A placed buffer conflicts when it covers `first` (it is in `own` of a node on the
  // path from that leaf to the root: one of its canonical nodes holds the leaf) or begins in
  // [first, last] (it is in `starts` of the canonical node of [first, last] holding its first
  // leaf).
  int64_t Find(int64_t size, int first, int last, Fit fit) {
    sets_.clear();
    auto use = [&](const IntervalUnion& s) {
      if (!s.empty()) sets_.push_back(&s);
    };
    for (int lo = first + leaves_, hi = last + leaves_ + 1; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) use(starts_[lo++]);
      if (hi & 1) use(starts_[--hi]);
    }
    for (int a = first + leaves_; a >= 1; a >>= 1) use(own_[a]);
    // Walk the holes of the union of the sets in address order, with a heap of each set's
    // first span ending after x (refreshed lazily): spans starting at or below x move x past
    // their end; the lowest start above x ends the hole at x.
    heap_.clear();
    auto push = [&](int set, int64_t x) {
      if (const IntervalUnion::Span* span = sets_[set]->After(x)) {
        heap_.push_back({span->first, span->second, set});
        std::push_heap(heap_.begin(), heap_.end(), Later);
      }
    };
    for (int i = 0; i < static_cast<int>(sets_.size()); ++i) push(i, 0);
    int64_t best = -1, best_hole = 0;
    int64_t x = 0;
    for (;;) {
      while (!heap_.empty() && heap_.front().begin <= x) {
        std::pop_heap(heap_.begin(), heap_.end(), Later);
        const Head head = heap_.back();
        heap_.pop_back();
        x = std::max(x, head.end);
        push(head.set, x);
      }
      if (heap_.empty()) return best >= 0 ? best : x;  // x: the top of every conflicting buffer
      const int64_t next = heap_.front().begin;
      const int64_t hole = next - x;
      if (hole >= size && (best < 0 || (fit == Fit::kBest && hole < best_hole))) {
        best = x;
        best_hole = hole;
        // No hole is smaller than an exact fit, and equal ones higher up lose.
        if (fit == Fit::kLowest || hole == size) return best;
      }
      x = next;
    }
  }

  void Add(int64_t begin, int64_t end, int first, int last) {
    for (int lo = first + leaves_, hi = last + leaves_ + 1; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) own_[lo++].Add(begin, end);
      if (hi & 1) own_[--hi].Add(begin, end);
    }
    for (int a = first + leaves_; a >= 1; a >>= 1) starts_[a].Add(begin, end);
  }

 private:
  int leaves_ = 1;
  std::vector<IntervalUnion> own_;     // buffers whose canonical nodes include this one
  std::vector<IntervalUnion> starts_;  // buffers whose first position is in the node's range
  std::vector<const IntervalUnion*> sets_;
  struct Head {
    int64_t begin, end;
    int set;
  };
  static bool Later(const Head& a, const Head& b) { return a.begin > b.begin; }
  std::vector<Head> heap_;  // a min-heap by begin
};

}  // namespace

int64_t PlaceInOrder(std::vector<PlacedBuffer>& buffers, const std::vector<int>& order, Fit fit,
                     int64_t limit) {
  int max_last = 0;
  for (int b : order) max_last = std::max(max_last, buffers[b].last);
  Placer placer(max_last + 2);  // positions -1 .. max_last as leaves 0 .. max_last + 1
  int64_t arena = 0;
  for (int b : order) {
    PlacedBuffer& buf = buffers[b];
    buf.offset = placer.Find(buf.size, buf.first + 1, buf.last + 1, fit);
    placer.Add(buf.offset, buf.offset + buf.size, buf.first + 1, buf.last + 1);
    arena = std::max(arena, buf.offset + buf.size);
    if (arena > limit) break;
  }
  return arena;
}

int64_t PlaceInOrderReference(std::vector<PlacedBuffer>& buffers, const std::vector<int>& order,
                              Fit fit) {
  struct Placed {
    int64_t begin, end;
    int first, last;
    bool operator<(const Placed& o) const {
      return std::pair(begin, end) < std::pair(o.begin, o.end);
    }
  };
  std::vector<Placed> placed;
  int64_t arena = 0;
  for (int b : order) {
    PlacedBuffer& buf = buffers[b];
    int64_t best_offset = -1, best_gap = 0;
    int64_t cursor = 0;
    for (const Placed& p : placed) {
      if (!(p.first <= buf.last && buf.first <= p.last)) continue;  // not live at the same time
      int64_t gap = p.begin - cursor;
      if (gap >= buf.size && (best_offset < 0 || (fit == Fit::kBest && gap < best_gap))) {
        best_offset = cursor;
        best_gap = gap;
        if (fit == Fit::kLowest) break;
      }
      cursor = std::max(cursor, p.end);
    }
    if (best_offset < 0) best_offset = cursor;  // after every overlapping buffer
    buf.offset = best_offset;
    arena = std::max(arena, buf.offset + buf.size);
    const Placed mine{buf.offset, buf.offset + buf.size, buf.first, buf.last};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), mine), mine);
  }
  return arena;
}

}  // namespace a8

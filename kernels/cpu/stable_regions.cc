#include "kernels/cpu/stable_regions.h"

#include <atomic>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

namespace a8::cpu {
namespace {

struct Region {
  uintptr_t end;
  uint64_t generation;
  const void* owner;
};

struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Region> regions;  // by first byte; never overlapping
  uint64_t next_generation = 0;
  // Whether any region is registered: a write with none costs one load.
  std::atomic<bool> any{false};
};

Registry& Regions() {
  static Registry* r = new Registry();  // leaked: kernels may run during static destruction
  return *r;
}

}  // namespace

void WatchStableRegion(const void* owner, const void* p, size_t bytes) {
  if (p == nullptr || bytes == 0) return;
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t end = begin + bytes;
  Registry& r = Regions();
  std::lock_guard<std::mutex> lock(r.mu);
  auto next = r.regions.lower_bound(begin);
  if (next != r.regions.end() && next->first < end) return;
  if (next != r.regions.begin() && std::prev(next)->second.end > begin) return;
  r.regions.emplace(begin, Region{end, ++r.next_generation, owner});
  r.any.store(true, std::memory_order_release);
}

void ForgetStableRegions(const void* owner) {
  Registry& r = Regions();
  std::vector<std::pair<uintptr_t, uintptr_t>> dropped;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto it = r.regions.begin(); it != r.regions.end();) {
      if (it->second.owner == owner) {
        dropped.emplace_back(it->first, it->second.end);
        it = r.regions.erase(it);
      } else {
        ++it;
      }
    }
    r.any.store(!r.regions.empty(), std::memory_order_release);
  }
  for (const auto& [begin, end] : dropped) internal::DropCachedCopies(begin, end);
}

namespace {

// The first region that overlaps [begin, ...) or starts after begin (r.mu held).
std::map<uintptr_t, Region>::iterator FirstFrom(Registry& r, uintptr_t begin) {
  auto it = r.regions.upper_bound(begin);
  if (it != r.regions.begin() && std::prev(it)->second.end > begin) it = std::prev(it);
  return it;
}

}  // namespace

void NoteWrite(const void* p, size_t bytes) {
  Registry& r = Regions();
  if (bytes == 0 || !r.any.load(std::memory_order_acquire)) return;
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t end = begin + bytes;
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto it = FirstFrom(r, begin); it != r.regions.end() && it->first < end; ++it) {
    it->second.generation = ++r.next_generation;
  }
}

bool OverlapsStableRegion(const void* p, size_t bytes) {
  Registry& r = Regions();
  if (bytes == 0 || !r.any.load(std::memory_order_acquire)) return false;
  const auto begin = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = FirstFrom(r, begin);
  return it != r.regions.end() && it->first < begin + bytes;
}

namespace internal {

uint64_t StableGeneration(const void* p, size_t bytes) {
  Registry& r = Regions();
  if (!r.any.load(std::memory_order_acquire)) return 0;
  const auto begin = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.regions.upper_bound(begin);
  if (it == r.regions.begin()) return 0;
  --it;
  return begin + bytes <= it->second.end ? it->second.generation : 0;
}

}  // namespace internal
}  // namespace a8::cpu

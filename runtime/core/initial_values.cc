#include "runtime/core/initial_values.h"

#include <algorithm>

namespace a8 {

std::optional<std::vector<uint8_t*>> InitialValuesInPlace(const PlanFile& file) {
  if (file.pieces.empty()) return std::nullopt;
  for (const PlanBlobPiece& piece : file.pieces) {
    // Another PlanFile sharing the memory (a copy handed to a second executor) would see this
    // one's updates.
    if (!piece.writable || piece.owner == nullptr || piece.owner.use_count() != 1) {
      return std::nullopt;
    }
  }
  const plan::Plan& p = file.plan;
  struct Home {
    uint64_t offset, bytes;
    uint8_t* at;
  };
  std::vector<Home> homes;
  for (const plan::Buffer& b : p.buffers()) {
    if (b.region() != plan::Buffer::PERSISTENT || !b.has_init() || b.bytes() == 0) continue;
    const uint8_t* at = file.BlobBytes(b.blob_offset(), b.bytes());
    if (at == nullptr) return std::nullopt;  // the executor reports the bad range
    // Writable: the piece said so (ReadPlanFile's private memory).
    homes.push_back({b.offset(), b.bytes(), const_cast<uint8_t*>(at)});
  }
  if (homes.empty()) return std::nullopt;
  std::sort(homes.begin(), homes.end(),
            [](const Home& a, const Home& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < homes.size(); ++i) {
    if (homes[i].offset < homes[i - 1].offset + homes[i - 1].bytes) return std::nullopt;
  }
  std::vector<uint8_t*> where(p.buffers_size(), nullptr);
  for (int i = 0; i < p.buffers_size(); ++i) {
    const plan::Buffer& b = p.buffers(i);
    if (b.region() != plan::Buffer::PERSISTENT || b.bytes() == 0) continue;
    const uint64_t begin = b.offset(), end = b.offset() + b.bytes();
    // The last home starting at or before `begin`, and the first starting after it.
    auto next = std::upper_bound(homes.begin(), homes.end(), begin,
                                 [](uint64_t at, const Home& h) { return at < h.offset; });
    if (next != homes.end() && next->offset < end) return std::nullopt;  // reaches into a home
    if (next == homes.begin()) continue;
    const Home& h = *std::prev(next);
    if (begin >= h.offset + h.bytes) continue;          // after it: in the region
    if (end > h.offset + h.bytes) return std::nullopt;  // partly inside it
    where[i] = h.at + (begin - h.offset);
  }
  return where;
}

}  // namespace a8

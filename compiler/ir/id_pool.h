// IdPool<T>: objects numbered 0, 1, 2, ... in creation order, stored in fixed-size blocks so that
// consecutive ids are neighbours in memory and an object never moves (pointers to it stay valid
// until it is destroyed). Graph keeps its nodes and values here: a pass that walks the graph in
// program order reads memory mostly front to back instead of one scattered heap cell per node.
//
// Create(): constructs the next id's object (O(1)). Destroy(id): runs its destructor; the slot
// is not reused (ids are never reused), its memory goes back with the pool. Get(id): O(1).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace a8 {

template <typename T>
class IdPool {
 public:
  static constexpr int kBlockShift = 8;  // 256 objects a block
  static constexpr int kBlockSize = 1 << kBlockShift;

  IdPool() = default;
  IdPool(const IdPool&) = delete;
  IdPool& operator=(const IdPool&) = delete;
  ~IdPool() {
    for (int id = 0; id < size(); ++id)
      if (live_[id]) Get(id)->~T();
  }

  // Constructs the object with id size() and returns it.
  T* Create() {
    const int id = size();
    if ((id & (kBlockSize - 1)) == 0) blocks_.push_back(std::make_unique<Slot[]>(kBlockSize));
    T* p = new (Address(id)) T();
    live_.push_back(1);
    return p;
  }
  void Destroy(int id) {
    assert(id >= 0 && id < size() && live_[id]);
    Get(id)->~T();
    live_[id] = 0;
  }
  T* Get(int id) const {
    assert(id >= 0 && id < size() && live_[id]);
    return std::launder(reinterpret_cast<T*>(Address(id)));
  }
  bool live(int id) const { return id >= 0 && id < size() && live_[id] != 0; }
  // One more than the largest id created.
  int size() const { return static_cast<int>(live_.size()); }

 private:
  struct alignas(T) Slot {
    std::byte bytes[sizeof(T)];
  };
  void* Address(int id) const { return blocks_[id >> kBlockShift][id & (kBlockSize - 1)].bytes; }
  std::vector<std::unique_ptr<Slot[]>> blocks_;
  std::vector<uint8_t> live_;
};

}  // namespace a8

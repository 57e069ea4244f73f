// A thread's reusable scratch buffer, handed out from an aligned address.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace a8::cpu::internal {

// `size` bytes of `bytes`, grown as needed, from the first multiple of `align` (a power of two)
// in it. oneDNN's packed weights and layout buffers take 4 KiB, as oneDNN's own buffers (AMX tile
// loads from a misaligned B measured slower); PackedGemm's panels a 64-byte cache line.
inline void* AlignedIn(std::vector<uint8_t>& bytes, size_t size, size_t align = 4096) {
  if (bytes.size() < size + align) bytes.resize(size + align);
  const auto base = reinterpret_cast<uintptr_t>(bytes.data());
  return reinterpret_cast<void*>((base + align - 1) & ~(align - 1));
}

}  // namespace a8::cpu::internal

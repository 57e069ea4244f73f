// CRC-32C (Castagnoli) of plan files (plan_file.h): the SSE4.2 `crc32` instruction where the CPU
// has it, checked at run time, and a table otherwise.
#include <array>
#include <cstdint>
#include <cstring>

#include "compiler/plan/plan_file.h"

namespace a8 {
namespace {

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // Castagnoli
    t[i] = c;
  }
  return t;
}

}  // namespace

uint32_t Crc32cPortable(const void* data, size_t n, uint32_t crc) {
  static const std::array<uint32_t, 256> kTable = MakeCrcTable();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

#if defined(__x86_64__)
// SSE4.2's `crc32` computes CRC-32C 8 bytes an instruction. Three independent streams hide its
// 3-cycle latency; they are joined by shifting the first two over the bytes that follow them
// (a multiplication by x^(8*len) mod P, done here with the same instruction: CrcShift).
namespace {

__attribute__((target("sse4.2"))) uint32_t Crc32cHw8(const uint8_t* p, size_t n, uint32_t crc) {
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32;
}

// x^k mod P for the reflected CRC-32C polynomial, as a 32-bit polynomial (reflected).
uint32_t GfMul(uint32_t a, uint32_t b) {  // reflected multiply mod P
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) {
    if (b & 0x80000000u) r ^= a;
    b <<= 1;
    a = (a & 1) ? (a >> 1) ^ 0x82F63B78u : a >> 1;
  }
  return r;
}

// The operator that appends `bytes` zero bytes to a raw (not inverted) CRC state.
uint32_t ZerosOperator(size_t bytes) {
  uint32_t result = 0x80000000u;  // x^0
  uint32_t power = 0x00800000u;   // x^8 (one byte)
  for (size_t k = bytes; k > 0; k >>= 1) {
    if (k & 1) result = GfMul(result, power);
    power = GfMul(power, power);
  }
  return result;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cHw(const uint8_t* p, size_t n, uint32_t crc) {
  constexpr size_t kBlock = 8192;  // bytes per stream per round
  if (n >= 3 * kBlock) {
    static const uint32_t kShift = ZerosOperator(kBlock);
    while (n >= 3 * kBlock) {
      uint64_t a = crc, b = 0, c = 0;
      const uint8_t* pa = p;
      const uint8_t* pb = p + kBlock;
      const uint8_t* pc = p + 2 * kBlock;
      for (size_t i = 0; i < kBlock; i += 8) {
        uint64_t va, vb, vc;
        std::memcpy(&va, pa + i, 8);
        std::memcpy(&vb, pb + i, 8);
        std::memcpy(&vc, pc + i, 8);
        a = __builtin_ia32_crc32di(a, va);
        b = __builtin_ia32_crc32di(b, vb);
        c = __builtin_ia32_crc32di(c, vc);
      }
      // crc(A B C) = shift(shift(a) ^ b) ^ c, with raw states (no inversion inside).
      uint32_t ab = GfMul(static_cast<uint32_t>(a), kShift) ^ static_cast<uint32_t>(b);
      crc = GfMul(ab, kShift) ^ static_cast<uint32_t>(c);
      p += 3 * kBlock;
      n -= 3 * kBlock;
    }
  }
  return Crc32cHw8(p, n, crc);
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");

}  // namespace
#endif

bool Crc32cUsesHardware() {
#if defined(__x86_64__)
  return kHaveSse42;
#else
  return false;
#endif
}

uint32_t Crc32c(const void* data, size_t n, uint32_t crc) {
#if defined(__x86_64__)
  if (kHaveSse42) return ~Crc32cHw(static_cast<const uint8_t*>(data), n, ~crc);
#endif
  return Crc32cPortable(data, n, crc);
}

}  // namespace a8

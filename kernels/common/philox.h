// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// counter-based generator of Random123, the Dropout mask drawn from it, and the draws of the
// random ops (RandomUniform, RandomNormal, their -Like forms, Bernoulli: kernels/device/random.h).
//
// One host/device body (A8_HD, as in float16.h): the mask of element i depends only on
// (seed, offset, i), so the CPU reference and the CUDA kernels draw the same mask whatever their
// thread layout. Checked against Random123's known-answer vectors (kat_vectors).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/float16.h"

namespace a8 {

struct Philox4x32 {
  uint32_t v[4];
};

A8_HD void PhiloxMulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// Ten rounds of Philox4x32 on `counter` under `key`.
A8_HD Philox4x32 Philox4x32_10(Philox4x32 ctr, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    PhiloxMulHiLo(kM0, ctr.v[0], &hi0, &lo0);
    PhiloxMulHiLo(kM1, ctr.v[2], &hi1, &lo1);
    Philox4x32 next = {{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    ctr = next;
    key0 += kW0;
    key1 += kW1;
  }
  return ctr;
}

// The 32 random bits of element `i` of a stream: counter (i / 4 as 64 bits, offset as 64 bits),
// key = seed, lane i % 4 of the block. `offset` separates successive draws with the same seed
// (the runtime advances it by the number of elements drawn each step).
A8_HD uint32_t PhiloxBits(uint64_t seed, uint64_t offset, uint64_t i) {
  uint64_t block = i >> 2;
  Philox4x32 ctr = {{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                     static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)}};
  Philox4x32 r = Philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return r.v[i & 3];
}

// Uniform in [0, 1) with 24 random bits (exact in float).
A8_HD float PhiloxUniform(uint64_t seed, uint64_t offset, uint64_t i) {
  return static_cast<float>(PhiloxBits(seed, offset, i) >> 8) * 5.9604644775390625e-08f;
}

// Dropout keeps element i when its uniform draw is >= ratio (so ratio 0 keeps everything).
A8_HD bool DropoutKeep(uint64_t seed, uint64_t offset, uint64_t i, float ratio) {
  return PhiloxUniform(seed, offset, i) >= ratio;
}

// ---- the random ops' draws (kernels/device/random_impl.h): element i of a stream reads the
// four words of Philox block i (counter (i, offset), key `key`), so an element's value depends
// only on (key, offset, i), whatever the thread layout.

// SplitMix64's finalizer: the stream key of a seed (and of a node's name hash, XORed in).
A8_HD uint64_t SplitMix64Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// FNV-1a of `n` bytes (a node's name): separates the streams of the random nodes of a plan.
A8_HD uint64_t Fnv1a64(const char* s, uint64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 0x100000001b3ull;
  return h;
}

A8_HD Philox4x32 PhiloxBlock(uint64_t key, uint64_t offset, uint64_t block) {
  Philox4x32 ctr = {{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                     static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)}};
  return Philox4x32_10(ctr, static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}

// A double in [0, 1) with 53 random bits from two words (numpy's random_standard_uniform).
A8_HD double Uniform53(uint32_t a, uint32_t b) {
  return (static_cast<double>(a >> 5) * 67108864.0 + static_cast<double>(b >> 6)) *
         1.1102230246251565e-16;
}

// Element i of a uniform stream in [0, 1) (words 0 and 1 of block i).
A8_HD double PhiloxUniform53(uint64_t key, uint64_t offset, uint64_t i) {
  const Philox4x32 r = PhiloxBlock(key, offset, i);
  return Uniform53(r.v[0], r.v[1]);
}

// Element i of a standard normal stream: Box-Muller on the block's two 53-bit uniforms, the
// first moved to (0, 1] so that its log is finite.
A8_HD double PhiloxStandardNormal(uint64_t key, uint64_t offset, uint64_t i) {
  const Philox4x32 r = PhiloxBlock(key, offset, i);
  const double u1 = 1.0 - Uniform53(r.v[0], r.v[1]);
  const double u2 = Uniform53(r.v[2], r.v[3]);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

}  // namespace a8

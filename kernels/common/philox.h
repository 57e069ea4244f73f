// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// counter-based generator of Random123, and the Dropout mask drawn from it.
//
// One host/device body (A8_HD, as in float16.h): the mask of element i depends only on
// (seed, offset, i), so the CPU reference and the CUDA kernels draw the same mask whatever their
// thread layout. Checked against Random123's known-answer vectors (kat_vectors).
#pragma once

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

}  // namespace a8

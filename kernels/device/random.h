// The random ops: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike and
// Bernoulli, one body (random_impl.h) run by the CUDA backend, its host emulation (cuda-emu)
// and the CPU backend (through its host launch), so all three draw the same bits.
//
// Element i is drawn from Philox block i (kernels/common/philox.h) under a stream key:
//   - a `seed` attribute: key = SplitMix64(the seed's double bits), counter offset 0, so the node
//     gives the same values every step and every run;
//   - none: key = SplitMix64(step seed ^ FNV-1a of the node's name), offset = the step (read from
//     ctx.step on the device), so every node and every step draws a fresh stream.
// Uniform: low + (high - low) * u, u in [0, 1) with 53 bits, in double, rounded once to the
// output type; a value that rounds up to `high` is replaced by `low`, so outputs stay in
// [low, high). Normal: mean + scale * z, z by Box-Muller in double. Bernoulli: 1 where u < p
// (so p = 0 gives 0 and p = 1 gives 1 exactly), in any output dtype.
//
// Declarations only: included by host setup code and compiled by nvcc.
#pragma once

#include <cstdint>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS::random {

enum class RandomKind { kUniform, kNormal, kBernoulli };

struct RandomParams {
  RandomKind kind = RandomKind::kUniform;
  DType dtype = DType::kF32;  // the output's
  int64_t n = 0;
  void* y = nullptr;
  double a = 0.0, b = 1.0;  // uniform: low, high; normal: mean, scale
  const void* p = nullptr;  // Bernoulli: the probabilities, n elements of p_dtype
  DType p_dtype = DType::kF32;
  bool fixed_seed = false;
  uint64_t seed_key = 0;   // when fixed_seed: SplitMix64 of the seed's bits
  uint64_t node_hash = 0;  // otherwise mixed with the step's seed
};

DevStatus Random(DevCtx& ctx, const RandomParams& p);

}  // namespace a8::A8_DEV_NS::random

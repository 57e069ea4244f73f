// Seeded random test inputs shared by the unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace a8::testing {

// n draws of `dist` from std::mt19937(seed), in order.
template <typename Dist>
std::vector<float> RandomFloats(size_t n, uint32_t seed, Dist dist) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// n standard normal draws from std::mt19937(seed).
inline std::vector<float> RandomNormals(size_t n, uint32_t seed) {
  return RandomFloats(n, seed, std::normal_distribution<float>(0.0f, 1.0f));
}

}  // namespace a8::testing

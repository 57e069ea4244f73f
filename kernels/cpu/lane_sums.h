// Float sums in 16 lanes for the fast normalization kernels (batch_norm_fast.h,
// layer_norm_fast.h): two 8-float vectors of GCC's vector extensions (one register each with
// AVX2, two halves without). Written as plain arrays, GCC unrolled the lanes and shuffled them
// through 128-bit registers and the stack (a BatchNorm gradient sum was 8% of the example CNN's
// training step). The loops that use them are compiled for AVX-512, AVX2+FMA and baseline x86-64
// (A8_LANE_CLONES) and chosen at load time; the sums' order is fixed by the lanes, not by the CPU.
#pragma once

#include <cstdint>

namespace a8::cpu::lanes16 {

inline constexpr int kLanes = 16;

typedef float V8 __attribute__((vector_size(32)));
// An unaligned load of 8 floats (a vector type that may sit at any float and alias floats).
typedef float V8Unaligned __attribute__((vector_size(32), aligned(4), may_alias));

struct Lanes {
  V8 lo = {}, hi = {};
  float Sum() const {
    float s = 0.0f;
    for (int l = 0; l < 8; ++l) s += lo[l];
    for (int l = 0; l < 8; ++l) s += hi[l];
    return s;
  }
};

// The sum of `planes` runs of n floats, `stride` apart, in 16 lanes kept across the runs and
// added once at the end (a plane of a small image is a run or two of lanes).
float LaneSum(const float* x, int64_t planes, int64_t stride, int64_t n);
// The same of (x - m)^2.
float LaneSquaredDeviation(const float* x, int64_t planes, int64_t stride, int64_t n, float m);

}  // namespace a8::cpu::lanes16

#define A8_LANE_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
// A macro, not a function: a function returning a vector changes the ABI without AVX (psabi).
#define A8_LOAD_V8(p) (*reinterpret_cast<const ::a8::cpu::lanes16::V8Unaligned*>(p))

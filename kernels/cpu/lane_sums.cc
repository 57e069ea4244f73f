#include "kernels/cpu/lane_sums.h"

namespace a8::cpu::lanes16 {

A8_LANE_CLONES float LaneSum(const float* x, int64_t planes, int64_t stride, int64_t n) {
  Lanes acc;
  float s = 0.0f;
  for (int64_t p = 0; p < planes; ++p, x += stride) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      acc.lo += A8_LOAD_V8(x + i);
      acc.hi += A8_LOAD_V8(x + i + 8);
    }
    for (; i < n; ++i) s += x[i];
  }
  return s + acc.Sum();
}

A8_LANE_CLONES float LaneSquaredDeviation(const float* x, int64_t planes, int64_t stride,
                                          int64_t n, float m) {
  Lanes acc;
  float s = 0.0f;
  for (int64_t p = 0; p < planes; ++p, x += stride) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      const V8 d0 = A8_LOAD_V8(x + i) - m, d1 = A8_LOAD_V8(x + i + 8) - m;
      acc.lo += d0 * d0;
      acc.hi += d1 * d1;
    }
    for (; i < n; ++i) s += (x[i] - m) * (x[i] - m);
  }
  return s + acc.Sum();
}

}  // namespace a8::cpu::lanes16

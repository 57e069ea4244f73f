// What the reduction family's kernels share (reduce_impl.h, softmax_impl.h): the axis view's
// line start and the accumulator's infinity.
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/device/launch.h"
#include "kernels/device/reduce.h"

namespace a8::A8_DEV_NS {
namespace reduce_detail {

template <typename A>
A8_HD A Infinity() {
  return std::numeric_limits<A>::infinity();
}

// The start of line `r` of an [outer, len, inner] view (the line runs with stride inner).
A8_HD int64_t LineBase(const ReduceAxisView& v, int64_t r) {
  const int64_t o = r / v.inner;
  return o * v.len * v.inner + (r - o * v.inner);
}

}  // namespace reduce_detail
}  // namespace a8::A8_DEV_NS

// The window walk of pooling, one body for the CPU kernels (kernels/cpu/pool.cc,
// grad_conv_pool.cc) and the device kernels (kernels/device/nn_pool_impl.h). Spatial dims are
// padded to 3 with leading 1s; a geometry G has int64_t arrays in[3] (input dims), out[3] (output
// dims), k[3] (kernel), s[3] (strides), d[3] (dilations), pb[3] and pe[3] (begin and end pads).
#pragma once

#include <cstdint>

#include "kernels/common/float16.h"  // A8_HD

namespace a8 {

// Calls f(o, start) for every output o of one plane, in row-major order, with the input position
// of the window's first tap per dim (tap t of dim a sits at start[a] + t * d[a]).
template <typename G, typename F>
A8_HD void ForEachWindow(const G& g, F&& f) {
  int64_t o = 0;
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
      for (int64_t o2 = 0; o2 < g.out[2]; ++o2, ++o) {
        const int64_t start[3] = {o0 * g.s[0] - g.pb[0], o1 * g.s[1] - g.pb[1],
                                  o2 * g.s[2] - g.pb[2]};
        f(o, start);
      }
    }
  }
}

// Calls f(i) with the flat in-plane index i of every tap of the window starting at `start` that
// lies inside the input, in row-major tap order.
template <typename G, typename F>
A8_HD void ForEachTapInside(const G& g, const int64_t start[3], F&& f) {
  for (int64_t t0 = 0; t0 < g.k[0]; ++t0) {
    const int64_t i0 = start[0] + t0 * g.d[0];
    if (i0 < 0 || i0 >= g.in[0]) continue;
    for (int64_t t1 = 0; t1 < g.k[1]; ++t1) {
      const int64_t i1 = start[1] + t1 * g.d[1];
      if (i1 < 0 || i1 >= g.in[1]) continue;
      for (int64_t t2 = 0; t2 < g.k[2]; ++t2) {
        const int64_t i2 = start[2] + t2 * g.d[2];
        if (i2 < 0 || i2 >= g.in[2]) continue;
        f((i0 * g.in[1] + i1) * g.in[2] + i2);
      }
    }
  }
}

// Number of taps t in [0, k) with lo <= start + t * d < hi.
A8_HD int64_t CountTaps(int64_t start, int64_t k, int64_t d, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t t = 0; t < k; ++t) {
    const int64_t pos = start + t * d;
    n += pos >= lo && pos < hi;
  }
  return n;
}

// The divisor of AveragePool's window at `start`: its taps inside the input, or inside the padded
// input with count_include_pad.
template <typename G>
A8_HD int64_t AverageCount(const G& g, const int64_t start[3], bool count_include_pad) {
  int64_t count = 1;
  for (int a = 0; a < 3; ++a) {
    const int64_t lo = count_include_pad ? -g.pb[a] : 0;
    const int64_t hi = count_include_pad ? g.in[a] + g.pe[a] : g.in[a];
    count *= CountTaps(start[a], g.k[a], g.d[a], lo, hi);
  }
  return count;
}

}  // namespace a8

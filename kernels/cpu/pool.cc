#include "kernels/cpu/pool.h"

#include <algorithm>
#include <limits>

namespace a8::cpu {
namespace {

// Spatial geometry padded to 3 dims (leading 1s).
struct PoolGeometry {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  int64_t in_size = 1, out_size = 1;
};

StatusOr<PoolGeometry> MakePoolGeometry(const PoolParams& p, Dims* out_spatial) {
  const size_t r = p.in_spatial.size();
  if (r < 1 || r > 3) return Unsupported("Pool: {} spatial dims (1 to 3 are supported)", r);
  if (p.kernel.size() != r || (!p.strides.empty() && p.strides.size() != r) ||
      (!p.dilations.empty() && p.dilations.size() != r) ||
      (!p.pads.empty() && p.pads.size() != 2 * r)) {
    return InvalidInput("Pool: kernel/strides/dilations/pads do not match {} spatial dims", r);
  }
  PoolGeometry g;
  for (int i = 0; i < 3; ++i) {
    g.in[i] = g.out[i] = g.k[i] = g.s[i] = g.d[i] = 1;
    g.pb[i] = g.pe[i] = 0;
  }
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    const size_t j = 3 - r + i;
    g.in[j] = p.in_spatial[i];
    g.k[j] = p.kernel[i];
    g.s[j] = p.strides.empty() ? 1 : p.strides[i];
    g.d[j] = p.dilations.empty() ? 1 : p.dilations[i];
    g.pb[j] = p.pads.empty() ? 0 : p.pads[i];
    g.pe[j] = p.pads.empty() ? 0 : p.pads[r + i];
    if (g.k[j] < 1 || g.s[j] < 1 || g.d[j] < 1 || g.pb[j] < 0 || g.pe[j] < 0) {
      return InvalidInput("Pool: spatial dim {}: kernel {}, stride {}, dilation {}, pads {}+{}", i,
                          g.k[j], g.s[j], g.d[j], g.pb[j], g.pe[j]);
    }
    const int64_t span = (g.k[j] - 1) * g.d[j] + 1;
    const int64_t room = g.in[j] + g.pb[j] + g.pe[j] - span;
    if (room < 0) {
      return InvalidInput("Pool: spatial dim {}: kernel span {} exceeds padded input {}", i, span,
                          g.in[j] + g.pb[j] + g.pe[j]);
    }
    int64_t o = (p.ceil_mode ? (room + g.s[j] - 1) / g.s[j] : room / g.s[j]) + 1;
    if (p.ceil_mode && (o - 1) * g.s[j] >= g.in[j] + g.pb[j]) --o;
    g.out[j] = out[i] = o;
  }
  for (int i = 0; i < 3; ++i) {
    g.in_size *= g.in[i];
    g.out_size *= g.out[i];
  }
  if (out_spatial != nullptr) *out_spatial = out;
  return g;
}

}  // namespace

StatusOr<Dims> PoolOutputSpatial(const PoolParams& p) {
  Dims out;
  A8_ASSIGN_OR_RETURN(PoolGeometry g, MakePoolGeometry(p, &out));
  (void)g;
  return out;
}

}  // namespace a8::cpu

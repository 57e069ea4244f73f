#include "kernels/cpu/layer_norm_fast.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/lane_sums.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

// ---- Float loops over one row, in 16 lanes (lane_sums.h).
using namespace lanes16;

// y = (x - m) * inv * scale + bias (bias may be null); x == y is allowed.
A8_LANE_CLONES void RowApply(const float* x, int64_t n, float m, float inv, const float* scale,
                               const float* bias, float* y) {
  if (bias != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * scale[i] + bias[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * scale[i];
  }
}

// sums[0] = sum(g), sums[1] = sum(g * xhat), g = dy * scale, xhat = (x - m) * inv.
A8_LANE_CLONES void RowGradSums(const float* dy, const float* x, const float* scale, int64_t n,
                                  float m, float inv, float* sums) {
  Lanes a0, a1;
  float s0 = 0.0f, s1 = 0.0f;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const V8 g0 = A8_LOAD_V8(dy + i) * A8_LOAD_V8(scale + i);
    const V8 g1 = A8_LOAD_V8(dy + i + 8) * A8_LOAD_V8(scale + i + 8);
    a0.lo += g0;
    a0.hi += g1;
    a1.lo += g0 * ((A8_LOAD_V8(x + i) - m) * inv);
    a1.hi += g1 * ((A8_LOAD_V8(x + i + 8) - m) * inv);
  }
  for (; i < n; ++i) {
    const float g = dy[i] * scale[i];
    s0 += g;
    s1 += g * ((x[i] - m) * inv);
  }
  sums[0] = s0 + a0.Sum();
  sums[1] = s1 + a1.Sum();
}

// dx = inv * (g - mean_g - xhat * mean_gx); dx may be dy or x.
A8_LANE_CLONES void RowGradDx(const float* dy, const float* x, const float* scale, int64_t n,
                                float m, float inv, float mean_g, float mean_gx, float* dx) {
  for (int64_t i = 0; i < n; ++i) {
    const float xhat = (x[i] - m) * inv;
    dx[i] = inv * (dy[i] * scale[i] - mean_g - xhat * mean_gx);
  }
}

// ds += dy * xhat, db += dy.
A8_LANE_CLONES void RowParamSums(const float* dy, const float* x, int64_t n, float m, float inv,
                                   float* ds, float* db) {
  for (int64_t i = 0; i < n; ++i) {
    ds[i] += dy[i] * ((x[i] - m) * inv);
    db[i] += dy[i];
  }
}


// The statistics of one f32 row: mean and 1 / sqrt(biased variance + epsilon).
void RowStats(const float* x, int64_t n, float epsilon, float* mean, float* inv) {
  const float m = LaneSum(x, 1, 0, n) / static_cast<float>(n);
  const float var = LaneSquaredDeviation(x, 1, 0, n, m) / static_cast<float>(n);
  *mean = m;
  *inv = 1.0f / std::sqrt(var + epsilon);
}

// Row r of a T tensor as floats: the row itself for f32, else converted into `buf`.
template <typename T>
const float* RowInF32(const T* base, int64_t r, int64_t n, float* buf) {
  if constexpr (kIsHalfElem<T>) {
    ToF32(base + r * n, buf, n);
    return buf;
  } else {
    return base + r * n;
  }
}

// Rows a gradient task sums dscale and dbias over (one partial per block, added in block order).
constexpr int64_t kGradRowBlock = 16;

// The calling thread's `n` floats of row scratch (f16/bf16 rows converted to float), reused from
// step to step: these kernels run a dozen times a step.
float* RowScratch(int64_t n) {
  thread_local std::vector<uint8_t> bytes;
  return static_cast<float*>(internal::AlignedIn(bytes, static_cast<size_t>(n) * sizeof(float), 64));
}

Status CheckShape(const char* op, int64_t outer, int64_t inner, const float* scale) {
  if (outer < 0 || inner <= 0) {
    return InvalidInput("{}: {} rows of {} elements", op, outer, inner);
  }
  if (scale == nullptr) return InvalidInput("{}: Scale is missing", op);
  return Status::Ok();
}

}  // namespace

Status LayerNormFast(const LayerNormFastArgs& a) {
  A8_RETURN_IF_ERROR(CheckShape("LayerNormalization", a.outer, a.inner, a.scale));
  const int64_t n = a.inner;
  const bool done = VisitF32OrHalfType(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(a.x);
    T* y = static_cast<T*>(a.y);
    ParallelFor(a.outer, 4 * n, [&](int64_t r0, int64_t r1) {
      float* buf = RowScratch(n);  // unused by f32 rows
      for (int64_t r = r0; r < r1; ++r) {
        const float* xf = RowInF32(x, r, n, buf);
        float m, inv;
        RowStats(xf, n, a.epsilon, &m, &inv);
        if constexpr (kIsHalfElem<T>) {
          RowApply(xf, n, m, inv, a.scale, a.bias, buf);
          FromF32(buf, y + r * n, n);
        } else {
          RowApply(xf, n, m, inv, a.scale, a.bias, y + r * n);
        }
        if (a.mean != nullptr) a.mean[r] = m;
        if (a.inv_std_dev != nullptr) a.inv_std_dev[r] = inv;
      }
    });
  });
  if (!done) {
    return Unsupported("LayerNormalization: the fast kernel takes f32, f16 or bf16, not {}",
                       ElemName(a.dtype));
  }
  return Status::Ok();
}

Status LayerNormGradFast(const LayerNormGradFastArgs& a) {
  A8_RETURN_IF_ERROR(CheckShape("a8.LayerNormalizationGrad", a.outer, a.inner, a.scale));
  if ((a.mean == nullptr) != (a.inv_std_dev == nullptr)) {
    return InvalidInput("a8.LayerNormalizationGrad: Mean and InvStdDev come together");
  }
  const int64_t n = a.inner;
  const bool params = a.dscale != nullptr || a.dbias != nullptr;
  const int64_t blocks = (a.outer + kGradRowBlock - 1) / kGradRowBlock;
  // Per block: dscale's then dbias's partial sums (each block zeroes its own), in the calling
  // thread's buffer, reused from step to step.
  thread_local std::vector<uint8_t> part_bytes;
  float* part = params ? static_cast<float*>(internal::AlignedIn(
                             part_bytes, static_cast<size_t>(2 * blocks * n) * sizeof(float), 64))
                       : nullptr;
  const bool done = VisitF32OrHalfType(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* dy = static_cast<const T*>(a.dy);
    const T* x = static_cast<const T*>(a.x);
    T* dx = static_cast<T*>(a.dx);
    ParallelFor(blocks, 8 * kGradRowBlock * n, [&](int64_t b0, int64_t b1) {
      float* buf = RowScratch(3 * n);  // dy, x and dx rows (unused by f32 rows)
      for (int64_t b = b0; b < b1; ++b) {
        float* ds = params ? part + 2 * b * n : nullptr;
        float* db = params ? ds + n : nullptr;
        if (params) std::fill(ds, ds + 2 * n, 0.0f);
        const int64_t r_end = std::min(a.outer, (b + 1) * kGradRowBlock);
        for (int64_t r = b * kGradRowBlock; r < r_end; ++r) {
          const float* dyf = RowInF32(dy, r, n, buf);
          const float* xf = RowInF32(x, r, n, buf + n);
          float m, inv;
          if (a.mean != nullptr) {
            m = a.mean[r];
            inv = a.inv_std_dev[r];
          } else {
            RowStats(xf, n, a.epsilon, &m, &inv);
          }
          // dscale and dbias first: an f32 dx may be written over dy.
          if (params) RowParamSums(dyf, xf, n, m, inv, ds, db);
          if (dx != nullptr) {
            float sums[2];
            RowGradSums(dyf, xf, a.scale, n, m, inv, sums);
            const float mean_g = sums[0] / static_cast<float>(n);
            const float mean_gx = sums[1] / static_cast<float>(n);
            if constexpr (kIsHalfElem<T>) {
              RowGradDx(dyf, xf, a.scale, n, m, inv, mean_g, mean_gx, buf + 2 * n);
              FromF32(buf + 2 * n, dx + r * n, n);
            } else {
              RowGradDx(dyf, xf, a.scale, n, m, inv, mean_g, mean_gx, dx + r * n);
            }
          }
        }
      }
    });
  });
  if (!done) {
    return Unsupported("a8.LayerNormalizationGrad: the fast kernel takes f32, f16 or bf16, not {}",
                       ElemName(a.dtype));
  }
  if (!params) return Status::Ok();
  ParallelFor(n, 2 * blocks, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      float s = 0.0f, t = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        s += part[2 * b * n + j];
        t += part[(2 * b + 1) * n + j];
      }
      if (a.dscale != nullptr) a.dscale[j] = s;
      if (a.dbias != nullptr) a.dbias[j] = t;
    }
  });
  return Status::Ok();
}

}  // namespace a8::cpu

#include "kernels/cpu/batch_norm_fast.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/lane_sums.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

// ---- Float loops over `planes` runs of n floats, `stride` apart (a channel's planes across the
// batch), in 16 lanes kept across the runs (lane_sums.h).
using namespace lanes16;

// sums[0] += sum(dy), sums[1] += sum(dy * (x - m)); dy and x share the layout.
A8_LANE_CLONES void LaneDySums(const float* dy, const float* x, int64_t planes, int64_t stride,
                                 int64_t n, float m, float* sums) {
  Lanes a0, a1;
  float s0 = 0.0f, s1 = 0.0f;
  for (int64_t p = 0; p < planes; ++p, dy += stride, x += stride) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      const V8 g0 = A8_LOAD_V8(dy + i), g1 = A8_LOAD_V8(dy + i + 8);
      a0.lo += g0;
      a0.hi += g1;
      a1.lo += g0 * (A8_LOAD_V8(x + i) - m);
      a1.hi += g1 * (A8_LOAD_V8(x + i + 8) - m);
    }
    for (; i < n; ++i) {
      s0 += dy[i];
      s1 += dy[i] * (x[i] - m);
    }
  }
  sums[0] += s0 + a0.Sum();
  sums[1] += s1 + a1.Sum();
}

// y = (x - m) * k + shift; x == y is allowed.
A8_LANE_CLONES void AffineRun(const float* x, int64_t n, float m, float k, float shift,
                                float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * k + shift;
}

// dx = k * (dy - mean_dy - (x - m) * inv * mean_dyx); dx may be dy or x.
A8_LANE_CLONES void GradDxRun(const float* x, const float* dy, int64_t n, float m, float inv,
                                float k, float mean_dy, float mean_dyx, float* dx) {
  for (int64_t i = 0; i < n; ++i) {
    const float xhat = (x[i] - m) * inv;
    dx[i] = k * (dy[i] - mean_dy - xhat * mean_dyx);
  }
}


// ---- The same over a channel's planes of storage type T: f32 planes directly, f16/bf16 planes
// one at a time in blocks converted to float on the stack.

// Calls f(block, len) on each block of a channel's f16/bf16 planes, converted to float on the
// stack, plane by plane in order.
template <typename T, typename F>
void ForEachPlaneBlockInF32(const T* x, int64_t planes, int64_t stride, int64_t n, F f) {
  float buf[kF32Block];
  for (int64_t p = 0; p < planes; ++p) {
    ForEachF32Block(0, n, [&](int64_t i, int64_t len) {
      ToF32(x + p * stride + i, buf, len);
      f(buf, len);
    });
  }
}

template <typename T>
float ChannelSum(const T* x, int64_t planes, int64_t stride, int64_t n) {
  if constexpr (!kIsHalfElem<T>) {
    return LaneSum(x, planes, stride, n);
  } else {
    float s = 0.0f;
    ForEachPlaneBlockInF32(x, planes, stride, n,
                           [&](const float* b, int64_t len) { s += LaneSum(b, 1, 0, len); });
    return s;
  }
}

template <typename T>
float ChannelSquaredDeviation(const T* x, int64_t planes, int64_t stride, int64_t n, float m) {
  if constexpr (!kIsHalfElem<T>) {
    return LaneSquaredDeviation(x, planes, stride, n, m);
  } else {
    float s = 0.0f;
    ForEachPlaneBlockInF32(x, planes, stride, n, [&](const float* b, int64_t len) {
      s += LaneSquaredDeviation(b, 1, 0, len, m);
    });
    return s;
  }
}

template <typename T>
void ChannelDySums(const T* dy, const T* x, int64_t planes, int64_t stride, int64_t n, float m,
                   float* sums) {
  if constexpr (!kIsHalfElem<T>) {
    LaneDySums(dy, x, planes, stride, n, m, sums);
  } else {
    float gb[kF32Block], xb[kF32Block];
    for (int64_t p = 0; p < planes; ++p) {
      ForEachF32Block(0, n, [&](int64_t i, int64_t len) {
        ToF32(dy + p * stride + i, gb, len);
        ToF32(x + p * stride + i, xb, len);
        LaneDySums(gb, xb, 1, 0, len, m, sums);
      });
    }
  }
}

template <typename T>
void PlaneAffine(const T* x, int64_t n, float m, float k, float shift, T* y) {
  if constexpr (!kIsHalfElem<T>) {
    AffineRun(x, n, m, k, shift, y);
  } else {
    float buf[kF32Block];
    ForEachF32Block(0, n, [&](int64_t i, int64_t len) {
      ToF32(x + i, buf, len);
      AffineRun(buf, len, m, k, shift, buf);
      FromF32(buf, y + i, len);
    });
  }
}

template <typename T>
void PlaneGradDx(const T* x, const T* dy, int64_t n, float m, float inv, float k, float mean_dy,
                 float mean_dyx, T* dx) {
  if constexpr (!kIsHalfElem<T>) {
    GradDxRun(x, dy, n, m, inv, k, mean_dy, mean_dyx, dx);
  } else {
    float xb[kF32Block], gb[kF32Block];
    ForEachF32Block(0, n, [&](int64_t i, int64_t len) {
      ToF32(x + i, xb, len);
      ToF32(dy + i, gb, len);
      GradDxRun(xb, gb, len, m, inv, k, mean_dy, mean_dyx, gb);
      FromF32(gb, dx + i, len);
    });
  }
}

// The batch mean and biased variance of a channel: `batch` planes of `spatial` elements,
// `stride` apart.
template <typename T>
void ChannelMoments(const T* x, int64_t batch, int64_t stride, int64_t spatial, float* mean,
                    float* var) {
  const float count = static_cast<float>(batch * spatial);
  const float s = ChannelSum(x, batch, stride, spatial);
  const float m = count > 0 ? s / count : 0.0f;
  const float sq = ChannelSquaredDeviation(x, batch, stride, spatial, m);
  *mean = m;
  *var = count > 0 ? sq / count : 0.0f;
}

// BatchNormalization of channel c: x's and y's planes `stride` apart (y may be x).
template <typename T>
void BatchNormChannel(const BatchNormFastArgs& a, int64_t c, const T* x, int64_t stride, T* y) {
  float m, var;
  if (a.training) {
    ChannelMoments(x, a.batch, stride, a.spatial, &m, &var);
    // Read before written: the running outputs may alias the inputs.
    const float mom = a.momentum;
    const float rm = a.mean[c], rv = a.var[c];
    if (a.running_mean_out != nullptr) a.running_mean_out[c] = mom * rm + (1.0f - mom) * m;
    if (a.running_var_out != nullptr) a.running_var_out[c] = mom * rv + (1.0f - mom) * var;
  } else {
    m = a.mean[c];
    var = a.var[c];
  }
  const float inv = 1.0f / std::sqrt(var + a.epsilon);
  const float k = inv * a.scale[c], shift = a.bias[c];
  for (int64_t n = 0; n < a.batch; ++n)
    PlaneAffine(x + n * stride, a.spatial, m, k, shift, y + n * stride);
}

// The gradient of channel c: dy's, x's and dx's planes `stride` apart (dx may be dy or x).
template <typename T>
void BatchNormGradChannel(const BatchNormGradFastArgs& a, int64_t c, const T* dy, const T* x,
                          int64_t stride, T* dx) {
  float m, var;
  ChannelMoments(x, a.batch, stride, a.spatial, &m, &var);
  const float inv = 1.0f / std::sqrt(var + a.epsilon);
  float sums[2] = {0.0f, 0.0f};  // sum(dy), sum(dy * (x - m))
  ChannelDySums(dy, x, a.batch, stride, a.spatial, m, sums);
  const float sdy = sums[0], sdyx = sums[1] * inv;
  if (a.dscale != nullptr) a.dscale[c] = sdyx;
  if (a.dbias != nullptr) a.dbias[c] = sdy;
  const float count = static_cast<float>(a.batch * a.spatial);
  if (dx == nullptr || count <= 0) return;
  const float k = a.scale[c] * inv, mean_dy = sdy / count, mean_dyx = sdyx / count;
  for (int64_t n = 0; n < a.batch; ++n) {
    const int64_t off = n * stride;
    PlaneGradDx(x + off, dy + off, a.spatial, m, inv, k, mean_dy, mean_dyx, dx + off);
  }
}

// An f16/bf16 channel of at most this many elements is converted into one float buffer and
// run as f32: its planes are small (the example CNN's are 16 and 64 elements), and converting
// them a short block at a time, once per pass, cost 4x the f32 kernel.
constexpr int64_t kChannelInF32 = int64_t{1} << 15;

// A channel's `batch` planes of T (`stride` apart) into buf, contiguous, as float; and back.
template <typename T>
float* GatherChannel(const T* x, int64_t batch, int64_t stride, int64_t spatial,
                     std::vector<float>& buf) {
  buf.resize(static_cast<size_t>(batch * spatial));
  for (int64_t n = 0; n < batch; ++n) ToF32(x + n * stride, buf.data() + n * spatial, spatial);
  return buf.data();
}
template <typename T>
void ScatterChannel(const float* buf, int64_t batch, int64_t stride, int64_t spatial, T* y) {
  for (int64_t n = 0; n < batch; ++n) FromF32(buf + n * spatial, y + n * stride, spatial);
}

// What BatchNormFast and BatchNormGradFast share: `a`'s dims checked, then `channels(tag, c0, c1)`
// on ranges [c0, c1) of channels over the pool, with tag a value of the storage type. The pool's
// cost of a channel is `passes` times its batch * spatial elements.
template <typename Args, typename Channels>
Status ForEachChannelRange(const Args& a, const char* op, int64_t passes, Channels&& channels) {
  if (a.batch < 0 || a.channels < 0 || a.spatial < 0) {
    return InvalidInput("{}: negative dims", op);
  }
  const bool ran = VisitF32OrHalfType(a.dtype, [&](auto tag) {
    ParallelFor(a.channels, passes * a.batch * a.spatial,
                [&](int64_t c0, int64_t c1) { channels(tag, c0, c1); });
  });
  if (!ran) {
    return Unsupported("{}: the fast kernel takes f32, f16 or bf16 data, not {}", op,
                       ElemName(a.dtype));
  }
  return Status::Ok();
}

}  // namespace

Status BatchNormFast(const BatchNormFastArgs& a) {
  return ForEachChannelRange(a, "BatchNormalization", 3, [&](auto tag, int64_t c0, int64_t c1) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(a.x);
    T* y = static_cast<T*>(a.y);
    const int64_t stride = a.channels * a.spatial;
    std::vector<float> buf;
    for (int64_t c = c0; c < c1; ++c) {
      const T* xc = x + c * a.spatial;
      T* yc = y + c * a.spatial;
      if constexpr (kIsHalfElem<T>) {
        if (a.batch * a.spatial <= kChannelInF32) {
          float* f = GatherChannel(xc, a.batch, stride, a.spatial, buf);
          BatchNormChannel<float>(a, c, f, a.spatial, f);
          ScatterChannel(f, a.batch, stride, a.spatial, yc);
          continue;
        }
      }
      BatchNormChannel(a, c, xc, stride, yc);
    }
  });
}

Status BatchNormGradFast(const BatchNormGradFastArgs& a) {
  return ForEachChannelRange(
      a, "a8.BatchNormalizationGrad", 5, [&](auto tag, int64_t c0, int64_t c1) {
        using T = decltype(tag);
        const T* x = static_cast<const T*>(a.x);
        const T* dy = static_cast<const T*>(a.dy);
        T* dx = static_cast<T*>(a.dx);
        const int64_t stride = a.channels * a.spatial;
        std::vector<float> xbuf, gbuf;
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t off = c * a.spatial;
          if constexpr (kIsHalfElem<T>) {
            if (a.batch * a.spatial <= kChannelInF32) {
              const float* xf = GatherChannel(x + off, a.batch, stride, a.spatial, xbuf);
              float* gf = GatherChannel(dy + off, a.batch, stride, a.spatial, gbuf);
              BatchNormGradChannel<float>(a, c, gf, xf, a.spatial, dx != nullptr ? gf : nullptr);
              if (dx != nullptr) ScatterChannel(gf, a.batch, stride, a.spatial, dx + off);
              continue;
            }
          }
          BatchNormGradChannel(a, c, dy + off, x + off, stride, dx != nullptr ? dx + off : nullptr);
        }
      });
}

}  // namespace a8::cpu

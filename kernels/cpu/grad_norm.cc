// The CPU fast paths of BatchNormalization's and LayerNormalization's backward (see grad_nn.h,
// norm.h).
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cast_elem.h"
#include "kernels/cpu/grad_nn.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

// Per-channel sums over the planes (n * channels + c) of `count` elements each: the batch moments
// of X, then sum(dY) and sum(dY * x_hat). One thread per channel, planes in order.
template <typename T, typename C = Compute<T>>
struct ChannelSums {
  std::vector<C> mean, inv_std, sum_dy, sum_dy_xhat;
};

template <typename T, typename C = Compute<T>>
void SumChannels(const T* x, const T* dy, int64_t batch, int64_t channels, int64_t spatial, C eps,
                 bool batch_stats, ChannelSums<T>* s) {
  ParallelFor(channels, batch * spatial * 4, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      auto plane = [&](const T* base, int64_t n) { return base + (n * channels + c) * spatial; };
      // Each plane summed on its own, the planes' sums added in n order (as the forward).
      if (batch_stats) {
        C sum = 0;
        for (int64_t n = 0; n < batch; ++n) {
          C ps = 0;
          for (int64_t i = 0; i < spatial; ++i) ps += Load(plane(x, n)[i]);
          sum += ps;
        }
        const C m = sum / static_cast<C>(batch * spatial);
        C sq = 0;
        for (int64_t n = 0; n < batch; ++n) {
          C ps = 0;
          for (int64_t i = 0; i < spatial; ++i) {
            const C d = Load(plane(x, n)[i]) - m;
            ps += d * d;
          }
          sq += ps;
        }
        s->mean[c] = m;
        s->inv_std[c] = C(1) / std::sqrt(sq / static_cast<C>(batch * spatial) + eps);
      }
      C sdy = 0, sdyx = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* xp = plane(x, n);
        const T* gp = plane(dy, n);
        C ps = 0, ps2 = 0;
        for (int64_t i = 0; i < spatial; ++i) {
          const C g = Load(gp[i]);
          ps += g;
          ps2 += g * (Load(xp[i]) - s->mean[c]) * s->inv_std[c];
        }
        sdy += ps;
        sdyx += ps2;
      }
      s->sum_dy[c] = sdy;
      s->sum_dy_xhat[c] = sdyx;
    }
  });
}

}  // namespace

Status BatchNormGrad(const BatchNormParams& p, const void* dy, const void* x, const void* scale,
                     const void* mean, const void* var, void* dx, void* dscale, void* dbias,
                     void* dmean, void* dvar) {
  const char* op = "a8.BatchNormalizationGrad";
  const bool training = mean == nullptr || var == nullptr;
  if (training && (dmean != nullptr || dvar != nullptr)) {
    return InvalidInput("{}: dmean/dvar need the inference-mode statistics", op);
  }
  return Dispatch<TypeSet::kFloat>(p.dtype, op, [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* xp = static_cast<const T*>(x);
    const T* gp = static_cast<const T*>(dy);
    const int64_t nc = p.channels;
    A8_ASSIGN_OR_RETURN(std::vector<C> sc, LoadAs<C>(p.param_dtype, scale, nc, op));
    if (sc.empty()) return InvalidInput("{}: scale is missing", op);
    ChannelSums<T> s;
    s.mean.resize(nc);
    s.inv_std.resize(nc);
    s.sum_dy.resize(nc);
    s.sum_dy_xhat.resize(nc);
    const C eps = static_cast<C>(p.epsilon);
    if (!training) {
      A8_ASSIGN_OR_RETURN(s.mean, LoadAs<C>(p.stat_dtype, mean, nc, op));
      A8_ASSIGN_OR_RETURN(std::vector<C> v, LoadAs<C>(p.stat_dtype, var, nc, op));
      for (int64_t c = 0; c < nc; ++c) s.inv_std[c] = C(1) / std::sqrt(v[c] + eps);
    }
    SumChannels(xp, gp, p.batch, nc, p.spatial, eps, training, &s);
    if (dx != nullptr) {
      T* out = static_cast<T*>(dx);
      const C count = static_cast<C>(p.batch * p.spatial);
      ParallelFor(p.batch * nc, p.spatial * 4, [&](int64_t b, int64_t e) {
        for (int64_t plane = b; plane < e; ++plane) {
          const int64_t c = plane % nc;
          const C k = sc[c] * s.inv_std[c], m = s.mean[c], inv = s.inv_std[c];
          const C mean_dy = training ? s.sum_dy[c] / count : C(0);
          const C mean_dyx = training ? s.sum_dy_xhat[c] / count : C(0);
          for (int64_t i = 0; i < p.spatial; ++i) {
            const int64_t j = plane * p.spatial + i;
            const C xhat = (Load(xp[j]) - m) * inv;
            out[j] = Store<T>(k * (Load(gp[j]) - mean_dy - xhat * mean_dyx));
          }
        }
      });
    }
    A8_RETURN_IF_ERROR(StoreAs(p.param_dtype, s.sum_dy_xhat, dscale, op));
    A8_RETURN_IF_ERROR(StoreAs(p.param_dtype, s.sum_dy, dbias, op));
    if (!training) {
      std::vector<C> dm(nc), dv(nc);
      for (int64_t c = 0; c < nc; ++c) {
        dm[c] = -sc[c] * s.inv_std[c] * s.sum_dy[c];
        dv[c] = -C(0.5) * sc[c] * s.inv_std[c] * s.inv_std[c] * s.sum_dy_xhat[c];
      }
      A8_RETURN_IF_ERROR(StoreAs(p.stat_dtype, dm, dmean, op));
      A8_RETURN_IF_ERROR(StoreAs(p.stat_dtype, dv, dvar, op));
    }
    return Status::Ok();
  });
}

Status LayerNormGrad(const LayerNormParams& p, const void* dy, const void* x, const void* scale,
                     const void* mean, const void* inv_std_dev, void* dx, void* dscale,
                     void* dbias) {
  const char* op = "a8.LayerNormalizationGrad";
  return Dispatch<TypeSet::kFloat>(p.dtype, op, [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* xp = static_cast<const T*>(x);
    const T* gp = static_cast<const T*>(dy);
    A8_ASSIGN_OR_RETURN(std::vector<C> sc, LoadAs<C>(p.param_dtype, scale, p.inner, op));
    if (sc.empty()) return InvalidInput("{}: Scale is missing", op);
    // The forward normalized with statistics of the compute type; a narrower stash is only a
    // rounded copy of them, so recompute instead.
    const bool exact_stash = !std::is_same_v<C, double> || p.stat_dtype == DType::kF64;
    const bool have_stats = mean != nullptr && inv_std_dev != nullptr && exact_stash;
    std::vector<C> means, invs;
    if (have_stats) {
      A8_ASSIGN_OR_RETURN(means, LoadAs<C>(p.stat_dtype, mean, p.outer, op));
      A8_ASSIGN_OR_RETURN(invs, LoadAs<C>(p.stat_dtype, inv_std_dev, p.outer, op));
    } else {
      means.resize(p.outer);
      invs.resize(p.outer);
    }
    const C eps = static_cast<C>(p.epsilon), inner = static_cast<C>(p.inner);
    ParallelFor(p.outer, p.inner * 6, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const T* row = xp + r * p.inner;
        const T* grow = gp + r * p.inner;
        if (!have_stats) {
          C sum = 0;
          for (int64_t i = 0; i < p.inner; ++i) sum += Load(row[i]);
          const C m = sum / inner;
          C sq = 0;
          for (int64_t i = 0; i < p.inner; ++i) {
            const C d = Load(row[i]) - m;
            sq += d * d;
          }
          means[r] = m;
          invs[r] = C(1) / std::sqrt(sq / inner + eps);
        }
        if (dx == nullptr) continue;
        const C m = means[r], inv = invs[r];
        C sum_g = 0, sum_gx = 0;
        for (int64_t i = 0; i < p.inner; ++i) {
          const C g = Load(grow[i]) * sc[i];
          sum_g += g;
          sum_gx += g * (Load(row[i]) - m) * inv;
        }
        const C mean_g = sum_g / inner, mean_gx = sum_gx / inner;
        T* out = static_cast<T*>(dx) + r * p.inner;
        for (int64_t i = 0; i < p.inner; ++i) {
          const C xhat = (Load(row[i]) - m) * inv;
          out[i] = Store<T>(inv * (Load(grow[i]) * sc[i] - mean_g - xhat * mean_gx));
        }
      }
    });
    if (dscale == nullptr && dbias == nullptr) return Status::Ok();
    std::vector<C> ds(p.inner), db(p.inner);
    ParallelFor(p.inner, p.outer * 4, [&](int64_t ib, int64_t ie) {
      for (int64_t i = ib; i < ie; ++i) {
        C a = 0, b = 0;
        for (int64_t r = 0; r < p.outer; ++r) {
          const C g = Load(gp[r * p.inner + i]);
          a += g * (Load(xp[r * p.inner + i]) - means[r]) * invs[r];
          b += g;
        }
        ds[i] = a;
        db[i] = b;
      }
    });
    A8_RETURN_IF_ERROR(StoreAs(p.param_dtype, ds, dscale, op));
    return StoreAs(p.param_dtype, db, dbias, op);
  });
}

}  // namespace a8::cpu

// The CPU fast paths of BatchNormalization and LayerNormalization (see norm.h): a thread per
// channel or row, parameters loaded once per channel or row. Bit-identical to the shared body
// (kernels/device/nn_norm_impl.h), which DeviceNnTest checks.
#include "kernels/cpu/norm.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/cast_elem.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

// Moments of one LayerNorm row, in 8 interleaved partial sums added up in a fixed order at the
// end: the compiler keeps them in one vector register, where Moments' single running sum is a
// chain of dependent scalar adds (a LayerNorm row is short, 64 in BERT, and the chain was most
// of its time). Results still do not depend on the ISA or the thread count.
template <typename T, typename C = Compute<T>>
void RowMoments(const T* x, int64_t n, C* mean, C* var) {
  constexpr int64_t kLanes = 8;
  const int64_t body = n - n % kLanes;
  auto total = [&](auto term) {
    C lanes[kLanes] = {};
    for (int64_t i = 0; i < body; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] += term(Load(x[i + l]));
    }
    C sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
            ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (int64_t i = body; i < n; ++i) sum += term(Load(x[i]));
    return sum;
  };
  const C m = n > 0 ? total([](C v) { return v; }) / static_cast<C>(n) : C(0);
  const C sq = total([m](C v) { return (v - m) * (v - m); });
  *mean = m;
  *var = n > 0 ? sq / static_cast<C>(n) : C(0);
}

// Batch moments of channel c over [batch, spatial]: each (n, c) plane summed on its own, the
// planes' sums added in n order (the CUDA kernels sum the same way, a thread per plane).
template <typename T, typename C = Compute<T>>
void ChannelMoments(const T* x, const BatchNormParams& p, int64_t c, C* mean, C* var) {
  C sum = 0;
  const int64_t count = p.batch * p.spatial;
  for (int64_t n = 0; n < p.batch; ++n) {
    const T* plane = x + (n * p.channels + c) * p.spatial;
    C s = 0;
    for (int64_t i = 0; i < p.spatial; ++i) s += Load(plane[i]);
    sum += s;
  }
  const C m = count > 0 ? sum / static_cast<C>(count) : C(0);
  C sq = 0;
  for (int64_t n = 0; n < p.batch; ++n) {
    const T* plane = x + (n * p.channels + c) * p.spatial;
    C s = 0;
    for (int64_t i = 0; i < p.spatial; ++i) {
      C d = Load(plane[i]) - m;
      s += d * d;
    }
    sq += s;
  }
  *mean = m;
  *var = count > 0 ? sq / static_cast<C>(count) : C(0);
}

// y[n, c, :] = (x - mean[c]) * inv_std[c] * scale[c] + bias[c].
template <typename T, typename C = Compute<T>>
void NormalizeChannels(const BatchNormParams& p, const T* x, const std::vector<C>& mean,
                       const std::vector<C>& inv_std, const std::vector<C>& scale,
                       const std::vector<C>& bias, T* y) {
  ParallelFor(p.batch * p.channels, p.spatial * 4, [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane) {
      const int64_t c = plane % p.channels;
      const C m = mean[c], k = inv_std[c] * scale[c], sh = bias[c];
      for (int64_t i = 0; i < p.spatial; ++i) {
        const int64_t j = plane * p.spatial + i;
        y[j] = Store<T>((Load(x[j]) - m) * k + sh);
      }
    }
  });
}

}  // namespace

Status BatchNormInference(const BatchNormParams& p, const void* x, const void* scale,
                          const void* bias, const void* mean, const void* var, void* y) {
  return Dispatch<TypeSet::kFloat>(p.dtype, "BatchNormalization", [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const char* op = "BatchNormalization";
    A8_ASSIGN_OR_RETURN(std::vector<C> s, LoadAs<C>(p.param_dtype, scale, p.channels, op));
    A8_ASSIGN_OR_RETURN(std::vector<C> b, LoadAs<C>(p.param_dtype, bias, p.channels, op));
    A8_ASSIGN_OR_RETURN(std::vector<C> m, LoadAs<C>(p.stat_dtype, mean, p.channels, op));
    A8_ASSIGN_OR_RETURN(std::vector<C> v, LoadAs<C>(p.stat_dtype, var, p.channels, op));
    std::vector<C> inv_std(static_cast<size_t>(p.channels));
    for (int64_t c = 0; c < p.channels; ++c) {
      inv_std[c] = C(1) / std::sqrt(v[c] + static_cast<C>(p.epsilon));
    }
    NormalizeChannels(p, static_cast<const T*>(x), m, inv_std, s, b, static_cast<T*>(y));
    return Status::Ok();
  });
}

Status BatchNormTraining(const BatchNormParams& p, const void* x, const void* scale,
                         const void* bias, const void* running_mean_in, const void* running_var_in,
                         void* y, void* running_mean_out, void* running_var_out, void* saved_mean,
                         void* saved_inv_std) {
  return Dispatch<TypeSet::kFloat>(p.dtype, "BatchNormalization", [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const char* op = "BatchNormalization";
    const T* in = static_cast<const T*>(x);
    A8_ASSIGN_OR_RETURN(std::vector<C> s, LoadAs<C>(p.param_dtype, scale, p.channels, op));
    A8_ASSIGN_OR_RETURN(std::vector<C> b, LoadAs<C>(p.param_dtype, bias, p.channels, op));
    A8_ASSIGN_OR_RETURN(std::vector<C> rm,
                        LoadAs<C>(p.stat_dtype, running_mean_in, p.channels, op));
    A8_ASSIGN_OR_RETURN(std::vector<C> rv, LoadAs<C>(p.stat_dtype, running_var_in, p.channels, op));
    std::vector<C> mean(p.channels), var(p.channels), inv_std(p.channels);
    ParallelFor(p.channels, p.batch * p.spatial * 2, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        ChannelMoments(in, p, c, &mean[c], &var[c]);
        inv_std[c] = C(1) / std::sqrt(var[c] + static_cast<C>(p.epsilon));
      }
    });
    NormalizeChannels(p, in, mean, inv_std, s, b, static_cast<T*>(y));
    const C mom = static_cast<C>(p.momentum);
    if (!rm.empty()) {
      for (int64_t c = 0; c < p.channels; ++c) rm[c] = mom * rm[c] + (C(1) - mom) * mean[c];
    }
    if (!rv.empty()) {
      for (int64_t c = 0; c < p.channels; ++c) rv[c] = mom * rv[c] + (C(1) - mom) * var[c];
    }
    A8_RETURN_IF_ERROR(StoreAs(p.stat_dtype, rm, running_mean_out, op));
    A8_RETURN_IF_ERROR(StoreAs(p.stat_dtype, rv, running_var_out, op));
    A8_RETURN_IF_ERROR(StoreAs(p.stat_dtype, mean, saved_mean, op));
    return StoreAs(p.stat_dtype, inv_std, saved_inv_std, op);
  });
}

Status LayerNorm(const LayerNormParams& p, const void* x, const void* scale, const void* bias,
                 void* y, void* mean, void* inv_std_dev) {
  return Dispatch<TypeSet::kFloat>(p.dtype, "LayerNormalization", [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const char* op = "LayerNormalization";
    A8_ASSIGN_OR_RETURN(std::vector<C> s, LoadAs<C>(p.param_dtype, scale, p.inner, op));
    A8_ASSIGN_OR_RETURN(std::vector<C> b, LoadAs<C>(p.param_dtype, bias, p.inner, op));
    if (s.empty()) return InvalidInput("{}: Scale is missing", op);
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    std::vector<C> means(p.outer), inv_stds(p.outer);
    ParallelFor(p.outer, p.inner, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const T* row = in + r * p.inner;
        C m, v;
        RowMoments(row, p.inner, &m, &v);
        const C inv = C(1) / std::sqrt(v + static_cast<C>(p.epsilon));
        means[r] = m;
        inv_stds[r] = inv;
        T* orow = out + r * p.inner;
        if (b.empty()) {
          for (int64_t i = 0; i < p.inner; ++i) orow[i] = Store<T>((Load(row[i]) - m) * inv * s[i]);
        } else {
          for (int64_t i = 0; i < p.inner; ++i) {
            orow[i] = Store<T>((Load(row[i]) - m) * inv * s[i] + b[i]);
          }
        }
      }
    });
    A8_RETURN_IF_ERROR(StoreAs(p.stat_dtype, means, mean, op));
    return StoreAs(p.stat_dtype, inv_stds, inv_std_dev, op);
  });
}

}  // namespace a8::cpu

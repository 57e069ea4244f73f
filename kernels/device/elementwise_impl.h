// Unary math, Clip, Cast, Dropout and the activation gradients (kernels/device/elementwise.h).
// Broadcasting ops are in elementwise_binary_impl.h; the per-element math in elementwise_math.h.
#include "kernels/common/philox.h"
#include "kernels/device/elementwise.h"
#include "kernels/device/elementwise_math.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS {
namespace {

// y[i] = f(x[i]) stored as TO (f returns Acc<TO>); x == y is allowed.
template <typename T, typename TO, typename F>
struct MapKernel {
  const T* x;
  TO* y;
  F f;
  A8_HD T Load(int64_t i) const { return x[i]; }  // loads first on a GPU (launch.h)
  A8_HD void Store(int64_t i, T v) const { y[i] = Elem<TO>::Store(f(Elem<T>::Load(v))); }
  A8_HD void operator()(int64_t i) const { Store(i, Load(i)); }
};

// y = f(x) over p.n elements, x as T, y as TO.
template <typename T, typename TO, typename F>
DevStatus RunMap(const DevCtx& ctx, const UnaryParams& p, F f) {
  return ForEach(ctx, p.n,
                 MapKernel<T, TO, F>{static_cast<const T*>(p.x), static_cast<TO*>(p.y), f});
}

template <typename F>
DevStatus MapFloat(const DevCtx& ctx, const UnaryParams& p, F f) {
  return DispatchFloat(p.dtype,
                       [&](auto tag) { return RunMap<decltype(tag), decltype(tag)>(ctx, p, f); });
}

// Float and integer dtypes (not bool).
template <typename F>
DevStatus MapNumeric(const DevCtx& ctx, const UnaryParams& p, F f) {
  return DispatchNumeric(p.dtype, "elementwise: a numeric op on bool",
                         [&](auto tag) { return RunMap<decltype(tag), decltype(tag)>(ctx, p, f); });
}

// Float in, bool out.
template <typename F>
DevStatus MapPredicate(const DevCtx& ctx, const UnaryParams& p, F f) {
  return DispatchFloat(p.dtype, [&](auto tag) { return RunMap<decltype(tag), bool>(ctx, p, f); });
}

template <typename T>
struct ClipKernel {
  const T* x;
  T* y;
  const T* lo;
  const T* hi;
  bool has_lo_value, has_hi_value;
  float lo_value, hi_value;
  A8_HD void operator()(int64_t i) const {
    using C = Acc<T>;
    C v = Ld(x, i);
    if (lo != nullptr || has_lo_value) {
      const C l = lo != nullptr ? Ld(lo, 0) : static_cast<C>(lo_value);
      if (v < l) v = l;
    }
    if (hi != nullptr || has_hi_value) {
      const C h = hi != nullptr ? Ld(hi, 0) : static_cast<C>(hi_value);
      if (v > h) v = h;
    }
    St(y, i, v);
  }
};

template <typename From, typename To>
struct CastKernel {
  const From* x;
  To* y;
  A8_HD From Load(int64_t i) const { return x[i]; }
  A8_HD void Store(int64_t i, From v) const { y[i] = DevCast<To, From>(v); }
  A8_HD void operator()(int64_t i) const { Store(i, Load(i)); }
};

// The Philox key of one Dropout kernel: SplitMix64's finalizer of seed ^ node hash (the CPU's
// DropoutStreamKey, runtime/cpu/ops_elementwise.cc).
A8_HD uint64_t DropoutKey(uint64_t seed, uint64_t node_hash) {
  uint64_t z = seed ^ node_hash;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Dropout's ratio, read by the kernel from device memory (one element of `dtype`); 0.5 when
// there is none, as ONNX's default.
A8_HD float DropoutRatio(const void* ratio, DType dtype) {
  return ratio != nullptr ? LoadCast<float>(dtype, ratio, 0) : 0.5f;
}

// One thread per Philox block of 4 elements (PhiloxBits draws lane i % 4 of block i / 4).
template <typename T>
struct DropoutKernel {
  const T* x;
  T* y;
  bool* mask;
  int64_t n;
  const void* ratio;
  DType ratio_dtype;
  const bool* training;
  bool fixed_seed;
  uint64_t seed;
  uint64_t node_hash;
  const StepDev* step;

  A8_HD void operator()(int64_t block) const {
    using C = Acc<T>;
    const float r = DropoutRatio(ratio, ratio_dtype);
    const bool train = training != nullptr && *training && step->eval == 0;
    const int64_t begin = block * 4;
    const int64_t end = begin + 4 < n ? begin + 4 : n;
    if (!(r >= 0.0f && r < 1.0f)) {  // only reachable when the ratio is computed
      for (int64_t i = begin; i < end; ++i) {
        St(y, i, static_cast<C>(NAN));
        if (mask != nullptr) mask[i] = false;
      }
      return;
    }
    if (!train || r == 0.0f) {
      for (int64_t i = begin; i < end; ++i) {
        y[i] = x[i];
        if (mask != nullptr) mask[i] = true;
      }
      return;
    }
    const C scale = static_cast<C>(1.0f / (1.0f - r));
    const uint64_t key = DropoutKey(fixed_seed ? seed : step->seed, node_hash);
    const uint64_t offset = static_cast<uint64_t>(step->step);
    const uint64_t b = static_cast<uint64_t>(block);
    const Philox4x32 ctr = {{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                             static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)}};
    const Philox4x32 bits =
        Philox4x32_10(ctr, static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
    for (int64_t i = begin; i < end; ++i) {
      // PhiloxUniform: 24 random bits, exact in float.
      const float u = static_cast<float>(bits.v[i - begin] >> 8) * 5.9604644775390625e-08f;
      const bool keep = u >= r;
      if (mask != nullptr) mask[i] = keep;
      St(y, i, keep ? Ld(x, i) * scale : C(0));
    }
  }
};

template <typename T>
struct DropoutGradKernel {
  const T* dy;
  const bool* mask;
  T* dx;
  const void* ratio;
  DType ratio_dtype;
  const bool* training;
  A8_HD void operator()(int64_t i) const {
    using C = Acc<T>;
    const float r = DropoutRatio(ratio, ratio_dtype);
    if (!(r >= 0.0f && r < 1.0f)) {  // only reachable when the ratio is computed
      St(dx, i, static_cast<C>(NAN));
      return;
    }
    const bool train = training == nullptr || *training;
    // The forward's scale, computed in float.
    const C s = static_cast<C>(train ? 1.0f / (1.0f - r) : 1.0f);
    St(dx, i, mask[i] ? Ld(dy, i) * s : C(0));
  }
};

template <typename T, typename F>
struct GradKernel {
  const T* dy;
  const T* z;
  T* dx;
  F f;
  struct In {
    T dy, z;
  };
  A8_HD In Load(int64_t i) const { return {dy[i], z[i]}; }
  A8_HD void Store(int64_t i, const In& v) const {
    St(dx, i, f(Elem<T>::Load(v.dy), Elem<T>::Load(v.z)));
  }
  A8_HD void operator()(int64_t i) const { Store(i, Load(i)); }
};

template <typename F>
DevStatus MapGrad(const DevCtx& ctx, const ActGradParams& p, F f) {
  return DispatchFloat(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    return ForEach(ctx, p.n,
                   GradKernel<T, F>{static_cast<const T*>(p.dy), static_cast<const T*>(p.z),
                                    static_cast<T*>(p.dx), f});
  });
}

// One op of A8_UNARY_OPS, by its Types column (kernels/common/unary_math.h).
template <UnaryTypes kTypes, typename F>
DevStatus RunUnary(const DevCtx& ctx, const UnaryParams& p, F f) {
  if constexpr (kTypes == UnaryTypes::kBool) {
    if (p.dtype != DType::kBool) return DevError("Not: the operand is not bool");
    return RunMap<bool, bool>(ctx, p, f);
  } else if constexpr (kTypes == UnaryTypes::kSigned || kTypes == UnaryTypes::kNumeric) {
    return MapNumeric(ctx, p, f);
  } else if constexpr (kTypes == UnaryTypes::kPredicate) {
    return MapPredicate(ctx, p, f);
  } else {
    return MapFloat(ctx, p, f);
  }
}

}  // namespace

DevStatus Unary(DevCtx& ctx, const UnaryParams& p) {
  const UnaryAttrs& at = p.attrs;
  switch (p.op) {
#define A8_X(Name, Types, Cost, Fused) \
  case DevUnaryOp::k##Name:            \
    return RunUnary<UnaryTypes::k##Types>(ctx, p, Name##F{at});
    A8_UNARY_OPS(A8_X)
#undef A8_X
  }
  return DevError("elementwise: unknown unary op");
}

DevStatus Clip(DevCtx& ctx, const ClipParams& p) {
  return DispatchNumeric(p.dtype, "Clip: bool operand", [&](auto tag) {
    using T = decltype(tag);
    return ForEach(ctx, p.n,
                   ClipKernel<T>{static_cast<const T*>(p.x), static_cast<T*>(p.y),
                                 static_cast<const T*>(p.lo), static_cast<const T*>(p.hi),
                                 p.has_lo_value, p.has_hi_value, p.lo_value, p.hi_value});
  });
}

DevStatus Cast(DevCtx& ctx, const CastParams& p) {
  return DispatchAll(p.from, [&](auto from_tag) {
    using F = decltype(from_tag);
    return DispatchAll(p.to, [&](auto to_tag) {
      using T = decltype(to_tag);
      return ForEach(ctx, p.n, CastKernel<F, T>{static_cast<const F*>(p.x), static_cast<T*>(p.y)});
    });
  });
}

DevStatus Dropout(DevCtx& ctx, const DropoutParams& p) {
  if (ctx.step == nullptr) return DevError("Dropout: no step values");
  return DispatchFloat(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    DropoutKernel<T> k{static_cast<const T*>(p.x),
                       static_cast<T*>(p.y),
                       p.mask,
                       p.n,
                       p.ratio,
                       p.ratio_dtype,
                       p.training,
                       p.fixed_seed,
                       p.seed,
                       p.node_hash,
                       ctx.step};
    return ForEach(ctx, (p.n + 3) / 4, k);
  });
}

DevStatus DropoutGrad(DevCtx& ctx, const DropoutGradParams& p) {
  return DispatchFloat(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    // Two operands and a scale an element: the CPU kernel's estimate, so a large one goes parallel.
    return ForEach(ctx, p.n,
                   DropoutGradKernel<T>{static_cast<const T*>(p.dy), p.mask, static_cast<T*>(p.dx),
                                        p.ratio, p.ratio_dtype, p.training},
                   2);
  });
}

DevStatus ActivationGrad(DevCtx& ctx, const ActGradParams& p) {
  const UnaryAttrs& at = p.attrs;
  switch (p.op) {
#define A8_X(Name, Reads, Cost, Fused) \
  case DevActGradOp::k##Name:          \
    return MapGrad(ctx, p, Name##GradF{at});
    A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
  }
  return DevError("elementwise: unknown activation gradient");
}

}  // namespace a8::A8_DEV_NS

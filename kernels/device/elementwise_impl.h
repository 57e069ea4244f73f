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
  A8_HD void operator()(int64_t i) const { y[i] = Elem<TO>::Store(f(Ld(x, i))); }
};

template <typename F>
DevStatus MapFloat(const DevCtx& ctx, const UnaryParams& p, F f) {
  return DispatchFloat(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    return ForEach(ctx, p.n,
                   MapKernel<T, T, F>{static_cast<const T*>(p.x), static_cast<T*>(p.y), f});
  });
}

// Float and integer dtypes (not bool).
template <typename F>
DevStatus MapNumeric(const DevCtx& ctx, const UnaryParams& p, F f) {
  return DispatchAll(p.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return DevError("elementwise: a numeric op on bool");
    } else {
      return ForEach(ctx, p.n,
                     MapKernel<T, T, F>{static_cast<const T*>(p.x), static_cast<T*>(p.y), f});
    }
  });
}

// Float in, bool out.
template <typename F>
DevStatus MapPredicate(const DevCtx& ctx, const UnaryParams& p, F f) {
  return DispatchFloat(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    return ForEach(ctx, p.n,
                   MapKernel<T, bool, F>{static_cast<const T*>(p.x), static_cast<bool*>(p.y), f});
  });
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
  A8_HD void operator()(int64_t i) const { y[i] = DevCast<To, From>(x[i]); }
};

// The Philox key of one Dropout kernel: SplitMix64's finalizer of seed ^ node hash (the CPU's
// DropoutStreamKey, runtime/cpu/ops_elementwise.cc).
A8_HD uint64_t DropoutKey(uint64_t seed, uint64_t node_hash) {
  uint64_t z = seed ^ node_hash;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
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
    const float r = ratio != nullptr ? LoadCast<float>(ratio_dtype, ratio, 0) : 0.5f;
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
    const float r = ratio != nullptr ? LoadCast<float>(ratio_dtype, ratio, 0) : 0.5f;
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

// ---- activation gradients: f(dy, z) with z the saved forward output (Relu, Sigmoid, Tanh) or
// input (the rest), as kernels/cpu/grad_math.cc.
struct ReluGradF {
  template <typename A>
  A8_HD A operator()(A g, A y) const {
    return y > A(0) ? g : A(0);
  }
};
struct SigmoidGradF {
  template <typename A>
  A8_HD A operator()(A g, A y) const {
    return g * y * (A(1) - y);
  }
};
struct TanhGradF {
  template <typename A>
  A8_HD A operator()(A g, A y) const {
    return g * (A(1) - y * y);
  }
};
struct LeakyReluGradF {
  float alpha;
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    return x > A(0) ? g : static_cast<A>(alpha) * g;
  }
};
struct EluGradF {
  float alpha;
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    return x > A(0) ? g : static_cast<A>(alpha) * MExp(x) * g;
  }
};
// d/dx [x Phi(x)] = Phi(x) + x phi(x), Phi through erfc.
struct GeluGradF {
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    const A cdf = A(0.5) * MErfc(-x * A(0.70710678118654752440));
    const A pdf = MExp(A(-0.5) * x * x) * A(0.39894228040143267794);
    return g * (cdf + x * pdf);
  }
};
// s = sigmoid(2u): y = x s, dy/dx = s + 2 x s (1 - s) u'(x).
struct GeluTanhGradF {
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    const A k = A(0.79788456080286535588), c = A(0.044715);
    const A u = k * (x + c * x * x * x);
    const A s = SigmoidOf(A(2) * u);
    const A du = k * (A(1) + A(3) * c * x * x);
    return g * (s + A(2) * x * s * (A(1) - s) * du);
  }
};
struct ErfGradF {
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    return g * A(1.12837916709551257390) * MExp(-x * x);
  }
};
struct SoftplusGradF {
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    return g * SigmoidOf(x);
  }
};
struct HardSigmoidGradF {
  float alpha, beta;
  template <typename A>
  A8_HD A operator()(A g, A x) const {
    const A a = static_cast<A>(alpha);
    const A v = a * x + static_cast<A>(beta);
    return v > A(0) && v < A(1) ? a * g : A(0);
  }
};

template <typename T, typename F>
struct GradKernel {
  const T* dy;
  const T* z;
  T* dx;
  F f;
  A8_HD void operator()(int64_t i) const { St(dx, i, f(Ld(dy, i), Ld(z, i))); }
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

}  // namespace

DevStatus Unary(DevCtx& ctx, const UnaryParams& p) {
  switch (p.op) {
    case DevUnaryOp::kAbs:
      return MapNumeric(ctx, p, AbsF{});
    case DevUnaryOp::kNeg:
      return MapNumeric(ctx, p, NegF{});
    case DevUnaryOp::kRelu:
      return MapNumeric(ctx, p, ReluF{});
    case DevUnaryOp::kSign:
      return MapNumeric(ctx, p, SignF{});
    case DevUnaryOp::kSigmoid:
      return MapFloat(ctx, p, SigmoidF{});
    case DevUnaryOp::kTanh:
      return MapFloat(ctx, p, TanhF{});
    case DevUnaryOp::kExp:
      return MapFloat(ctx, p, ExpF{});
    case DevUnaryOp::kLog:
      return MapFloat(ctx, p, LogF{});
    case DevUnaryOp::kSqrt:
      return MapFloat(ctx, p, SqrtF{});
    case DevUnaryOp::kReciprocal:
      return MapFloat(ctx, p, ReciprocalF{});
    case DevUnaryOp::kErf:
      return MapFloat(ctx, p, ErfF{});
    case DevUnaryOp::kFloor:
      return MapFloat(ctx, p, FloorF{});
    case DevUnaryOp::kCeil:
      return MapFloat(ctx, p, CeilF{});
    case DevUnaryOp::kSin:
      return MapFloat(ctx, p, SinF{});
    case DevUnaryOp::kCos:
      return MapFloat(ctx, p, CosF{});
    case DevUnaryOp::kLeakyRelu:
      return MapFloat(ctx, p, LeakyReluF{p.alpha});
    case DevUnaryOp::kElu:
      return MapFloat(ctx, p, EluF{p.alpha});
    case DevUnaryOp::kGelu:
      return MapFloat(ctx, p, GeluF{});
    case DevUnaryOp::kGeluTanh:
      return MapFloat(ctx, p, GeluTanhF{});
    case DevUnaryOp::kSoftplus:
      return MapFloat(ctx, p, SoftplusF{});
    case DevUnaryOp::kHardSigmoid:
      return MapFloat(ctx, p, HardSigmoidF{p.alpha, p.beta});
    case DevUnaryOp::kIsNaN:
      return MapPredicate(ctx, p, IsNaNF{});
    case DevUnaryOp::kIsInf:
      return MapPredicate(ctx, p, IsInfF{p.detect_positive, p.detect_negative});
    case DevUnaryOp::kNot:
      if (p.dtype != DType::kBool) return DevError("Not: the operand is not bool");
      return ForEach(ctx, p.n,
                     MapKernel<bool, bool, NotF>{static_cast<const bool*>(p.x),
                                                 static_cast<bool*>(p.y), NotF{}});
  }
  return DevError("elementwise: unknown unary op");
}

DevStatus Clip(DevCtx& ctx, const ClipParams& p) {
  return DispatchAll(p.dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return DevError("Clip: bool operand");
    } else {
      return ForEach(ctx, p.n,
                     ClipKernel<T>{static_cast<const T*>(p.x), static_cast<T*>(p.y),
                                   static_cast<const T*>(p.lo), static_cast<const T*>(p.hi),
                                   p.has_lo_value, p.has_hi_value, p.lo_value, p.hi_value});
    }
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
    return ForEach(ctx, p.n,
                   DropoutGradKernel<T>{static_cast<const T*>(p.dy), p.mask, static_cast<T*>(p.dx),
                                        p.ratio, p.ratio_dtype, p.training});
  });
}

DevStatus ActivationGrad(DevCtx& ctx, const ActGradParams& p) {
  switch (p.op) {
    case DevActGradOp::kRelu:
      return MapGrad(ctx, p, ReluGradF{});
    case DevActGradOp::kSigmoid:
      return MapGrad(ctx, p, SigmoidGradF{});
    case DevActGradOp::kTanh:
      return MapGrad(ctx, p, TanhGradF{});
    case DevActGradOp::kLeakyRelu:
      return MapGrad(ctx, p, LeakyReluGradF{p.alpha});
    case DevActGradOp::kElu:
      return MapGrad(ctx, p, EluGradF{p.alpha});
    case DevActGradOp::kGelu:
      return MapGrad(ctx, p, GeluGradF{});
    case DevActGradOp::kGeluTanh:
      return MapGrad(ctx, p, GeluTanhGradF{});
    case DevActGradOp::kErf:
      return MapGrad(ctx, p, ErfGradF{});
    case DevActGradOp::kSoftplus:
      return MapGrad(ctx, p, SoftplusGradF{});
    case DevActGradOp::kHardSigmoid:
      return MapGrad(ctx, p, HardSigmoidGradF{p.alpha, p.beta});
  }
  return DevError("elementwise: unknown activation gradient");
}

}  // namespace a8::A8_DEV_NS

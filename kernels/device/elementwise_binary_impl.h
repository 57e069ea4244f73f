// The broadcasting elementwise kernels (kernels/device/elementwise.h): binary ops, the N-ary
// fold of Max/Min/Sum/Mean, Where, and a8.FusedElementwise. All go through the one strided
// N-ary kernel of elementwise_math.h (NaryKernel) with a small body per op.
#include "kernels/common/fused_elementwise.h"
#include "kernels/device/elementwise.h"
#include "kernels/device/elementwise_math.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS {
namespace {

// The bodies split into Load(offsets) and Store(i, loaded) (NaryKernel, launch.h's loads-first
// GPU launch).

// y[i] = f(a, b) in the compute type, stored as TO (T, or bool for comparisons and logic).
template <typename T, typename TO, typename F>
struct BinaryBody {
  const T* a;
  const T* b;
  TO* y;
  F f;
  struct In {
    T a, b;
  };
  A8_HD In Load(const int64_t* off) const { return {a[off[0]], b[off[1]]}; }
  A8_HD void Store(int64_t i, const In& v) const {
    y[i] = Elem<TO>::Store(f(Elem<T>::Load(v.a), Elem<T>::Load(v.b)));
  }
};

// Pow with an exponent of another dtype: math in double, stored like a Cast.
template <typename T>
struct MixedPowBody {
  const T* a;
  const void* b;
  DType b_dtype;
  T* y;
  struct In {
    double base, expo;
  };
  A8_HD In Load(const int64_t* off) const {
    return {DevCast<double, T>(a[off[0]]), LoadCast<double>(b_dtype, b, off[1])};
  }
  A8_HD void Store(int64_t i, const In& v) const {
    y[i] = DevCast<T, double>(MPow(v.base, v.expo));
  }
};

// in[0] op in[1] op ... rounded to T after every op (the CPU folds pairwise through a T
// buffer), then divided by `count` (in T) when `mean`.
template <int K, typename T, typename F>
struct FoldBody {
  const T* in[K];
  T* y;
  F f;
  bool mean;
  T count;
  struct In {
    T v[K];
  };
  A8_HD In Load(const int64_t* off) const {
    In r;
    for (int k = 0; k < K; ++k) r.v[k] = in[k][off[k]];
    return r;
  }
  A8_HD void Store(int64_t i, const In& r) const {
    Acc<T> acc = Elem<T>::Load(r.v[0]);
    for (int k = 1; k < K; ++k) {
      acc = Elem<T>::Load(Elem<T>::Store(f(acc, Elem<T>::Load(r.v[k]))));
    }
    if (mean) acc = DivF{}(acc, Elem<T>::Load(count));
    St(y, i, acc);
  }
};

// Moves elements of any dtype as unsigned integers of its size (launch.h UintOf).
template <typename U>
struct WhereBody {
  const bool* cond;
  const U* x;
  const U* y;
  U* out;
  A8_HD U Load(const int64_t* off) const { return cond[off[0]] ? x[off[1]] : y[off[2]]; }
  A8_HD void Store(int64_t i, U v) const { out[i] = v; }
};

// Not split into Load and Store (launch.h): the program's interpreter (EvalFused) indexes its
// values at run time, so they live in local memory, and four elements a thread in flight made
// ResNet-50's Add + Relu 1.09 ms where one took 0.89 (second H200 run).
template <typename T, typename U, typename A>
struct FusedKernel {
  FusedProgram program;
  const T* in[kFusedMaxInputs];
  bool scalar[kFusedMaxInputs];
  U* y;
  A8_HD void operator()(int64_t i) const {
    A vals[kFusedMaxInputs];
    for (int j = 0; j < program.num_inputs; ++j) {
      vals[j] = static_cast<A>(Ld(in[j], scalar[j] ? 0 : i));
    }
    y[i] = Elem<U>::Store(static_cast<Acc<U>>(EvalFused<A>(program, vals)));
  }
};

template <typename T, typename TO, typename F>
DevStatus RunBinary(const DevCtx& ctx, const BinaryParams& p, F f) {
  return LaunchNary<2>(ctx, p.shape, p.n,
                       BinaryBody<T, TO, F>{static_cast<const T*>(p.a), static_cast<const T*>(p.b),
                                            static_cast<TO*>(p.y), f});
}

// Arithmetic on float and integer dtypes.
template <typename F>
DevStatus Arith(const DevCtx& ctx, const BinaryParams& p, F f) {
  return DispatchNumeric(p.a_dtype, "elementwise: arithmetic on bool", [&](auto tag) {
    return RunBinary<decltype(tag), decltype(tag)>(ctx, p, f);
  });
}

// Comparisons -> bool (bool operands: Equal only).
template <bool kBoolOperands, typename F>
DevStatus Compare(const DevCtx& ctx, const BinaryParams& p, F f) {
  return DispatchAll(p.a_dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> && !kBoolOperands) {
      return DevError("elementwise: an ordering of bool operands");
    } else {
      return RunBinary<T, bool>(ctx, p, f);
    }
  });
}

template <typename F>
DevStatus Logic(const DevCtx& ctx, const BinaryParams& p, F f) {
  if (p.a_dtype != DType::kBool) return DevError("elementwise: logic op on a non-bool operand");
  return RunBinary<bool, bool>(ctx, p, f);
}

template <int K, typename F>
DevStatus RunFold(const DevCtx& ctx, const FoldParams& p, F f) {
  return DispatchNumeric(p.dtype, "elementwise: a fold over bool", [&](auto tag) {
    using T = decltype(tag);
    FoldBody<K, T, F> body{};
    for (int k = 0; k < K; ++k) body.in[k] = static_cast<const T*>(p.in[k]);
    body.y = static_cast<T*>(p.y);
    body.f = f;
    body.mean = p.mean_count > 0;
    body.count = DevCast<T, double>(p.mean_count);
    return LaunchNary<K>(ctx, p.shape, p.n, body);
  });
}

// RunFold<K> with K = p.shape.num_operands, from 1 to kMaxNaryOperands.
template <int K = 1, typename F>
DevStatus FoldOf(const DevCtx& ctx, const FoldParams& p, F f) {
  if (p.shape.num_operands == K) return RunFold<K>(ctx, p, f);
  if constexpr (K < kMaxNaryOperands) {
    return FoldOf<K + 1>(ctx, p, f);
  } else {
    return DevError("elementwise: a fold of more than 8 operands");
  }
}

template <typename U>
DevStatus RunWhere(const DevCtx& ctx, const WhereParams& p) {
  return LaunchNary<3>(ctx, p.shape, p.n,
                       WhereBody<U>{p.cond, static_cast<const U*>(p.x), static_cast<const U*>(p.y),
                                    static_cast<U*>(p.out)});
}

}  // namespace

DevStatus Binary(DevCtx& ctx, const BinaryParams& p) {
  if (p.op == DevBinaryOp::kPow && p.a_dtype != p.b_dtype) {
    if (p.b_dtype == DType::kBool) return DevError("Pow: a bool exponent");
    return DispatchNumeric(p.a_dtype, "Pow: a bool base", [&](auto tag) {
      using T = decltype(tag);
      return LaunchNary<2>(
          ctx, p.shape, p.n,
          MixedPowBody<T>{static_cast<const T*>(p.a), p.b, p.b_dtype, static_cast<T*>(p.y)});
    });
  }
  if (p.a_dtype != p.b_dtype) return DevError("elementwise: operand dtypes differ");
  if (BinaryKindIsIntegerOnly(p.op) && (IsFloatDType(p.a_dtype) || p.a_dtype == DType::kBool)) {
    return DevError("elementwise: a bitwise op on a non-integer operand");
  }
  return VisitBinary(
      p.op, [&](auto f) { return Arith(ctx, p, f); },
      [&](auto f) { return Compare<std::is_same_v<decltype(f), EqualF>>(ctx, p, f); },
      [&](auto f) { return Logic(ctx, p, f); });
}

DevStatus Fold(DevCtx& ctx, const FoldParams& p) {
  switch (p.op) {
    case DevBinaryOp::kAdd:
      return FoldOf(ctx, p, AddF{});
    case DevBinaryOp::kMax:
      return FoldOf(ctx, p, MaxF{});
    case DevBinaryOp::kMin:
      return FoldOf(ctx, p, MinF{});
    default:
      return DevError("elementwise: a fold takes Add, Max or Min");
  }
}

DevStatus Where(DevCtx& ctx, const WhereParams& p) {
  return DispatchAll(p.dtype, [&](auto tag) { return RunWhere<UintOf<decltype(tag)>>(ctx, p); });
}

DevStatus FusedElementwise(DevCtx& ctx, const FusedElementwiseParams& p) {
  const bool wide = p.in_dtype == DType::kF64 || p.out_dtype == DType::kF64;
  return DispatchFloat(p.in_dtype, [&](auto in_tag) {
    using T = decltype(in_tag);
    return DispatchFloat(p.out_dtype, [&](auto out_tag) -> DevStatus {
      using U = decltype(out_tag);
      auto run = [&](auto compute_tag) {
        using A = decltype(compute_tag);
        FusedKernel<T, U, A> k{};
        k.program = p.program;
        for (int j = 0; j < kFusedMaxInputs; ++j) {
          k.in[j] = static_cast<const T*>(p.in[j]);
          k.scalar[j] = p.scalar[j];
        }
        k.y = static_cast<U*>(p.y);
        return ForEach(ctx, p.n, k);
      };
      return wide ? run(double{}) : run(float{});
    });
  });
}

}  // namespace a8::A8_DEV_NS

// Broadcasting binary ops and Where (declared in elementwise.h).
#include <cmath>

#include "kernels/common/binary_math.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cast_elem.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/kernel_mode.h"

namespace a8::cpu {
namespace {

// Arithmetic (Add ... Min) and comparison or logic in the compute type C of the operands: the
// shared bodies (binary_math.h).
template <typename C>
C Arith(BinaryOp op, C a, C b) {
  const auto none = [](auto) { return C{}; };  // not an arithmetic op: not called with one
  return VisitBinary(
      op, [&](auto f) { return static_cast<C>(f(a, b)); }, none, none);
}
template <typename C>
bool Compare(BinaryOp op, C a, C b) {
  const auto compare = [&](auto f) -> bool { return f(a, b); };
  return VisitBinary(
      op, [](auto) { return false; }, compare, compare);
}

template <typename T, typename F>
void RunBinary(const BroadcastPlan& plan, const T* a, const T* b, F&& f) {
  ForEachBroadcastRow<2>(plan, 2,
                         [&](int64_t out, const int64_t* off, int64_t len, const int64_t* st) {
                           const T* pa = a + off[0];
                           const T* pb = b + off[1];
                           for (int64_t i = 0; i < len; ++i)
                             f(out + i, pa[i * st[0]], pb[i * st[1]]);
                         });
}

// out = f(a, b) with the op fixed at compile time and the common stride patterns of the
// innermost row (both contiguous, one side a scalar) as their own loops, so they vectorise.
// out may be a or b (each element is read before it is written).
// In the fast mode, f16/bf16 rows of the contiguous and scalar patterns go in float blocks
// converted in vector registers (fast_convert.h), with one rounding of each output.
template <typename T, typename F>
bool MapBinaryBlocks(const T* pa, const T* pb, T* po, int64_t len, const int64_t* st, F f) {
  if (!((st[0] == 1 || st[0] == 0) && (st[1] == 1 || st[1] == 0))) return false;
  float ua = 0.0f, ub = 0.0f;
  if (st[0] == 0) ToF32(pa, &ua, 1);
  if (st[1] == 0) ToF32(pb, &ub, 1);
  float fa[kF32Block], fb[kF32Block];
  ForEachF32Block(0, len, [&](int64_t i, int64_t n) {
    if (st[0] == 1) ToF32(pa + i, fa, n);
    if (st[1] == 1) ToF32(pb + i, fb, n);
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t j = 0; j < n; ++j) fa[j] = f(fa[j], fb[j]);
    } else if (st[0] == 1) {
      for (int64_t j = 0; j < n; ++j) fa[j] = f(fa[j], ub);
    } else if (st[1] == 1) {
      for (int64_t j = 0; j < n; ++j) fa[j] = f(ua, fb[j]);
    } else {
      const float v = f(ua, ub);
      for (int64_t j = 0; j < n; ++j) fa[j] = v;
    }
    FromF32(fa, po + i, n);
  });
  return true;
}

template <typename T, typename F>
void MapBinary(const BroadcastPlan& plan, const T* a, const T* b, T* y, F f) {
  const bool blocks = kIsHalfElem<T> && CurrentKernelMode() == KernelMode::kFast;
  ForEachBroadcastRow<2>(plan, 1,
                         [&](int64_t out, const int64_t* off, int64_t len, const int64_t* st) {
                           const T* pa = a + off[0];
                           const T* pb = b + off[1];
                           T* po = y + out;
                           if constexpr (kIsHalfElem<T>) {
                             if (blocks && MapBinaryBlocks(pa, pb, po, len, st, f)) return;
                           }
                           if (st[0] == 1 && st[1] == 1) {
                             for (int64_t i = 0; i < len; ++i)
                               po[i] = Store<T>(f(Load(pa[i]), Load(pb[i])));
                           } else if (st[0] == 1 && st[1] == 0) {
                             const auto v = Load(pb[0]);
                             for (int64_t i = 0; i < len; ++i) po[i] = Store<T>(f(Load(pa[i]), v));
                           } else if (st[0] == 0 && st[1] == 1) {
                             const auto u = Load(pa[0]);
                             for (int64_t i = 0; i < len; ++i) po[i] = Store<T>(f(u, Load(pb[i])));
                           } else {
                             for (int64_t i = 0; i < len; ++i)
                               po[i] = Store<T>(f(Load(pa[i * st[0]]), Load(pb[i * st[1]])));
                           }
                         });
}

// The float Add/Sub/Mul/Div/Max/Min through MapBinary; false for other ops and types.
template <typename T>
bool FastFloatBinary(BinaryOp op, const BroadcastPlan& plan, const T* a, const T* b, T* y) {
  if constexpr (kIsFloatElem<T>) {
    using C = Compute<T>;
    auto no = [](auto) { return false; };
    return VisitBinary(
        op,
        [&](auto f) {
          using F = decltype(f);
          if constexpr (std::is_same_v<F, AddF> || std::is_same_v<F, SubF> ||
                        std::is_same_v<F, MulF> || std::is_same_v<F, DivF> ||
                        std::is_same_v<F, MaxF> || std::is_same_v<F, MinF>) {
            MapBinary(plan, a, b, y, [](C u, C v) { return F{}(u, v); });
            return true;
          } else {
            return false;
          }
        },
        no, no);
  } else {
    return false;
  }
}

// Pow whose exponent has another dtype: math in double, stored like a Cast.
template <typename T>
Status MixedPow(const BroadcastPlan& plan, const T* a, DType b_dtype, const void* b, T* y) {
  return Dispatch<TypeSet::kNumeric>(b_dtype, "Pow", [&](auto tag) {
    using E = A8_TAG_TYPE(tag);
    ForEachBroadcastRow<2>(plan, 16,
                           [&](int64_t out, const int64_t* off, int64_t len, const int64_t* st) {
                             const T* pa = a + off[0];
                             const E* pb = static_cast<const E*>(b) + off[1];
                             for (int64_t i = 0; i < len; ++i) {
                               double base = CastElem<double, T>(pa[i * st[0]]);
                               double expo = CastElem<double, E>(pb[i * st[1]]);
                               y[out + i] = CastElem<T, double>(std::pow(base, expo));
                             }
                           });
    return Status::Ok();
  });
}

}  // namespace

bool BinaryOutputIsBool(BinaryOp op) { return BinaryKindIsBool(op); }

Status Binary(BinaryOp op, DType a_dtype, const Dims& a_dims, const void* a, DType b_dtype,
              const Dims& b_dims, const void* b, void* y) {
  const char* name = BinaryKindName(op);
  A8_ASSIGN_OR_RETURN(Dims out_dims, BroadcastDims({a_dims, b_dims}, name));
  A8_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan({a_dims, b_dims}, out_dims, name));
  if (a_dtype != b_dtype && op != BinaryOp::kPow) {
    return InvalidInput("{}: operand dtypes {} and {} differ", name, ElemName(a_dtype),
                        ElemName(b_dtype));
  }
  if (BinaryKindIsIntegerOnly(op) && (IsFloatDType(a_dtype) || a_dtype == DType::kBool)) {
    return Unsupported("{}: dtype {} is not an integer type", name, ElemName(a_dtype));
  }
  const bool logic = op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
  // Equal takes bool too (ONNX Equal-11+); the other comparisons do not.
  if (logic || (op == BinaryOp::kEqual && a_dtype == DType::kBool)) {
    if (a_dtype != DType::kBool)
      return Unsupported("{}: dtype {} is not bool", name, ElemName(a_dtype));
    bool* out = static_cast<bool*>(y);
    RunBinary(plan, static_cast<const bool*>(a), static_cast<const bool*>(b),
              [&](int64_t i, bool u, bool v) { out[i] = Compare(op, u, v); });
    return Status::Ok();
  }
  return Dispatch<TypeSet::kNumeric>(a_dtype, name, [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    if (BinaryOutputIsBool(op)) {
      bool* out = static_cast<bool*>(y);
      RunBinary(plan, pa, pb, [&](int64_t i, T u, T v) { out[i] = Compare(op, Load(u), Load(v)); });
      return Status::Ok();
    }
    T* out = static_cast<T*>(y);
    if (a_dtype != b_dtype) return MixedPow(plan, pa, b_dtype, b, out);
    if (FastFloatBinary(op, plan, pa, pb, out)) return Status::Ok();
    RunBinary(plan, pa, pb,
              [&](int64_t i, T u, T v) { out[i] = Store<T>(Arith(op, Load(u), Load(v))); });
    return Status::Ok();
  });
}

namespace {

// One row of Where: out[i] = c[i * st[0]] ? x[i * st[1]] : y[i * st[2]]. Rows whose operands are
// contiguous or one broadcast value (a mask over scores) take a loop the compiler vectorises.
template <typename U>
void WhereRow(int64_t len, const bool* c, const U* x, const U* y, const int64_t* st, U* out) {
  if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
    const U yv = *y;
    for (int64_t i = 0; i < len; ++i) out[i] = c[i] ? x[i] : yv;
  } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
    const U xv = *x;
    for (int64_t i = 0; i < len; ++i) out[i] = c[i] ? xv : y[i];
  } else if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
    for (int64_t i = 0; i < len; ++i) out[i] = c[i] ? x[i] : y[i];
  } else {
    for (int64_t i = 0; i < len; ++i) out[i] = c[i * st[0]] ? x[i * st[1]] : y[i * st[2]];
  }
}

}  // namespace

Status Where(const Dims& cond_dims, const bool* cond, DType dtype, const Dims& x_dims,
             const void* x, const Dims& y_dims, const void* y, void* out) {
  A8_ASSIGN_OR_RETURN(Dims out_dims, BroadcastDims({cond_dims, x_dims, y_dims}, "Where"));
  A8_ASSIGN_OR_RETURN(BroadcastPlan plan,
                      MakeBroadcastPlan({cond_dims, x_dims, y_dims}, out_dims, "Where"));
  return DispatchBySize(dtype, [&](auto tag) {
    using U = A8_TAG_TYPE(tag);
    const U* px = static_cast<const U*>(x);
    const U* py = static_cast<const U*>(y);
    U* po = static_cast<U*>(out);
    ForEachBroadcastRow<3>(plan, 1,
                           [&](int64_t o, const int64_t* off, int64_t len, const int64_t* st) {
                             WhereRow(len, cond + off[0], px + off[1], py + off[2], st, po + o);
                           });
    return Status::Ok();
  });
}

}  // namespace a8::cpu

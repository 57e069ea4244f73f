// The constant evaluator, math half: Cast, elementwise arithmetic with numpy broadcasting,
// comparisons and logic, Where, ReduceSum/ReduceProd, Range. Semantics follow onnxruntime's CPU
// kernels (see constant_folding.h): every result is computed in the tensor's own dtype, with
// f16/bf16 computed in float and rounded to nearest even after each op. The CPU kernels run what
// they cover (unary and binary ops, comparisons, ReduceSum/ReduceProd: a folded reduction is the
// one the plan would compute).
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <type_traits>

#include "kernels/common/binary_math.h"
#include "kernels/common/float16.h"
#include "kernels/common/unary_math.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/device/movement_setup.h"
#include "kernels/device/reduce_setup.h"
#include "kernels/emu/run_on_host.h"
#include "passes/cleanup/constant_folding.h"
#include "passes/cleanup/constant_folding_internal.h"

namespace a8::folding {
namespace {

// How a dtype is stored and in which C++ type its arithmetic runs.
template <typename S, typename C = S>
struct Plain {
  using Storage = S;
  using Compute = C;
  static C Load(S s) { return static_cast<C>(s); }
  static S Store(C c) { return static_cast<S>(c); }
};
struct Half {
  using Storage = uint16_t;
  using Compute = float;
  static float Load(uint16_t s) { return HalfBitsToFloat(s); }
  static uint16_t Store(float c) { return FloatToHalfBits(c); }
};
struct BFloat {
  using Storage = uint16_t;
  using Compute = float;
  static float Load(uint16_t s) { return BFloat16BitsToFloat(s); }
  static uint16_t Store(float c) { return FloatToBFloat16Bits(c); }
};
struct Bool {
  using Storage = uint8_t;
  using Compute = bool;
  static bool Load(uint8_t s) { return s != 0; }
  static uint8_t Store(bool c) { return c ? 1 : 0; }
};

// Calls fn(Traits{}) for `t`'s traits.
template <typename Fn>
auto Dispatch(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32:
      return fn(Plain<float>{});
    case DType::kF16:
      return fn(Half{});
    case DType::kBF16:
      return fn(BFloat{});
    case DType::kF64:
      return fn(Plain<double>{});
    case DType::kI64:
      return fn(Plain<int64_t>{});
    case DType::kI32:
      return fn(Plain<int32_t>{});
    case DType::kI8:
      return fn(Plain<int8_t>{});
    case DType::kU8:
      return fn(Plain<uint8_t>{});
    case DType::kI16:
      return fn(Plain<int16_t>{});
    case DType::kU16:
      return fn(Plain<uint16_t>{});
    case DType::kU32:
      return fn(Plain<uint32_t>{});
    case DType::kU64:
      return fn(Plain<uint64_t>{});
    case DType::kBool:
      break;
  }
  return fn(Bool{});
}

// `op` of two constant tensors through the CPU kernel (kernels/cpu/binary.cc, whose math is
// kernels/common/binary_math.h), so that a folded constant has the bits the kernel would compute
// at run time. `out_dtype`: the operands' dtype, or bool for comparisons.
StatusOr<TensorDataPtr> RunBinaryKernel(const Node& node, cpu::BinaryOp op, const TensorData& a,
                                        const TensorData& b, DType out_dtype) {
  A8_ASSIGN_OR_RETURN(auto dims, Broadcast(node, a.type.dims, b.type.dims));
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, out_dtype, dims));
  A8_RETURN_IF_ERROR(
      KernelResult(node, cpu::Binary(op, a.type.dtype, a.type.dims, a.bytes.data(), b.type.dtype,
                                     b.type.dims, b.bytes.data(), out->bytes.data())));
  return TensorDataPtr(out);
}

Status SameDType(const Node& node, const Inputs& in) {
  for (const auto& t : in) {
    if (t && t->type.dtype != in[0]->type.dtype) {
      return InvalidInput("{}: inputs have different dtypes ({} and {})", node.Where(),
                          DTypeName(in[0]->type.dtype), DTypeName(t->type.dtype));
    }
  }
  return Status::Ok();
}

StatusOr<Outputs> EvalArith(const Node& node, const Inputs& in);

// onnxruntime sums three or more f16/bf16 inputs in float and rounds once at the end.
StatusOr<Outputs> SumHalfInFloat(const Node& node, const Inputs& in) {
  const DType dt = in[0]->type.dtype;
  Inputs wide;
  for (const auto& t : in) {
    std::vector<float> v(t->num_elements());
    for (int64_t i = 0; i < t->num_elements(); ++i) v[i] = static_cast<float>(t->GetDouble(i));
    wide.push_back(TensorData::FromFloats(v, t->type.dims));
  }
  A8_ASSIGN_OR_RETURN(Outputs sum, EvalArith(node, wide));
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, dt, sum[0]->type.dims));
  for (int64_t i = 0; i < out->num_elements(); ++i) {
    const float f = sum[0]->data<float>()[i];
    out->mutable_data<uint16_t>()[i] =
        dt == DType::kF16 ? FloatToHalfBits(f) : FloatToBFloat16Bits(f);
  }
  return Outputs{out};
}

StatusOr<Outputs> EvalArith(const Node& node, const Inputs& in) {
  A8_RETURN_IF_ERROR(SameDType(node, in));
  const std::string& op = node.op();
  const DType dt = in[0]->type.dtype;
  if (dt == DType::kBool) return Unsupported("{}: bool arithmetic is not folded", node.Where());
  if (op == "Sum" && in.size() > 2 && (dt == DType::kF16 || dt == DType::kBF16)) {
    return SumHalfInFloat(node, in);
  }
  static const std::map<std::string, cpu::BinaryOp, std::less<>> kOps = {
      {"Add", cpu::BinaryOp::kAdd}, {"Sum", cpu::BinaryOp::kAdd}, {"Sub", cpu::BinaryOp::kSub},
      {"Mul", cpu::BinaryOp::kMul}, {"Div", cpu::BinaryOp::kDiv}, {"Mod", cpu::BinaryOp::kMod},
      {"Max", cpu::BinaryOp::kMax}, {"Min", cpu::BinaryOp::kMin}};
  cpu::BinaryOp kind = kOps.at(op);
  if (kind == cpu::BinaryOp::kMod && node.GetInt("fmod", 0) != 0) kind = cpu::BinaryOp::kFMod;
  TensorDataPtr acc = in[0];
  for (size_t k = 1; k < in.size(); ++k) {
    // The kernel gives 0 for an integer division by zero; a constant that does it is an error.
    if ((kind == cpu::BinaryOp::kDiv || kind == cpu::BinaryOp::kMod ||
         kind == cpu::BinaryOp::kFMod) &&
        !IsFloat(dt)) {
      for (int64_t i = 0; i < in[k]->num_elements(); ++i) {
        if (in[k]->GetInt64(i) == 0) {
          return InvalidInput("{}: integer division by zero in constant data", node.Where());
        }
      }
    }
    A8_ASSIGN_OR_RETURN(acc, RunBinaryKernel(node, kind, *acc, *in[k], dt));
  }
  return Outputs{acc};
}

StatusOr<Outputs> EvalPow(const Node& node, const Inputs& in) {
  const DType base = in[0]->type.dtype, expo = in[1]->type.dtype;
  if (base == DType::kBool || expo == DType::kBool) {
    return Unsupported("{}: bool Pow is not folded", node.Where());
  }
  // onnxruntime special-cases a scalar exponent of 2 or 3 as repeated multiplication.
  const bool scalar = in[1]->num_elements() == 1;
  const double e0 = in[1]->GetDouble(0);
  auto r = Dispatch(base, [&](auto tb) -> StatusOr<TensorDataPtr> {
    using TB = decltype(tb);
    using CB = typename TB::Compute;
    if constexpr (std::is_same_v<CB, bool>) {
      return Unsupported("{}: bool Pow is not folded", node.Where());
    } else {
      return Dispatch(expo, [&](auto te) -> StatusOr<TensorDataPtr> {
        using TE = decltype(te);
        using CE = typename TE::Compute;
        A8_ASSIGN_OR_RETURN(auto dims, Broadcast(node, in[0]->type.dims, in[1]->type.dims));
        A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, base, dims));
        const auto ia = BroadcastIndex(in[0]->type.dims, dims);
        const auto ib = BroadcastIndex(in[1]->type.dims, dims);
        const auto* pa = in[0]->data<typename TB::Storage>();
        const auto* pb = in[1]->data<typename TE::Storage>();
        auto* po = out->mutable_data<typename TB::Storage>();
        for (size_t i = 0; i < ia.size(); ++i) {
          CB x = TB::Load(pa[ia[i]]);
          CE y = TE::Load(pb[ib[i]]);
          CB v;
          if (scalar && e0 == 2.0) {
            v = MulF{}(x, x);
          } else if (scalar && e0 == 3.0) {
            v = MulF{}(MulF{}(x, x), x);
          } else if constexpr (std::is_integral_v<CB>) {
            double p = std::pow(static_cast<double>(x), static_cast<double>(y));
            v = std::isfinite(p) && std::fabs(p) < 9.2e18 ? static_cast<CB>(static_cast<int64_t>(p))
                                                          : CB{0};
          } else {
            v = static_cast<CB>(std::pow(x, y));
          }
          po[i] = TB::Store(v);
        }
        return TensorDataPtr(out);
      });
    }
  });
  if (!r.ok()) return r.status();
  return Outputs{*r};
}

// The unary ops of kernels/common/unary_math.h (A8_UNARY_OPS, not the variants), by ONNX name.
const std::map<std::string, UnaryKind, std::less<>>& FoldableUnaryOps() {
  static const auto* kOps = [] {
    auto* m = new std::map<std::string, UnaryKind, std::less<>>;
#define A8_X(Name, Types, Cost, Fused) \
  if (UnaryTypes::k##Types != UnaryTypes::kVariant) (*m)[#Name] = UnaryKind::k##Name;
    A8_UNARY_OPS(A8_X)
#undef A8_X
    return m;
  }();
  return *kOps;
}

// A unary op through the CPU reference kernel (kernels/cpu/elementwise.h), so that a folded
// constant has the bits the kernel would compute at run time.
StatusOr<Outputs> EvalUnary(const Node& node, const Inputs& in) {
  UnaryKind kind = FoldableUnaryOps().at(node.op());
  if (kind == UnaryKind::kGelu) {
    const std::string approx = node.GetString("approximate", "none");
    if (approx == "tanh") {
      kind = UnaryKind::kGeluTanh;
    } else if (approx != "none") {
      return Unsupported("{}: approximate '{}' is not folded", node.Where(), approx);
    }
  }
  UnaryAttrs at = DefaultUnaryAttrs(node.op().c_str());
  at.alpha = node.GetFloat("alpha", at.alpha);
  at.beta = node.GetFloat("beta", at.beta);
  at.gamma = node.GetFloat("gamma", at.gamma);
  at.bias = node.GetFloat("bias", at.bias);
  at.lambd = node.GetFloat("lambd", at.lambd);
  at.detect_positive = node.GetInt("detect_positive", 1) != 0;
  at.detect_negative = node.GetInt("detect_negative", 1) != 0;
  const DType dt = in[0]->type.dtype;
  const bool predicate = kind == UnaryKind::kIsNaN || kind == UnaryKind::kIsInf;
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, predicate ? DType::kBool : dt, in[0]->type.dims));
  const Status s =
      cpu::Unary(kind, dt, in[0]->num_elements(), in[0]->bytes.data(), out->bytes.data(), at);
  if (!s.ok()) return Unsupported("{}: not folded: {}", node.Where(), s.message());
  return Outputs{out};
}

StatusOr<Outputs> EvalCompare(const Node& node, const Inputs& in) {
  A8_RETURN_IF_ERROR(SameDType(node, in));
  const std::string& op = node.op();
  const DType dt = in[0]->type.dtype;
  if ((op == "And" || op == "Or" || op == "Xor") && dt != DType::kBool) {
    return InvalidInput("{}: inputs must be bool, got {}", node.Where(), DTypeName(dt));
  }
  static const std::map<std::string, cpu::BinaryOp, std::less<>> kOps = {
      {"Equal", cpu::BinaryOp::kEqual},
      {"Less", cpu::BinaryOp::kLess},
      {"Greater", cpu::BinaryOp::kGreater},
      {"LessOrEqual", cpu::BinaryOp::kLessOrEqual},
      {"GreaterOrEqual", cpu::BinaryOp::kGreaterOrEqual},
      {"And", cpu::BinaryOp::kAnd},
      {"Or", cpu::BinaryOp::kOr},
      {"Xor", cpu::BinaryOp::kXor}};
  A8_ASSIGN_OR_RETURN(auto out, RunBinaryKernel(node, kOps.at(op), *in[0], *in[1], DType::kBool));
  return Outputs{out};
}

StatusOr<Outputs> EvalWhere(const Node& node, const Inputs& in) {
  if (in[0]->type.dtype != DType::kBool || in[1]->type.dtype != in[2]->type.dtype) {
    return InvalidInput("{}: expects (bool, T, T), got ({}, {}, {})", node.Where(),
                        in[0]->type.ToString(), in[1]->type.ToString(), in[2]->type.ToString());
  }
  A8_ASSIGN_OR_RETURN(auto xy, Broadcast(node, in[1]->type.dims, in[2]->type.dims));
  A8_ASSIGN_OR_RETURN(auto dims, Broadcast(node, in[0]->type.dims, xy));
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, in[1]->type.dtype, dims));
  // Bool constants hold 0 or 1 (TensorData), as the kernel's bool reads them.
  A8_RETURN_IF_ERROR(KernelResult(
      node, cpu::Where(in[0]->type.dims, reinterpret_cast<const bool*>(in[0]->bytes.data()),
                       out->type.dtype, in[1]->type.dims, in[1]->bytes.data(), in[2]->type.dims,
                       in[2]->bytes.data(), out->bytes.data())));
  return Outputs{out};
}

// float -> integer as x86 (and so onnxruntime on x86) converts: truncation toward zero, and the
// "integer indefinite" value for NaN and out-of-range inputs; narrow types wrap from int32.
template <typename T>
T FloatToInt(double v) {
  if constexpr (std::is_same_v<T, uint64_t>) {  // as kernels/cpu/cast_elem.h TruncToU64
    if (v >= 9223372036854775808.0 && v < 18446744073709551616.0) return static_cast<T>(v);
  }
  if constexpr (sizeof(T) == 8 || std::is_same_v<T, uint32_t>) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
      return static_cast<T>(std::numeric_limits<int64_t>::min());
    }
    return static_cast<T>(static_cast<int64_t>(v));
  } else {
    int32_t i32 = (v >= -2147483648.0 && v < 2147483648.0) ? static_cast<int32_t>(v)
                                                           : std::numeric_limits<int32_t>::min();
    return static_cast<T>(i32);
  }
}

StatusOr<Outputs> EvalCastTo(const Node& node, const Inputs& in, StatusOr<DType> dst);

StatusOr<Outputs> EvalCast(const Node& node, const Inputs& in) {
  const Attribute* to = node.attr("to");
  if (!to || to->kind() != AttrKind::kInt) {
    return InvalidInput("{}: attribute 'to' is missing", node.Where());
  }
  return EvalCastTo(node, in, DTypeFromOnnx(static_cast<int>(to->i())));
}

// CastLike(x, like): Cast to like's dtype, read from the node (`like` need not be constant:
// ReadsTypeOnly). The dynamo exporter types its constants this way, also where a shape rule
// needs the value (Range's start).
StatusOr<Outputs> EvalCastLike(const Node& node, const Inputs& in) {
  return EvalCastTo(node, in, node.input(1)->dtype());
}

StatusOr<Outputs> EvalCastTo(const Node& node, const Inputs& in, StatusOr<DType> dst) {
  if (!dst.ok()) return dst.status().WithContext(node.Where());
  const TensorData& src = *in[0];
  const bool from_float = IsFloat(src.type.dtype);
  const bool from_u64 = src.type.dtype == DType::kU64;
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, *dst, src.type.dims));
  const int64_t n = src.num_elements();
  // Integer sources convert directly (int64 -> float rounds once); float sources go through
  // float for f16/bf16 as onnxruntime does (f64 -> f16 rounds twice there too).
  A8_RETURN_IF_ERROR(cpu::Dispatch<cpu::TypeSet::kAll>(*dst, "Cast", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    for (int64_t i = 0; i < n; ++i) {
      const double d = from_float ? src.GetDouble(i) : 0.0;
      const int64_t k = from_float ? 0 : src.GetInt64(i);
      if constexpr (std::is_same_v<T, bool>) {
        out->mutable_data<uint8_t>()[i] = from_float ? (d != 0.0) : (k != 0);
      } else if constexpr (cpu::kIsFloatElem<T>) {
        // In float (f16, bf16, f32) or double (f64), then stored. A u64 above INT64_MAX is k's
        // two's complement: converted as the unsigned value.
        using C = cpu::Compute<T>;
        const C v = from_float ? static_cast<C>(d)
                    : from_u64 ? static_cast<C>(static_cast<uint64_t>(k))
                               : static_cast<C>(k);
        out->mutable_data<T>()[i] = cpu::Store<T>(v);
      } else {
        out->mutable_data<T>()[i] = from_float ? FloatToInt<T>(d) : static_cast<T>(k);
      }
    }
    return Status::Ok();
  }));
  return Outputs{out};
}

StatusOr<Outputs> EvalReduce(const Node& node, const Inputs& in) {
  const auto& src = in[0]->type.dims;
  const int64_t rank = static_cast<int64_t>(src.size());
  const DType dt = in[0]->type.dtype;
  if (dt == DType::kBool) return Unsupported("{}: bool reduction is not folded", node.Where());
  std::vector<int64_t> axes;
  if (node.has_input(1)) {
    A8_ASSIGN_OR_RETURN(axes, IntsOf(node, in, 1, "axes"));
  } else {
    axes = node.GetInts("axes");
  }
  if (axes.empty() && node.GetInt("noop_with_empty_axes", 0) != 0) {
    A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, dt, src));
    out->bytes = in[0]->bytes;
    return Outputs{out};
  }
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return InvalidInput("{}: axis {} out of range", node.Where(), a);
  }
  // The kernel the backends run (kernels/device/reduce_impl.h), on the host.
  emu::ReduceParams p;
  p.op = node.op() == "ReduceProd" ? emu::DevReduceOp::kProd : emu::DevReduceOp::kSum;
  p.dtype = dt;
  StatusOr<std::vector<bool>> reduced = emu::ReducedAxes(src, axes, node.op());
  if (!reduced.ok()) return KernelResult(node, reduced.status());
  A8_RETURN_IF_ERROR(KernelResult(node, emu::SetReduceShape(src, *reduced, node.op(), &p)));
  const bool keep = node.GetInt("keepdims", 1) != 0;
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, dt, emu::ReducedDims(src, *reduced, keep)));
  p.x = in[0]->bytes.data();
  p.y = out->bytes.data();
  A8_RETURN_IF_ERROR(
      KernelResult(node, emu::RunOnHost([&p](emu::DevCtx& ctx) { return emu::Reduce(ctx, p); })));
  return Outputs{out};
}

StatusOr<Outputs> EvalRange(const Node& node, const Inputs& in) {
  A8_RETURN_IF_ERROR(SameDType(node, in));
  const DType dt = in[0]->type.dtype;
  for (const auto& t : in) {
    if (t->num_elements() != 1) return InvalidInput("{}: inputs must be scalars", node.Where());
  }
  if (dt == DType::kBool || dt == DType::kF16 || dt == DType::kBF16) {
    return Unsupported("{}: Range of {} is not folded", node.Where(), DTypeName(dt));
  }
  // As onnxruntime: n = ceil((1.0 * (limit - start)) / delta), the difference taken in T.
  const double count = Dispatch(dt, [&](auto tr) -> double {
    using Tr = decltype(tr);
    using C = typename Tr::Compute;
    const C start = Tr::Load(in[0]->data<typename Tr::Storage>()[0]);
    const C limit = Tr::Load(in[1]->data<typename Tr::Storage>()[0]);
    const C delta = Tr::Load(in[2]->data<typename Tr::Storage>()[0]);
    if constexpr (std::is_same_v<C, bool>) {
      return std::nan("");  // not reached: bool is declined above
    } else {
      if (delta == C{0}) return std::nan("");
      return std::ceil((1.0 * SubF{}(limit, start)) / static_cast<double>(delta));
    }
  });
  if (std::isnan(count)) return InvalidInput("{}: delta is 0", node.Where());
  if (!(count <= static_cast<double>(kMaxFoldElements))) {
    return Unsupported("{}: result too large to fold", node.Where());
  }
  const int64_t n = std::max<int64_t>(static_cast<int64_t>(count), 0);
  A8_ASSIGN_OR_RETURN(auto out, NewTensor(node, dt, {n}));
  // The values as the backends' kernel accumulates them (in the dtype, as onnxruntime).
  A8_RETURN_IF_ERROR(KernelResult(node, emu::RunOnHost([&](emu::DevCtx& ctx) {
                                    return emu::movement::Range(ctx, dt, in[0]->bytes.data(),
                                                                in[2]->bytes.data(), n,
                                                                out->bytes.data());
                                  })));
  return Outputs{out};
}

}  // namespace

bool IsMathOp(const std::string& op) {
  static const std::set<std::string> kOps = {
      "Cast",       "CastLike",  "Add",         "Sub",
      "Mul",        "Div",       "Mod",         "Pow",
      "Max",        "Min",       "Sum",         "Equal",
      "Less",       "Greater",   "LessOrEqual", "GreaterOrEqual",
      "And",        "Or",        "Xor",         "Where",
      "ReduceProd", "ReduceSum", "Range"};
  return kOps.count(op) > 0 || FoldableUnaryOps().count(op) > 0;
}

StatusOr<Outputs> EvaluateMath(const Node& node, const Inputs& in) {
  const std::string& op = node.op();
  if (op == "Cast") return EvalCast(node, in);
  if (op == "CastLike") return EvalCastLike(node, in);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Max" ||
      op == "Min" || op == "Sum") {
    return EvalArith(node, in);
  }
  if (op == "Pow") return EvalPow(node, in);
  if (FoldableUnaryOps().count(op) > 0) return EvalUnary(node, in);
  if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
      op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor") {
    return EvalCompare(node, in);
  }
  if (op == "Where") return EvalWhere(node, in);
  if (op == "ReduceProd" || op == "ReduceSum") return EvalReduce(node, in);
  if (op == "Range") return EvalRange(node, in);
  return Unsupported("{}: not folded", node.Where());
}

}  // namespace a8::folding

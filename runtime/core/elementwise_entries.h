// The registry rows of the elementwise ops, one copy for the CPU entries (ops_elementwise.cc,
// ops_grad_math.cc) and the CUDA ones (runtime/device/ops_elementwise.cc), each backend giving a
// row's kernel: the unary ops and activation gradients, generated from
// kernels/common/unary_math.h's lists, with the decode of their attributes; the binary and
// variadic ops (kernels/common/binary_math.h's BinaryKind).
#pragma once

#include <string>
#include <vector>

#include "kernels/common/binary_math.h"
#include "kernels/common/unary_math.h"
#include "runtime/core/attr_decode.h"
#include "runtime/core/kernel_args.h"

namespace a8 {

// One row: the qualified op of the plan, its enumerator, the dtypes of its operand.
struct UnaryEntry {
  const char* op;
  UnaryKind kind;
  const std::vector<DType>* types;
};
struct ActGradEntry {
  const char* op;  // "a8.ReluGrad"
  ActGradKind kind;
};

// The operand dtypes of a Types column.
inline const std::vector<DType>* DTypesOf(UnaryTypes t) {
  static const std::vector<DType> kSigned = DTypeVector(kSignedDTypes);
  static const std::vector<DType> kBool = {DType::kBool};
  switch (t) {
    case UnaryTypes::kSigned:
      return &kSigned;
    case UnaryTypes::kNumeric:
      return &kNumericTypes;
    case UnaryTypes::kBool:
      return &kBool;
    default:
      return &kFloatTypes;
  }
}

// Every row but the variants (GeluTanh is Gelu's entry with approximate="tanh").
inline const std::vector<UnaryEntry>& UnaryEntries() {
  static const std::vector<UnaryEntry> kRows = [] {
    std::vector<UnaryEntry> rows;
#define A8_X(Name, Types, Cost, Fused)                                           \
  if (UnaryTypes::k##Types != UnaryTypes::kVariant) {                            \
    rows.push_back({#Name, UnaryKind::k##Name, DTypesOf(UnaryTypes::k##Types)}); \
  }
    A8_UNARY_OPS(A8_X)
#undef A8_X
    return rows;
  }();
  return kRows;
}
inline const std::vector<ActGradEntry>& ActGradEntries() {
  static const std::vector<ActGradEntry> kRows = [] {
    std::vector<ActGradEntry> rows;
#define A8_X(Name, Reads, Cost, Fused)                          \
  if (GradReads::k##Reads != GradReads::kVariant) {             \
    rows.push_back({"a8." #Name "Grad", ActGradKind::k##Name}); \
  }
    A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
    return rows;
  }();
  return kRows;
}

// The attributes of a unary op or activation gradient from its kernel's attributes. `lower`
// writes every default into the plan; the ONNX defaults stand in for hand-built plans.
inline UnaryAttrs DecodeUnaryAttrs(const KernelArgs& a, const std::string& forward_op) {
  UnaryAttrs at = DefaultUnaryAttrs(forward_op.c_str());
  DecodeAttrs<UnaryAttrs>(
      a,
      {A8_ATTR(UnaryAttrs, alpha), A8_ATTR(UnaryAttrs, beta), A8_ATTR(UnaryAttrs, gamma),
       A8_ATTR(UnaryAttrs, bias), A8_ATTR(UnaryAttrs, lambd), A8_ATTR(UnaryAttrs, detect_positive),
       A8_ATTR(UnaryAttrs, detect_negative)},
      &at);
  return at;
}

// The variant an attribute selects: Gelu / a8.GeluGrad with approximate="tanh" run GeluTanh.
template <typename Kind>
StatusOr<Kind> ResolveUnaryVariant(const KernelArgs& a, Kind kind) {
  if (kind != Kind::kGelu) return kind;
  const std::string approx = a.Str("approximate");
  if (approx == "tanh") return Kind::kGeluTanh;
  if (approx != "none") {
    return InvalidInput("{}: approximate: unknown value '{}'", a.kernel().op(), approx);
  }
  return kind;
}

// "a8.ReluGrad" -> "Relu".
inline std::string ForwardOpOf(const std::string& grad_op) {
  const size_t b = grad_op.rfind('.') == std::string::npos ? 0 : grad_op.rfind('.') + 1;
  return grad_op.substr(b, grad_op.size() - b - 4);
}

struct BinaryEntry {
  const char* op;
  // Mod and BitShift run kFMod / kShiftRight where their fmod / direction attribute says so.
  BinaryKind kind;
  const std::vector<DType>* types;
  bool variadic;  // N inputs folded pairwise into the output (Max, Min, Sum, Mean)
  bool mean;      // the fold divided by N (Mean)
  const char* note;
};

inline const std::vector<BinaryEntry>& BinaryEntries() {
  static const std::vector<DType> kBool = {DType::kBool};
  using K = BinaryKind;
  static const std::vector<BinaryEntry> kRows = {
      {"Add", K::kAdd, &kNumericTypes, false, false, "broadcast"},
      {"Sub", K::kSub, &kNumericTypes, false, false, "broadcast"},
      {"Mul", K::kMul, &kNumericTypes, false, false, "broadcast"},
      {"Div", K::kDiv, &kNumericTypes, false, false, "broadcast"},
      {"Pow", K::kPow, &kNumericTypes, false, false, "exponent: any numeric dtype"},
      {"Mod", K::kMod, &kNumericTypes, false, false, "fmod attribute"},
      {"Equal", K::kEqual, &kAllTypes, false, false, "-> bool"},
      {"Less", K::kLess, &kNumericTypes, false, false, "-> bool"},
      {"LessOrEqual", K::kLessOrEqual, &kNumericTypes, false, false, "-> bool"},
      {"Greater", K::kGreater, &kNumericTypes, false, false, "-> bool"},
      {"GreaterOrEqual", K::kGreaterOrEqual, &kNumericTypes, false, false, "-> bool"},
      {"And", K::kAnd, &kBool, false, false, ""},
      {"Or", K::kOr, &kBool, false, false, ""},
      {"Xor", K::kXor, &kBool, false, false, ""},
      {"BitwiseAnd", K::kBitwiseAnd, &kIntegerTypes, false, false, "broadcast"},
      {"BitwiseOr", K::kBitwiseOr, &kIntegerTypes, false, false, "broadcast"},
      {"BitwiseXor", K::kBitwiseXor, &kIntegerTypes, false, false, "broadcast"},
      {"BitShift", K::kShiftLeft, &kIntegerTypes, false, false, "direction attribute"},
      {"Max", K::kMax, &kNumericTypes, true, false, "N inputs"},
      {"Min", K::kMin, &kNumericTypes, true, false, "N inputs"},
      {"Sum", K::kAdd, &kNumericTypes, true, false, "N inputs"},
      {"Mean", K::kAdd, &kFloatTypes, true, true, "N inputs"},
  };
  return kRows;
}

}  // namespace a8

// The registry rows of the binary and variadic elementwise ops (kernels/common/binary_math.h's
// BinaryKind): one copy of their ops, dtypes and notes for the CPU entries
// (runtime/cpu/ops_elementwise.cc) and the CUDA ones (runtime/device/ops_elementwise.cc), each
// backend giving the kernel of a row's kind.
#pragma once

#include <vector>

#include "kernels/common/binary_math.h"
#include "runtime/core/kernel_args.h"

namespace a8 {

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

// Element types and static tensor types of the IR.
//
// Shapes are static: every dynamic dim of an ONNX model is bound at import (`--shape`, `--batch`),
// so a type is a dtype plus concrete dims. `NumElements` checks the product for int64 overflow so
// that a hostile model cannot make a later size computation wrap.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/dtype_enum.h"
#include "compiler/ir/status.h"

namespace a8 {

// Every dtype: the numeric ones (kNumericDTypes, below), then bool.
inline constexpr DType kAllDTypes[] = {
    DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI64, DType::kI32, DType::kI16,
    DType::kI8,  DType::kU64, DType::kU32,  DType::kU16, DType::kU8,  DType::kBool};
// The integer dtypes, signed and unsigned (what ONNX's bitwise ops and integer arithmetic take).
inline constexpr DType kIntegerDTypes[] = {DType::kI64, DType::kI32, DType::kI16, DType::kI8,
                                           DType::kU64, DType::kU32, DType::kU16, DType::kU8};

// The numeric dtypes (every dtype but bool), and the signed ones (floats and signed integers).
inline constexpr DType kNumericDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                                           DType::kI64, DType::kI32, DType::kI16,  DType::kI8,
                                           DType::kU64, DType::kU32, DType::kU16,  DType::kU8};
inline constexpr DType kSignedDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                                          DType::kI64, DType::kI32, DType::kI16,  DType::kI8};
// One of the lists above as a vector (the kernel catalog's and the registries' type sets).
template <size_t N>
std::vector<DType> DTypeVector(const DType (&list)[N]) {
  return std::vector<DType>(list, list + N);
}

// "f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "bool": the
// IR text spelling.
std::string_view DTypeName(DType t);
StatusOr<DType> ParseDTypeName(std::string_view name);
size_t DTypeSize(DType t);
bool IsFloat(DType t);     // f32, f16, bf16, f64
bool IsInteger(DType t);   // kIntegerDTypes
bool IsUnsigned(DType t);  // u8, u16, u32, u64

// ONNX TensorProto.DataType <-> DType. Unsupported ONNX types are an error naming the type.
StatusOr<DType> DTypeFromOnnx(int onnx_elem_type);
int DTypeToOnnx(DType t);
// The ONNX name of an ONNX element type ("FLOAT8E4M3FN", "STRING"), for error messages.
std::string OnnxElemTypeName(int onnx_elem_type);

struct TensorType {
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  // Product of the dims; an error when a dim is negative or the product overflows int64.
  StatusOr<int64_t> NumElements() const;
  // NumElements for a type already checked (shape inference guarantees it); asserts otherwise.
  int64_t CheckedNumElements() const;
  // "f32[64,256]"; a scalar is "f32[]".
  std::string ToString() const;

  bool operator==(const TensorType& o) const { return dtype == o.dtype && dims == o.dims; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

// Checked product of dims (used by NumElements and by shape rules).
StatusOr<int64_t> CheckedProduct(const std::vector<int64_t>& dims);

}  // namespace a8

#include "compiler/ir/types.h"

#include <cassert>
#include <limits>

#include <onnx/onnx_pb.h>

namespace a8 {

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF64: return "f64";
    case DType::kI64: return "i64";
    case DType::kI32: return "i32";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kBool: return "bool";
    case DType::kI16: return "i16";
    case DType::kU16: return "u16";
    case DType::kU32: return "u32";
    case DType::kU64: return "u64";
  }
  return "?";
}

StatusOr<DType> ParseDTypeName(std::string_view name) {
  for (DType t : kAllDTypes)
    if (DTypeName(t) == name) return t;
  return InvalidInput("unknown element type '{}' (expected one of f32, f16, bf16, f64, i64, i32, "
                      "i16, i8, u64, u32, u16, u8, bool)",
                      name);
}

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kI64:
    case DType::kU64: return 8;
    case DType::kF32:
    case DType::kI32:
    case DType::kU32: return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
    case DType::kU16: return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool: return 1;
  }
  return 0;
}

bool IsFloat(DType t) { return IsFloatDType(t); }
bool IsInteger(DType t) {
  for (DType i : kIntegerDTypes)
    if (i == t) return true;
  return false;
}
bool IsUnsigned(DType t) {
  return t == DType::kU8 || t == DType::kU16 || t == DType::kU32 || t == DType::kU64;
}

StatusOr<DType> DTypeFromOnnx(int e) {
  using onnx::TensorProto;
  switch (e) {
    case TensorProto::FLOAT: return DType::kF32;
    case TensorProto::FLOAT16: return DType::kF16;
    case TensorProto::BFLOAT16: return DType::kBF16;
    case TensorProto::DOUBLE: return DType::kF64;
    case TensorProto::INT64: return DType::kI64;
    case TensorProto::INT32: return DType::kI32;
    case TensorProto::INT8: return DType::kI8;
    case TensorProto::UINT8: return DType::kU8;
    case TensorProto::BOOL: return DType::kBool;
    case TensorProto::INT16: return DType::kI16;
    case TensorProto::UINT16: return DType::kU16;
    case TensorProto::UINT32: return DType::kU32;
    case TensorProto::UINT64: return DType::kU64;
    default: break;
  }
  return Unsupported("element type {} is not supported (a800c supports FLOAT, FLOAT16, BFLOAT16, "
                     "DOUBLE, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8, BOOL)",
                     OnnxElemTypeName(e));
}

int DTypeToOnnx(DType t) {
  using onnx::TensorProto;
  switch (t) {
    case DType::kF32: return TensorProto::FLOAT;
    case DType::kF16: return TensorProto::FLOAT16;
    case DType::kBF16: return TensorProto::BFLOAT16;
    case DType::kF64: return TensorProto::DOUBLE;
    case DType::kI64: return TensorProto::INT64;
    case DType::kI32: return TensorProto::INT32;
    case DType::kI8: return TensorProto::INT8;
    case DType::kU8: return TensorProto::UINT8;
    case DType::kBool: return TensorProto::BOOL;
    case DType::kI16: return TensorProto::INT16;
    case DType::kU16: return TensorProto::UINT16;
    case DType::kU32: return TensorProto::UINT32;
    case DType::kU64: return TensorProto::UINT64;
  }
  return TensorProto::UNDEFINED;
}

std::string OnnxElemTypeName(int e) {
  // Types newer than Debian's libonnx (FLOAT8*, INT4, ...) are not in its enum; name them by number.
  if (onnx::TensorProto_DataType_IsValid(e))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(e));
  return fmt::format("#{}", e);
}

StatusOr<int64_t> CheckedProduct(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return InvalidInput("negative dimension {}", d);
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return InvalidInput("the product of dims [{}] overflows int64", fmt::join(dims, ","));
    n *= d;
  }
  return n;
}

StatusOr<int64_t> TensorType::NumElements() const { return CheckedProduct(dims); }

int64_t TensorType::CheckedNumElements() const {
  auto n = NumElements();
  assert(n.ok());
  return n.ok() ? *n : 0;
}

std::string TensorType::ToString() const {
  return fmt::format("{}[{}]", DTypeName(dtype), fmt::join(dims, ","));
}

}  // namespace a8

#include "compiler/ir/attribute.h"

#include <cassert>

#include "kernels/common/float16.h"

namespace a8 {

namespace {

// Element i of `t` as R: integers and bools converted as a C++ cast would (a u64 above
// INT64_MAX wraps to a negative int64), floats as doubles first (an int64 result truncates).
template <typename R>
R ElementAs(const TensorData& t, int64_t i) {
  switch (t.type.dtype) {
    case DType::kI64: return static_cast<R>(t.data<int64_t>()[i]);
    case DType::kI32: return static_cast<R>(t.data<int32_t>()[i]);
    case DType::kI8: return static_cast<R>(t.data<int8_t>()[i]);
    case DType::kU8: return static_cast<R>(t.data<uint8_t>()[i]);
    case DType::kBool: return static_cast<R>(t.data<uint8_t>()[i] != 0);
    case DType::kI16: return static_cast<R>(t.data<int16_t>()[i]);
    case DType::kU16: return static_cast<R>(t.data<uint16_t>()[i]);
    case DType::kU32: return static_cast<R>(t.data<uint32_t>()[i]);
    case DType::kU64: return static_cast<R>(t.data<uint64_t>()[i]);
    case DType::kF32: return static_cast<R>(static_cast<double>(t.data<float>()[i]));
    case DType::kF16:
      return static_cast<R>(static_cast<double>(HalfBitsToFloat(t.data<uint16_t>()[i])));
    case DType::kBF16:
      return static_cast<R>(static_cast<double>(BFloat16BitsToFloat(t.data<uint16_t>()[i])));
    case DType::kF64: return static_cast<R>(t.data<double>()[i]);
  }
  return R(0);
}

}  // namespace

double TensorData::GetDouble(int64_t i) const { return ElementAs<double>(*this, i); }

int64_t TensorData::GetInt64(int64_t i) const { return ElementAs<int64_t>(*this, i); }

std::vector<int64_t> TensorData::ToInt64Vector() const {
  std::vector<int64_t> v(num_elements());
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) v[i] = GetInt64(i);
  return v;
}

std::shared_ptr<TensorData> TensorData::Make(TensorType type) {
  auto t = std::make_shared<TensorData>();
  t->bytes.assign(type.CheckedNumElements() * DTypeSize(type.dtype), 0);
  t->type = std::move(type);
  return t;
}

namespace {

// A tensor of `dtype` holding `v` (its element type's bytes), shaped `dims`.
template <typename T>
std::shared_ptr<TensorData> FromValues(DType dtype, const std::vector<T>& v,
                                       std::vector<int64_t> dims) {
  auto t = TensorData::Make(TensorType{dtype, std::move(dims)});
  assert(t->num_elements() == static_cast<int64_t>(v.size()));
  if (!v.empty()) std::memcpy(t->bytes.data(), v.data(), v.size() * sizeof(T));
  return t;
}

}  // namespace

std::shared_ptr<TensorData> TensorData::FromInt64s(const std::vector<int64_t>& v,
                                                   std::vector<int64_t> dims) {
  return FromValues(DType::kI64, v, std::move(dims));
}

std::shared_ptr<TensorData> TensorData::FromFloats(const std::vector<float>& v,
                                                   std::vector<int64_t> dims) {
  return FromValues(DType::kF32, v, std::move(dims));
}

std::string_view AttrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::kInt: return "int";
    case AttrKind::kFloat: return "float";
    case AttrKind::kString: return "string";
    case AttrKind::kInts: return "ints";
    case AttrKind::kFloats: return "floats";
    case AttrKind::kStrings: return "strings";
    case AttrKind::kTensor: return "tensor";
  }
  return "?";
}

bool Attribute::operator==(const Attribute& o) const {
  if (kind() != o.kind()) return false;
  if (kind() != AttrKind::kTensor) return v_ == o.v_;
  const auto& a = tensor();
  const auto& b = o.tensor();
  if (!a || !b) return a == b;
  return a->type == b->type && a->bytes == b->bytes;
}

}  // namespace a8

// Node attributes and constant tensor data.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/ir/tensor_bytes.h"
#include "compiler/ir/types.h"

namespace a8 {

// The bytes of a constant tensor: a parameter's initial value, a folded constant, a tensor
// attribute. Little-endian, row-major, `type.dtype` elements; bool is one byte (0 or 1). An
// imported weight's bytes are a view of the mapped model file (TensorBytes).
struct TensorData {
  TensorType type;
  TensorBytes bytes;

  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  template <typename T>
  T* mutable_data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  int64_t num_elements() const { return type.CheckedNumElements(); }
  // Element i converted to double / int64 (any dtype), for folding and for printing.
  double GetDouble(int64_t i) const;
  int64_t GetInt64(int64_t i) const;
  // All elements as int64 (shape-like inputs: Reshape's shape, Slice's starts, ...).
  std::vector<int64_t> ToInt64Vector() const;

  static std::shared_ptr<TensorData> Make(TensorType type);  // zero-filled
  static std::shared_ptr<TensorData> FromInt64s(const std::vector<int64_t>& v,
                                                std::vector<int64_t> dims);
  static std::shared_ptr<TensorData> FromFloats(const std::vector<float>& v,
                                                std::vector<int64_t> dims);
};
using TensorDataPtr = std::shared_ptr<const TensorData>;

enum class AttrKind : uint8_t { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor };
std::string_view AttrKindName(AttrKind k);  // "int", "float", "string", "ints", ...

class Attribute {
 public:
  using Storage = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, TensorDataPtr>;
  Attribute() = default;
  Attribute(int64_t v) : v_(v) {}
  Attribute(int v) : v_(static_cast<int64_t>(v)) {}
  Attribute(float v) : v_(v) {}
  Attribute(std::string v) : v_(std::move(v)) {}
  Attribute(const char* v) : v_(std::string(v)) {}
  Attribute(std::vector<int64_t> v) : v_(std::move(v)) {}
  Attribute(std::vector<float> v) : v_(std::move(v)) {}
  Attribute(std::vector<std::string> v) : v_(std::move(v)) {}
  Attribute(TensorDataPtr v) : v_(std::move(v)) {}

  AttrKind kind() const { return static_cast<AttrKind>(v_.index()); }
  int64_t i() const { return std::get<int64_t>(v_); }
  float f() const { return std::get<float>(v_); }
  const std::string& s() const { return std::get<std::string>(v_); }
  const std::vector<int64_t>& ints() const { return std::get<std::vector<int64_t>>(v_); }
  const std::vector<float>& floats() const { return std::get<std::vector<float>>(v_); }
  const std::vector<std::string>& strings() const { return std::get<std::vector<std::string>>(v_); }
  const TensorDataPtr& tensor() const { return std::get<TensorDataPtr>(v_); }
  // The value when it is a T (int64_t, float, std::string, ...), else null.
  template <typename T>
  const T* get_if() const {
    return std::get_if<T>(&v_);
  }

  bool operator==(const Attribute& o) const;
  bool operator!=(const Attribute& o) const { return !(*this == o); }

 private:
  Storage v_;
};

// The typed attribute reads of Node (graph.h) and OpNode (op_node.h), written once: the
// attribute's value when it is there with this kind, else `dflt`. `Derived` has
// `const Attribute* attr(const std::string&) const`.
template <typename Derived>
class AttributeGetters {
 public:
  int64_t GetInt(const std::string& n, int64_t dflt) const { return Get(n, dflt); }
  float GetFloat(const std::string& n, float dflt) const { return Get(n, dflt); }
  std::string GetString(const std::string& n, const std::string& dflt) const {
    return Get(n, dflt);
  }
  std::vector<int64_t> GetInts(const std::string& n, std::vector<int64_t> dflt = {}) const {
    return Get(n, std::move(dflt));
  }

 private:
  template <typename T>
  T Get(const std::string& n, T dflt) const {
    const Attribute* a = static_cast<const Derived*>(this)->attr(n);
    const T* v = a != nullptr ? a->get_if<T>() : nullptr;
    return v != nullptr ? *v : std::move(dflt);
  }
};

}  // namespace a8

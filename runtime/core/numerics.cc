#include "runtime/core/numerics.h"

#include <cmath>
#include <cstring>

#include "kernels/common/float16.h"

namespace a8 {
namespace {

template <typename T>
std::optional<NonFinite> FirstNonFinite(const uint8_t* data, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, data + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    if (!std::isfinite(v)) return NonFinite{i, static_cast<double>(v)};
  }
  return std::nullopt;
}

// f16 and bf16: a non-finite value has every exponent bit set (`exp_mask`).
std::optional<NonFinite> FirstNonFinite16(const uint8_t* data, int64_t count, uint16_t exp_mask,
                                          float (*to_float)(uint16_t)) {
  for (int64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, data + 2 * i, sizeof(bits));
    if ((bits & exp_mask) == exp_mask) return NonFinite{i, static_cast<double>(to_float(bits))};
  }
  return std::nullopt;
}

}  // namespace

std::optional<NonFinite> FindNonFinite(DType dtype, const uint8_t* data, int64_t count) {
  switch (dtype) {
    case DType::kF32:
      return FirstNonFinite<float>(data, count);
    case DType::kF64:
      return FirstNonFinite<double>(data, count);
    case DType::kF16:
      return FirstNonFinite16(data, count, 0x7C00u, &HalfBitsToFloat);
    case DType::kBF16:
      return FirstNonFinite16(data, count, 0x7F80u, &BFloat16BitsToFloat);
    default:
      return std::nullopt;
  }
}

std::string NonFiniteName(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  return std::to_string(value);
}

}  // namespace a8

// Bucket packing shared by the communicators (comm_internal.h).
#include <cstring>

#include "kernels/common/float16.h"
#include "runtime/comm/comm_internal.h"

namespace a8 {

float LoadAsFloat(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kF16:
      return HalfBitsToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16:
      return BFloat16BitsToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kF64:
      return static_cast<float>(static_cast<const double*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

void StoreFromFloat(void* p, DType t, int64_t i, float v) {
  switch (t) {
    case DType::kF16:
      static_cast<uint16_t*>(p)[i] = FloatToHalfBits(v);
      break;
    case DType::kBF16:
      static_cast<uint16_t*>(p)[i] = FloatToBFloat16Bits(v);
      break;
    case DType::kF64:
      static_cast<double*>(p)[i] = v;
      break;
    default:
      static_cast<float*>(p)[i] = v;
  }
}

std::vector<uint8_t> PackBucket(const std::vector<CommBuffer>& buffers, DType wire, float scale) {
  int64_t total = 0;
  for (const CommBuffer& b : buffers) total += b.count;
  const size_t width = wire == DType::kF16 ? 2 : 4;
  std::vector<uint8_t> out(static_cast<size_t>(total) * width);
  int64_t at = 0;
  for (const CommBuffer& b : buffers) {
    if (wire == DType::kF32 && b.dtype == DType::kF32 && scale == 1.0f) {
      std::memcpy(out.data() + at * 4, b.data, static_cast<size_t>(b.count) * 4);
    } else {
      for (int64_t i = 0; i < b.count; ++i) {
        StoreFromFloat(out.data(), wire, at + i, LoadAsFloat(b.data, b.dtype, i) * scale);
      }
    }
    at += b.count;
  }
  return out;
}

void UnpackBucket(const std::vector<uint8_t>& packed, DType wire, float scale,
                  const std::vector<CommBuffer>& buffers) {
  int64_t at = 0;
  for (const CommBuffer& b : buffers) {
    if (wire == DType::kF32 && b.dtype == DType::kF32 && scale == 1.0f) {
      std::memcpy(b.data, packed.data() + at * 4, static_cast<size_t>(b.count) * 4);
    } else {
      for (int64_t i = 0; i < b.count; ++i) {
        StoreFromFloat(b.data, b.dtype, i, LoadAsFloat(packed.data(), wire, at + i) * scale);
      }
    }
    at += b.count;
  }
}

float WireToFloat(const std::vector<uint8_t>& wire, bool half, size_t i) {
  return LoadAsFloat(wire.data(), half ? DType::kF16 : DType::kF32, static_cast<int64_t>(i));
}

void FloatToWire(std::vector<uint8_t>* wire, bool half, size_t i, float v) {
  StoreFromFloat(wire->data(), half ? DType::kF16 : DType::kF32, static_cast<int64_t>(i), v);
}

}  // namespace a8

// Bucket packing shared by the communicators (comm_internal.h), through the CPU kernels'
// dtype conversions (kernels/cpu/cast_elem.h: rounded like a Cast).
#include <cstring>

#include "kernels/cpu/cast_elem.h"
#include "runtime/comm/comm_internal.h"

namespace a8 {
namespace {

constexpr const char* kWhat = "the gradient all-reduce";

bool IsPlainF32(DType wire, const CommBuffer& b, float scale) {
  return wire == DType::kF32 && b.dtype == DType::kF32 && scale == 1.0f;
}

}  // namespace

StatusOr<std::vector<uint8_t>> PackBucket(const std::vector<CommBuffer>& buffers, DType wire,
                                          float scale) {
  int64_t total = 0;
  for (const CommBuffer& b : buffers) total += b.count;
  std::vector<uint8_t> out(static_cast<size_t>(total) * DTypeSize(wire));
  uint8_t* at = out.data();
  for (const CommBuffer& b : buffers) {
    if (IsPlainF32(wire, b, scale)) {
      std::memcpy(at, b.data, static_cast<size_t>(b.count) * 4);
    } else {
      A8_ASSIGN_OR_RETURN(std::vector<float> v,
                          cpu::LoadAs<float>(b.dtype, b.data, b.count, kWhat));
      for (float& x : v) x *= scale;
      A8_RETURN_IF_ERROR(cpu::StoreAs(wire, v, at, kWhat));
    }
    at += static_cast<size_t>(b.count) * DTypeSize(wire);
  }
  return out;
}

Status UnpackBucket(const std::vector<uint8_t>& packed, DType wire, float scale,
                    const std::vector<CommBuffer>& buffers) {
  const uint8_t* at = packed.data();
  for (const CommBuffer& b : buffers) {
    if (IsPlainF32(wire, b, scale)) {
      std::memcpy(b.data, at, static_cast<size_t>(b.count) * 4);
    } else {
      A8_ASSIGN_OR_RETURN(std::vector<float> v, cpu::LoadAs<float>(wire, at, b.count, kWhat));
      for (float& x : v) x *= scale;
      A8_RETURN_IF_ERROR(cpu::StoreAs(b.dtype, v, b.data, kWhat));
    }
    at += static_cast<size_t>(b.count) * DTypeSize(wire);
  }
  return Status::Ok();
}

StatusOr<std::vector<float>> WireValues(const std::vector<uint8_t>& packed, DType wire) {
  return cpu::LoadAs<float>(wire, packed.data(),
                            static_cast<int64_t>(packed.size() / DTypeSize(wire)), kWhat);
}

Status SetWireValues(const std::vector<float>& values, DType wire, std::vector<uint8_t>* packed) {
  packed->resize(values.size() * DTypeSize(wire));
  return cpu::StoreAs(wire, values, packed->data(), kWhat);
}

}  // namespace a8

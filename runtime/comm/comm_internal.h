// What the communicators share (communicator.h): packing a bucket into one wire buffer and back,
// and the TCP communicator's constructor (comm_tcp.cc) for CreateCommunicator (comm_mpi.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/comm/communicator.h"

namespace a8 {

// Element i of `data` (f32, f16, bf16 or f64) as float, and back.
float LoadAsFloat(const void* data, DType dtype, int64_t i);
void StoreFromFloat(void* data, DType dtype, int64_t i, float v);

// The buffers of a bucket, one after the other, in `wire` (f32 or f16), each element times
// `scale`.
std::vector<uint8_t> PackBucket(const std::vector<CommBuffer>& buffers, DType wire, float scale);
// The inverse: `packed` (in `wire`) times `scale` into the buffers, rounded to their dtypes.
void UnpackBucket(const std::vector<uint8_t>& packed, DType wire, float scale,
                  const std::vector<CommBuffer>& buffers);

// Element i of a wire buffer (f16 when `half`, else f32) as float, and back.
float WireToFloat(const std::vector<uint8_t>& wire, bool half, size_t i);
void FloatToWire(std::vector<uint8_t>* wire, bool half, size_t i, float v);

// torchrun-style launches (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): connected, or nullptr
// for a world of one.
StatusOr<std::unique_ptr<Communicator>> CreateTcpCommunicator(double timeout_s);

}  // namespace a8

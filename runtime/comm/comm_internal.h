// What the communicators share (communicator.h): packing a bucket into one wire buffer and back,
// and the TCP communicator's constructor (comm_tcp.cc) for CreateCommunicator (comm_mpi.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/comm/communicator.h"

namespace a8 {

// The buffers of a bucket, one after the other, in `wire` (f32 or f16), each element times
// `scale`, rounded once to the wire dtype.
StatusOr<std::vector<uint8_t>> PackBucket(const std::vector<CommBuffer>& buffers, DType wire,
                                          float scale);
// The inverse: `packed` (in `wire`) times `scale` into the buffers, rounded once to their dtypes.
Status UnpackBucket(const std::vector<uint8_t>& packed, DType wire, float scale,
                    const std::vector<CommBuffer>& buffers);

// The values of a wire buffer as float, and back (rounded to `wire`).
StatusOr<std::vector<float>> WireValues(const std::vector<uint8_t>& packed, DType wire);
Status SetWireValues(const std::vector<float>& values, DType wire, std::vector<uint8_t>* packed);

// torchrun-style launches (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): connected, or nullptr
// for a world of one.
StatusOr<std::unique_ptr<Communicator>> CreateTcpCommunicator(double timeout_s);

}  // namespace a8

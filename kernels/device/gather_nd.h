// GatherND (ONNX 11/12/13, batch_dims) and its gradient a8.GatherNDGrad: one body each
// (gather_nd_impl.h), run by the CUDA backend, its host emulation (cuda-emu) and the CPU backend
// (through its host launch), so all three give the same bits.
//
// With b = batch_dims, data [B.., D0..Dm-1, S..] and indices [B.., Q.., m]:
//   y[B.., Q.., S..] = data[B.., indices[B.., Q.., 0..m-1], S..]
// viewed flat as data [batch, prod(D), slice], indices [batch, nq, m], y [batch, nq, slice].
// An index in [-Dk, Dk) counts from the end when negative; one out of range raises the kernel's
// error and gives 0 (GatherND) or drops its contribution (GatherNDGrad), never an access out of
// bounds.
//
// Declarations only: included by host setup code and compiled by nvcc.
#pragma once

#include <cstdint>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS::gather_nd {

constexpr int kMaxIndexDepth = 8;  // the most dims one index tuple may address (m)

struct GatherNDParams {
  DevErr err;                 // raised for an index out of range
  DType dtype = DType::kF32;  // GatherNDGrad: the float type of dy and dx
  int elem_size = 0;          // GatherND: 1, 2, 4 or 8 bytes (any dtype, moved as bits)
  bool index_i32 = false;
  int depth = 0;                            // m
  int64_t index_dims[kMaxIndexDepth] = {};  // D0..Dm-1
  int64_t batch = 0, nq = 0, slice = 0;
  const void* indices = nullptr;
  const void* src = nullptr;  // GatherND: data; GatherNDGrad: dy
  void* dst = nullptr;        // GatherND: y; GatherNDGrad: dx
};

// y = data gathered at the index tuples.
DevStatus GatherND(DevCtx& ctx, const GatherNDParams& p);
// dx = zeros of data's shape with dy added at each tuple's slice: one thread per dx element sums
// the dy slices whose tuple addresses it in tuple order (deterministic, no atomics; O(nq) per
// element).
DevStatus GatherNDGrad(DevCtx& ctx, const GatherNDParams& p);

}  // namespace a8::A8_DEV_NS::gather_nd

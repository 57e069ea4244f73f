// ScatterND, ScatterElements (ONNX 11/13/16/18, reductions none/add/mul/max/min) and TopK
// (ONNX 1/10/11): one body each (scatter_impl.h), run by the CUDA backend, its host emulation
// (cuda-emu) and the CPU backend (through its host launch), so all three give the same bits.
//
// The scatters are deterministic without atomics: y = data is copied first, then one thread per
// column of the slices (ScatterND) or per line of indices along the axis (ScatterElements) applies
// its updates in index order, so each element receives its updates in index order and no two
// threads write one element. With reduction 'none' and repeated indices the last update in index
// order wins (ONNX leaves this undefined; onnxruntime's CPU kernel does the same). An index in
// [-len, len) counts from the end when negative; one out of range raises the kernel's error (that
// update is dropped), never an access out of bounds. Work: the copy, plus O(nq * depth * slice)
// (ScatterND) or O(indices) (ScatterElements); the parallelism is the slice length or the number
// of index lines (a fully indexed ScatterND, slice 1, runs its tuples in one thread).
//
// TopK keeps, per row along the axis, the k largest (or smallest) elements by insertion into the
// outputs (O(n * k) a row, one thread a row); ties go to the lower index (onnxruntime's order),
// NaN counts as larger than any number. The outputs are always sorted (also valid for sorted=0).
//
// Declarations only: included by host setup code and compiled by nvcc.
#pragma once

#include <cstdint>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS::scatter {

constexpr int kMaxRank = 8;  // the most dims ScatterElements' tensors / a ScatterND tuple have

// The `reduction` attribute: how an update combines with the element it lands on.
enum Reduction : int { kNone = 0, kAdd = 1, kMul = 2, kMax = 3, kMin = 4 };

// ScatterND: data and y viewed as [cells, slice] (cells = prod of the first `depth` dims),
// indices as [nq, depth], updates as [nq, slice]:
//   y = data; y[tuple t, s] (op)= updates[t, s] for t = 0 .. nq-1 in order.
struct ScatterNDParams {
  DevErr err;  // raised for an index out of range
  DType dtype = DType::kF32;
  int reduction = kNone;
  bool index_i32 = false;
  int depth = 0;                      // the tuple length
  int64_t index_dims[kMaxRank] = {};  // data's first `depth` dims
  int64_t nq = 0, slice = 0;
  const void* data = nullptr;
  const void* indices = nullptr;
  const void* updates = nullptr;
  void* y = nullptr;
};
DevStatus ScatterND(DevCtx& ctx, const ScatterNDParams& p);

// ScatterElements: y has data's dims, indices and updates `index_dims` (rank `rank`, each dim
// but `axis` at most data's):
//   y = data; y[c with c[axis] = indices[c]] (op)= updates[c] for every c of indices, in
//   row-major order along the axis.
struct ScatterElementsParams {
  DevErr err;  // raised for an index out of range
  DType dtype = DType::kF32;
  int reduction = kNone;
  bool index_i32 = false;
  int rank = 0;
  int axis = 0;
  int64_t data_dims[kMaxRank] = {};
  int64_t index_dims[kMaxRank] = {};
  const void* data = nullptr;
  const void* indices = nullptr;
  const void* updates = nullptr;
  void* y = nullptr;
};
DevStatus ScatterElements(DevCtx& ctx, const ScatterElementsParams& p);

// TopK along the middle dim of x viewed as [outer, n, inner]: values (x's type) and indices
// (i64) as [outer, k, inner].
struct TopKParams {
  DType dtype = DType::kF32;
  bool largest = true;
  int64_t outer = 0, n = 0, inner = 0, k = 0;
  const void* x = nullptr;
  void* values = nullptr;
  void* indices = nullptr;
};
DevStatus TopK(DevCtx& ctx, const TopKParams& p);

}  // namespace a8::A8_DEV_NS::scatter

// Device kernels of the reduction family (issue 6): Reduce* over any set of axes, ArgMax/ArgMin,
// Softmax/LogSoftmax and their gradients, CumSum, and the optimizer's GlobalNormSq.
//
// Reduce*, ArgMax/ArgMin, CumSum and the Softmax gradients are the only copy of their math: the
// CPU backend runs them on the host, and constant folding the reductions. Softmax/LogSoftmax and
// GlobalNormSq mirror the CPU's own kernels (kernels/cpu/softmax.cc, optim.cc) in accumulation
// type and order, so the host emulation agrees with the CPU to the bit (and the GPU to the
// rounding of its libm): float accumulators for f16/bf16/f32, double for f64, int64 for
// integers (double for integer L2/LogSumExp, truncated like a Cast), reduced elements visited in
// row-major order, float sums in chunks (kernels/common/sum_order.h). Deterministic: one thread
// per output element (Reduce, ArgMax) or per row along the axis (Softmax, CumSum); a float sum
// one thread per (chunk, output) into scratch, then one per output adding the chunks in order
// (on the host a tile of neighbouring outputs a call, each in the same order); GlobalNormSq sums
// fixed chunks into scratch, then one thread adds the partials in order.
//
// Host setup (reduce_setup.h for the reductions; runtime/device/ops_reduce.cc) reads the
// attributes, normalizes axes and builds the index spaces below; nothing here reads a tensor on
// the host.
#pragma once

#include <cstdint>

#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS {

enum class DevReduceOp : int32_t {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kSumSquare,
  kL1,
  kL2,
  kLogSumExp
};

// y[o] = reduce over r of x[base(o) + offset(r)]: `out` spans the kept axes and `red` the
// reduced ones, both with the input's element strides (host code merges contiguous axes and
// drops size-1 axes, so either may have rank 0). y is dense over `out` (keepdims only changes
// the output's dims). Bool takes kMax ("any") and kMin ("all") only, the CPU backend's only
// bool reduction (it runs this body on the host): an empty set gives false and true.
struct ReduceParams {
  DevReduceOp op = DevReduceOp::kSum;
  DType dtype = DType::kF32;  // of x and y
  Shape out;
  Shape red;
  int64_t out_count = 0;
  int64_t red_count = 0;
  const void* x = nullptr;
  void* y = nullptr;
};
DevStatus Reduce(DevCtx& ctx, const ReduceParams& p);

// An [outer, len, inner] view of a tensor around one axis.
struct ReduceAxisView {
  int64_t outer = 1;
  int64_t len = 1;
  int64_t inner = 1;
};

// y[o, i] = index along the axis of the first (or with select_last, last) max / min of x[o, :, i].
struct ArgReduceParams {
  bool is_max = true;
  bool select_last = false;
  DType dtype = DType::kF32;
  ReduceAxisView view;  // len >= 1
  const void* x = nullptr;
  int64_t* y = nullptr;
};
DevStatus ArgReduce(DevCtx& ctx, const ArgReduceParams& p);

// Softmax / LogSoftmax along the view's axis; y may be x.
struct SoftmaxParams {
  bool log = false;
  DType dtype = DType::kF32;
  ReduceAxisView view;
  const void* x = nullptr;
  void* y = nullptr;
};
DevStatus Softmax(DevCtx& ctx, const SoftmaxParams& p);

// From the forward's output y: Softmax dx = y * (dy - sum(dy * y)); LogSoftmax dx = dy -
// exp(y) * sum(dy). dx may be dy.
struct SoftmaxGradParams {
  bool log = false;
  DType dtype = DType::kF32;
  ReduceAxisView view;
  const void* dy = nullptr;
  const void* y = nullptr;
  void* dx = nullptr;
};
DevStatus SoftmaxGrad(DevCtx& ctx, const SoftmaxGradParams& p);

// Running sum along the view's axis (ONNX exclusive / reverse); y may be x.
// A run-time axis (`axis` set: a scalar i32/i64 in device memory, a graph input) is read by the
// kernel, which derives the view from `dims` (no host sync in a captured step); an axis outside
// [-rank, rank) raises `err` and gives zeros. Without `axis`, the host's `view` is used.
constexpr int kMaxCumSumRank = 8;
struct CumSumParams {
  bool exclusive = false;
  bool reverse = false;
  DType dtype = DType::kF32;
  ReduceAxisView view;
  const void* axis = nullptr;  // device memory; null: `view` holds the geometry
  bool axis_i32 = false;
  int rank = 0;
  int64_t dims[kMaxCumSumRank] = {};
  int64_t count = 0;  // elements of x
  DevErr err;
  const void* x = nullptr;
  void* y = nullptr;
};
DevStatus CumSum(DevCtx& ctx, const CumSumParams& p);

// Elements per partial sum of GlobalNormSq: the CPU's chunk (kernels/cpu/optim.cc), so both add
// the same doubles in the same order.
constexpr int64_t kNormSqChunk = int64_t{1} << 15;

// *out (f32, device) = sum over the tensors of sum x^2, in double. Host arrays of `num` entries:
// float dtypes, element counts, device pointers.
DevStatus GlobalNormSq(DevCtx& ctx, int num, const DType* dtypes, const int64_t* counts,
                       const void* const* data, float* out);

}  // namespace a8::A8_DEV_NS

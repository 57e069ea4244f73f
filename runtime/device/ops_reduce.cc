// Entries of the reduction family (kernels/device/reduce.h): Reduce*, ArgMax/ArgMin, CumSum,
// a8.SoftmaxGrad / a8.LogSoftmaxGrad, which both backends run (the CPU backend on the host), and
// Softmax/LogSoftmax and a8.GlobalNormSq, which the CPU backend runs from its own kernels
// (runtime/cpu/ops_softmax.cc, ops_optim.cc) with the same checks and messages. A reduction's axes
// are set up by kernels/device/reduce_setup.h, which constant folding shares.
#include <algorithm>
#include <vector>

#include "kernels/common/kernel_types.h"
#include "kernels/device/reduce.h"
#include "kernels/device/reduce_setup.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

template <DevReduceOp kOp>
Status RunReduce(const KernelArgs& a, DevCtx& ctx) {
  const std::string& op = a.kernel().op();
  std::vector<int64_t> axes;
  if (a.has_in(1)) {
    A8_ASSIGN_OR_RETURN(axes, HostInts(a, 1));
  } else {
    axes = a.Ints("axes");
  }
  const TensorArg& x = a.in(0);
  const TensorArg& y = a.out(0);
  if (axes.empty() && a.Int("noop_with_empty_axes") != 0) {
    if (x.bytes() != y.bytes()) return InvalidInput("{}: noop reduction changes the size", op);
    return FromDev(CopyOnDevice(y.data, x.data, x.bytes(), ctx.stream));
  }
  if (y.dtype != x.dtype)
    return InvalidInput("{}: output dtype {} differs from the input's {}", op, DTypeName(y.dtype),
                        DTypeName(x.dtype));
  A8_ASSIGN_OR_RETURN(const std::vector<bool> reduced, ReducedAxes(x.dims, axes, op));
  ReduceParams p;
  p.op = kOp;
  p.dtype = x.dtype;
  A8_RETURN_IF_ERROR(SetReduceShape(x.dims, reduced, op, &p));
  if (p.out_count != y.count())
    return InvalidInput("{}: the output has {} elements, the reduction gives {}", op, y.count(),
                        p.out_count);
  p.x = x.data;
  p.y = y.data;
  return FromDev(Reduce(ctx, p));
}

// The [outer, len, inner] view of `dims` around `axis` (normalized).
ReduceAxisView ViewAround(const Dims& dims, int64_t axis) {
  ReduceAxisView v;
  for (int64_t i = 0; i < axis; ++i) v.outer *= dims[i];
  v.len = dims[axis];
  for (size_t i = axis + 1; i < dims.size(); ++i) v.inner *= dims[i];
  return v;
}

template <bool kIsMax>
Status RunArgReduce(const KernelArgs& a, DevCtx& ctx) {
  const char* name = kIsMax ? "ArgMax" : "ArgMin";
  const TensorArg& x = a.in(0);
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(a.Int("axis"), static_cast<int64_t>(x.dims.size()), name));
  ArgReduceParams p;
  p.is_max = kIsMax;
  p.select_last = a.Int("select_last_index") != 0;
  p.dtype = x.dtype;
  p.view = ViewAround(x.dims, axis);
  if (p.view.len == 0 && p.view.outer * p.view.inner > 0)
    return InvalidInput("{}: axis {} is empty", name, axis);
  p.x = x.data;
  p.y = reinterpret_cast<int64_t*>(a.out(0).data);
  return FromDev(ArgReduce(ctx, p));
}

template <bool kLog>
Status RunSoftmax(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(0);
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(a.Int("axis"), static_cast<int64_t>(x.dims.size()),
                                    kLog ? "LogSoftmax" : "Softmax"));
  SoftmaxParams p;
  p.log = kLog;
  p.dtype = x.dtype;
  p.view = ViewAround(x.dims, axis);
  p.x = x.data;
  p.y = a.out(0).data;
  return FromDev(Softmax(ctx, p));
}

template <bool kLog>
Status RunSoftmaxGrad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& y = a.in(1);
  const int64_t rank = static_cast<int64_t>(y.dims.size());
  // As the CPU entry: a rank-0 y is one line of one element.
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(a.Int("axis"), std::max<int64_t>(rank, 1), "SoftmaxGrad"));
  SoftmaxGradParams p;
  p.log = kLog;
  p.dtype = y.dtype;
  if (rank > 0) p.view = ViewAround(y.dims, axis);
  p.dy = a.in(0).data;
  p.y = y.data;
  p.dx = a.out(0).data;
  return FromDev(SoftmaxGrad(ctx, p));
}

Status RunCumSum(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  CumSumParams p;
  p.exclusive = a.Int("exclusive") != 0;
  p.reverse = a.Int("reverse") != 0;
  p.dtype = x.dtype;
  p.x = x.data;
  p.y = a.out(0).data;
  if (!a.has_in(1) || a.in(1).count() != 1) return InvalidInput("CumSum: axis must hold one value");
  if (a.in(1).host == nullptr) {
    // A graph input: the kernel reads it from device memory (no sync inside the step).
    const TensorArg& axis = a.in(1);
    if (axis.dtype != DType::kI64 && axis.dtype != DType::kI32)
      return InvalidInput("CumSum: axis must be i64 or i32, got {}", ElemName(axis.dtype));
    if (rank < 1 || rank > kMaxCumSumRank)
      return Unsupported("CumSum: rank {} with an axis the kernel reads (ranks 1 to {})", rank,
                         kMaxCumSumRank);
    p.axis = axis.data;
    p.axis_i32 = axis.dtype == DType::kI32;
    p.rank = static_cast<int>(rank);
    for (int64_t i = 0; i < rank; ++i) p.dims[i] = x.dims[i];
    p.count = x.count();
    p.err = ErrOf(ctx);
    return FromDev(CumSum(ctx, p));
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> axis, a.ConstInts(1));
  A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(axis[0], rank, "CumSum"));
  p.view = ViewAround(x.dims, ax);
  return FromDev(CumSum(ctx, p));
}

Status RunGlobalNormSq(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(const TensorList l, FloatsToScalarOperands(a));
  return FromDev(GlobalNormSq(ctx, static_cast<int>(l.dtypes.size()), l.dtypes.data(),
                              l.counts.data(), l.data.data(),
                              reinterpret_cast<float*>(a.out(0).data)));
}

}  // namespace

std::vector<DevKernelEntry> DeviceReduceOps() {
  const char* kAxes = "axes: optional constant i64 input; one thread per output";
  return {
      {"ReduceSum", kNumericTypes, 0, RunReduce<DevReduceOp::kSum>, kAxes},
      {"ReduceMean", kNumericTypes, 0, RunReduce<DevReduceOp::kMean>, kAxes},
      {"ReduceMax", kAllTypes, 0, RunReduce<DevReduceOp::kMax>, kAxes},  // bool: any / all
      {"ReduceMin", kAllTypes, 0, RunReduce<DevReduceOp::kMin>, kAxes},  // bool: any / all
      {"ReduceProd", kNumericTypes, 0, RunReduce<DevReduceOp::kProd>, kAxes},
      {"ReduceSumSquare", kNumericTypes, 0, RunReduce<DevReduceOp::kSumSquare>, kAxes},
      {"ReduceL1", kNumericTypes, 0, RunReduce<DevReduceOp::kL1>, kAxes},
      {"ReduceL2", kNumericTypes, 0, RunReduce<DevReduceOp::kL2>, kAxes},
      {"ReduceLogSumExp", kNumericTypes, 0, RunReduce<DevReduceOp::kLogSumExp>, kAxes},
      {"ArgMax", kNumericTypes, 0, RunArgReduce<true>, "-> i64; one thread per output"},
      {"ArgMin", kNumericTypes, 0, RunArgReduce<false>, "-> i64; one thread per output"},
      {"Softmax", kFloatTypes, 0, RunSoftmax<false>, "one thread per row"},
      {"LogSoftmax", kFloatTypes, 0, RunSoftmax<true>, "one thread per row"},
      {"CumSum", kNumericTypes, 0, RunCumSum,
       "axis: i32/i64 scalar, constant or read by the kernel"},
      {"a8.SoftmaxGrad", kFloatTypes, 0, RunSoftmaxGrad<false>, "one thread per row"},
      {"a8.LogSoftmaxGrad", kFloatTypes, 0, RunSoftmaxGrad<true>, "one thread per row"},
      {"a8.GlobalNormSq", kFloatTypes, 0, RunGlobalNormSq,
       "sum in double over fixed chunks, two passes; out: f32"},
  };
}

}  // namespace a8::A8_DEV_NS

// CPU registry entries: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax. CumSum has none: the CPU
// backend runs the device entry (one body, its axis read by the kernel).
#include <cstring>

#include "kernels/cpu/kernels.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

using cpu::ReduceOp;

KernelFn ReduceFn(ReduceOp op) {
  return [op](const KernelArgs& a) -> Status {
    std::vector<int64_t> axes;
    if (a.has_in(1)) {
      A8_ASSIGN_OR_RETURN(axes, a.ConstInts(1));
    } else {
      axes = a.Ints("axes");
    }
    const TensorArg& x = a.in(0);
    if (axes.empty() && a.Int("noop_with_empty_axes") != 0) {
      if (x.bytes() != a.out(0).bytes())
        return InvalidInput("{}: noop reduction changes the size", a.kernel().op());
      if (x.data != a.out(0).data && x.bytes() > 0) std::memmove(a.out(0).data, x.data, x.bytes());
      return Status::Ok();
    }
    if (!IsFloat(x.dtype) && (op == ReduceOp::kL2 || op == ReduceOp::kLogSumExp)) {
      // Integer L2 / LogSumExp: computed in double, stored like a Cast (truncation).
      std::vector<double> xd(static_cast<size_t>(x.count())), yd(a.out(0).count());
      A8_RETURN_IF_ERROR(cpu::Cast(x.dtype, DType::kF64, x.count(), x.data, xd.data()));
      A8_RETURN_IF_ERROR(cpu::Reduce(op, DType::kF64, x.dims, axes, xd.data(), yd.data()));
      return cpu::Cast(DType::kF64, a.out(0).dtype, a.out(0).count(), yd.data(), a.out(0).data);
    }
    return cpu::Reduce(op, x.dtype, x.dims, axes, x.data, a.out(0).data);
  };
}

KernelFn ArgFn(bool is_max) {
  return [is_max](const KernelArgs& a) -> Status {
    const TensorArg& x = a.in(0);
    return cpu::ArgReduce(is_max, x.dtype, x.dims, a.Int("axis"), a.Int("select_last_index") != 0,
                          x.data, reinterpret_cast<int64_t*>(a.out(0).data));
  };
}

KernelFn SoftmaxFn(bool log) {
  return [log](const KernelArgs& a) -> Status {
    const TensorArg& x = a.in(0);
    return cpu::Softmax(x.dtype, x.dims, a.Int("axis"), log, x.data, a.out(0).data);
  };
}

}  // namespace

std::vector<CpuKernelEntry> ReduceKernels() {
  const char* kAxes = "axes: optional i64 input";
  return {
      {"ReduceSum", kNumericTypes, 0, ReduceFn(ReduceOp::kSum), kAxes},
      {"ReduceMean", kNumericTypes, 0, ReduceFn(ReduceOp::kMean), kAxes},
      {"ReduceMax", kNumericTypes, 0, ReduceFn(ReduceOp::kMax), kAxes},
      {"ReduceMin", kNumericTypes, 0, ReduceFn(ReduceOp::kMin), kAxes},
      {"ReduceProd", kNumericTypes, 0, ReduceFn(ReduceOp::kProd), kAxes},
      {"ReduceSumSquare", kNumericTypes, 0, ReduceFn(ReduceOp::kSumSquare), kAxes},
      {"ReduceL1", kNumericTypes, 0, ReduceFn(ReduceOp::kL1), kAxes},
      {"ReduceL2", kNumericTypes, 0, ReduceFn(ReduceOp::kL2), kAxes},
      {"ReduceLogSumExp", kNumericTypes, 0, ReduceFn(ReduceOp::kLogSumExp), kAxes},
      {"ArgMax", kNumericTypes, 0, ArgFn(true), "-> i64"},
      {"ArgMin", kNumericTypes, 0, ArgFn(false), "-> i64"},
      {"Softmax", kFloatTypes, 0, SoftmaxFn(false), ""},
      {"LogSoftmax", kFloatTypes, 0, SoftmaxFn(true), ""},
  };
}

}  // namespace a8

// Device entries of Det and a8.DetGrad (kernels/device/linalg.h). The CPU backend has no entries
// of its own for them: it runs these through its host launch, so the CPU, the CUDA backend and
// cuda-emu give the same bits.
#include "kernels/common/kernel_types.h"
#include "kernels/device/linalg.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

// The [batch, n, n] view of `x` (rank >= 2, square last two dims), checking what the shape rule
// checked (the plan may have been edited).
Status SetUp(const char* op, const TensorArg& x, linalg::DetParams* p) {
  const int64_t r = static_cast<int64_t>(x.dims.size());
  if (r < 2 || x.dims[r - 1] != x.dims[r - 2] || x.dims[r - 1] < 1)
    return InvalidInput("{}: X must be [..., n, n] with n >= 1, got {} dims", op, r);
  p->dtype = x.dtype;
  p->n = x.dims[r - 1];
  p->batch = 1;
  for (int64_t i = 0; i < r - 2; ++i) p->batch *= x.dims[i];
  p->x = x.data;
  return Status::Ok();
}

Status Det(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &y = a.out(0);
  if (x.dtype != y.dtype) return InvalidInput("Det: X and output dtypes differ");
  linalg::DetParams p;
  A8_RETURN_IF_ERROR(SetUp("Det", x, &p));
  if (NumElements(y.dims) != p.batch)
    return InvalidInput("Det: the output has {} elements for {} matrices", NumElements(y.dims),
                        p.batch);
  p.out = y.data;
  return FromDev(linalg::Det(ctx, p));
}

Status DetGrad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &dy = a.in(0), &x = a.in(1), &dx = a.out(0);
  if (dy.dtype != x.dtype || dx.dtype != x.dtype)
    return InvalidInput("a8.DetGrad: dy, X and dX dtypes differ");
  linalg::DetParams p;
  A8_RETURN_IF_ERROR(SetUp("a8.DetGrad", x, &p));
  if (NumElements(dy.dims) != p.batch || dx.dims != x.dims)
    return InvalidInput("a8.DetGrad: dy must have one element a matrix and dX X's dims");
  p.dy = dy.data;
  p.out = dx.data;
  return FromDev(linalg::DetGrad(ctx, p));
}

}  // namespace

std::vector<DevKernelEntry> DeviceLinalgOps() {
  return {
      {"Det", kFloatTypes, 0, Det,
       "LU with partial pivoting in double, one thread a matrix; one body with the CPU"},
      {"a8.DetGrad", kFloatTypes, 0, DetGrad,
       "dy * cofactors (exact for singular X), one thread a matrix"},
  };
}

}  // namespace a8::A8_DEV_NS

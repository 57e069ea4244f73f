// Device entries of GatherND and a8.GatherNDGrad (kernels/device/gather_nd.h). The CPU backend
// has no entries of its own for them: it runs these through its host launch, so the CPU, the
// CUDA backend and cuda-emu give the same bits.
#include "kernels/common/kernel_types.h"
#include "kernels/device/gather_nd.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

// The flat view of GatherND (data, indices) -> output and of its gradient (dy, indices) -> dx
// over `data_dims` and the gathered `out_dims` (gather_nd.h); the source is input 0 and the
// destination output 0 in both, `names` name them for the dtype error. Checks what the shape rule
// checked (the plan may have been edited).
Status SetUp(const KernelArgs& a, DevCtx& ctx, const char* op, const char* names,
             const Dims& data_dims, const Dims& out_dims, gather_nd::GatherNDParams* p) {
  const TensorArg &src = a.in(0), &idx = a.in(1), &dst = a.out(0);
  if (src.dtype != dst.dtype) return InvalidInput("{}: {} dtypes differ", op, names);
  const int64_t b = a.Int("batch_dims");
  const int64_t r = static_cast<int64_t>(data_dims.size());
  const int64_t q = static_cast<int64_t>(idx.dims.size());
  A8_RETURN_IF_ERROR(RequireIndexDType(idx, op));
  if (b < 0 || b >= q || b >= r)
    return InvalidInput("{}: batch_dims {} must be below the ranks of data ({}) and indices ({})",
                        op, b, r, q);
  const int64_t m = idx.dims[q - 1];
  if (m < 1 || m > r - b || m > gather_nd::kMaxIndexDepth)
    return InvalidInput("{}: indices' last dim {} must be in [1, {}]", op, m,
                        std::min<int64_t>(r - b, gather_nd::kMaxIndexDepth));
  Dims want;
  p->batch = 1;
  for (int64_t i = 0; i < b; ++i) {
    if (idx.dims[i] != data_dims[i])
      return InvalidInput("{}: batch dim {} is {} in indices and {} in data", op, i, idx.dims[i],
                          data_dims[i]);
    p->batch *= data_dims[i];
    want.push_back(data_dims[i]);
  }
  p->nq = 1;
  for (int64_t i = b; i < q - 1; ++i) {
    p->nq *= idx.dims[i];
    want.push_back(idx.dims[i]);
  }
  p->slice = 1;
  for (int64_t i = b + m; i < r; ++i) {
    p->slice *= data_dims[i];
    want.push_back(data_dims[i]);
  }
  if (want != out_dims)
    return InvalidInput("{}: the gathered tensor has {} dims, expected {}", op, out_dims.size(),
                        want.size());
  p->depth = static_cast<int>(m);
  for (int64_t k = 0; k < m; ++k) p->index_dims[k] = data_dims[b + k];
  p->index_i32 = idx.dtype == DType::kI32;
  p->indices = idx.data;
  p->err = ErrOf(ctx);
  p->src = src.data;
  p->dst = dst.data;
  return Status::Ok();
}

Status GatherND(const KernelArgs& a, DevCtx& ctx) {
  gather_nd::GatherNDParams p;
  A8_RETURN_IF_ERROR(SetUp(a, ctx, "GatherND", "data and output", a.in(0).dims, a.out(0).dims, &p));
  p.elem_size = static_cast<int>(DTypeSize(a.in(0).dtype));
  return FromDev(gather_nd::GatherND(ctx, p));
}

Status GatherNDGrad(const KernelArgs& a, DevCtx& ctx) {
  gather_nd::GatherNDParams p;
  A8_RETURN_IF_ERROR(
      SetUp(a, ctx, "a8.GatherNDGrad", "dy and dx", a.out(0).dims, a.in(0).dims, &p));
  p.dtype = a.in(0).dtype;
  return FromDev(gather_nd::GatherNDGrad(ctx, p));
}

}  // namespace

std::vector<DevKernelEntry> DeviceGatherNdOps() {
  return {
      {"GatherND", kAllTypes, 0, GatherND,
       "indices: i32/i64 (out of range: 0); one body with the CPU backend"},
      {"a8.GatherNDGrad", kFloatTypes, 0, GatherNDGrad,
       "indices: i64 or i32; one thread per dx element, tuples summed in order"},
  };
}

}  // namespace a8::A8_DEV_NS

// Device entries of ScatterND, ScatterElements and TopK (kernels/device/scatter.h). The CPU
// backend has no entries of its own for them: it runs these through its host launch, so the CPU,
// the CUDA backend and cuda-emu give the same bits. The checks repeat the shape rules'
// (compiler/ir/op_table_scatter.cc), since a plan may have been edited.
#include "kernels/common/kernel_types.h"
#include "kernels/device/scatter.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

// The checks and fields ScatterND and ScatterElements share: (data, indices, updates) -> y, of
// data's dims and dtype; the reduction in the order of scatter::Reduction.
template <typename Params>
Status ScatterOperands(const KernelArgs& a, DevCtx& ctx, const char* op, Params* p) {
  const TensorArg &x = a.in(0), &idx = a.in(1), &u = a.in(2), &y = a.out(0);
  A8_RETURN_IF_ERROR(RequireIndexDType(idx, op));
  if (u.dtype != x.dtype || y.dtype != x.dtype)
    return InvalidInput("{}: data, updates and output must have one dtype", op);
  if (y.dims != x.dims) return InvalidInput("{}: the output must have data's dims", op);
  A8_ASSIGN_OR_RETURN(p->reduction,
                      AttrChoice(a, op, "reduction", {"none", "add", "mul", "max", "min"}));
  p->err = ErrOf(ctx);
  p->dtype = x.dtype;
  p->index_i32 = idx.dtype == DType::kI32;
  p->data = x.data;
  p->indices = idx.data;
  p->updates = u.data;
  p->y = y.data;
  return Status::Ok();
}

Status ScatterND(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &idx = a.in(1), &u = a.in(2);
  scatter::ScatterNDParams p;
  A8_RETURN_IF_ERROR(ScatterOperands(a, ctx, "ScatterND", &p));
  const int64_t r = static_cast<int64_t>(x.dims.size());
  const int64_t q = static_cast<int64_t>(idx.dims.size());
  if (q < 1) return InvalidInput("ScatterND: indices must have rank >= 1");
  const int64_t m = idx.dims[q - 1];
  if (m < 1 || m > r || m > scatter::kMaxRank)
    return InvalidInput("ScatterND: indices' last dim {} must be in [1, {}]", m,
                        std::min<int64_t>(r, scatter::kMaxRank));
  Dims want(idx.dims.begin(), idx.dims.end() - 1);
  want.insert(want.end(), x.dims.begin() + m, x.dims.end());
  if (u.dims != want) return InvalidInput("ScatterND: updates do not have the dims it needs");
  p.depth = static_cast<int>(m);
  for (int64_t k = 0; k < m; ++k) p.index_dims[k] = x.dims[k];
  p.nq = NumElements(Dims(idx.dims.begin(), idx.dims.end() - 1));
  p.slice = NumElements(Dims(x.dims.begin() + m, x.dims.end()));
  return FromDev(scatter::ScatterND(ctx, p));
}

Status ScatterElements(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &idx = a.in(1), &u = a.in(2);
  scatter::ScatterElementsParams p;
  A8_RETURN_IF_ERROR(ScatterOperands(a, ctx, "ScatterElements", &p));
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(a.Int("axis"), rank, "ScatterElements"));
  if (idx.dims.size() != x.dims.size() || u.dims != idx.dims)
    return InvalidInput("ScatterElements: indices and updates must have one shape of data's rank");
  if (rank > scatter::kMaxRank)
    return Unsupported("ScatterElements: rank {} (the kernel takes up to {})", rank,
                       scatter::kMaxRank);
  for (int64_t d = 0; d < rank; ++d) {
    if (d != ax && idx.dims[d] > x.dims[d])
      return InvalidInput("ScatterElements: indices dim {} ({}) exceeds data's ({})", d,
                          idx.dims[d], x.dims[d]);
    p.data_dims[d] = x.dims[d];
    p.index_dims[d] = idx.dims[d];
  }
  p.rank = static_cast<int>(rank);
  p.axis = static_cast<int>(ax);
  return FromDev(scatter::ScatterElements(ctx, p));
}

// k is the outputs' length along the axis (the shape rule read it from the constant input).
Status TopK(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &vals = a.out(0), &idx = a.out(1);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(a.Int("axis"), rank, "TopK"));
  if (vals.dtype != x.dtype || idx.dtype != DType::kI64)
    return InvalidInput("TopK: values must have x's dtype and indices i64");
  if (vals.dims.size() != x.dims.size() || idx.dims != vals.dims)
    return InvalidInput("TopK: values and indices must have x's rank and one shape");
  scatter::TopKParams p;
  p.outer = 1;
  p.inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != ax && vals.dims[d] != x.dims[d])
      return InvalidInput("TopK: the outputs differ from x in dim {}", d);
    if (d < ax) p.outer *= x.dims[d];
    if (d > ax) p.inner *= x.dims[d];
  }
  p.n = x.dims[ax];
  p.k = vals.dims[ax];
  if (p.k > p.n) return InvalidInput("TopK: k {} exceeds the axis length {}", p.k, p.n);
  p.dtype = x.dtype;
  p.largest = a.Int("largest") != 0;
  p.x = x.data;
  p.values = vals.data;
  p.indices = idx.data;
  return FromDev(scatter::TopK(ctx, p));
}

}  // namespace

std::vector<DevKernelEntry> DeviceScatterOps() {
  return {
      {"ScatterND", kAllTypes, 0, ScatterND,
       "indices: i32/i64; per output row the tuples in order (last wins for 'none')"},
      {"ScatterElements", kAllTypes, 0, ScatterElements,
       "indices: i32/i64; per output element the indices along the axis in order"},
      {"TopK", kAllTypes, 0, TopK,
       "one thread a row, insertion into the outputs; ties: lower index first"},
  };
}

}  // namespace a8::A8_DEV_NS

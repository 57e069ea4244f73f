// The GatherND kernels (declared in gather_nd.h).
#include "kernels/device/gather_nd.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS::gather_nd {
namespace {

// Tuple `t` of batch `b` as an offset into prod(D) (row-major), or -1 with the error raised for
// a component out of range.
A8_HD int64_t TupleOffset(const GatherNDParams& p, int64_t b, int64_t t) {
  const int64_t base = (b * p.nq + t) * p.depth;
  int64_t off = 0;
  for (int k = 0; k < p.depth; ++k) {
    const int64_t len = p.index_dims[k];
    const int64_t v = NormalizeIndex(LoadIndex(p.index_i32, p.indices, base + k), len);
    if (v < 0) {
      p.err.Raise();
      return -1;
    }
    off = off * len + v;
  }
  return off;
}

int64_t Cells(const GatherNDParams& p) {
  int64_t n = 1;
  for (int k = 0; k < p.depth; ++k) n *= p.index_dims[k];
  return n;
}

template <typename U>
struct GatherNDFn {
  GatherNDParams p;
  int64_t cells;  // prod(D)
  A8_HD void operator()(int64_t i) const {
    const int64_t s = i % p.slice, bt = i / p.slice;
    const int64_t t = bt % p.nq, b = bt / p.nq;
    const int64_t off = TupleOffset(p, b, t);
    static_cast<U*>(p.dst)[i] =
        off < 0 ? U{0} : static_cast<const U*>(p.src)[(b * cells + off) * p.slice + s];
  }
};

template <typename T>
struct GatherNDGradFn {
  GatherNDParams p;
  int64_t cells;
  A8_HD void operator()(int64_t i) const {
    const int64_t s = i % p.slice, bc = i / p.slice;
    const int64_t c = bc % cells, b = bc / cells;
    const T* dy = static_cast<const T*>(p.src);
    Acc<T> acc = Acc<T>(0);
    for (int64_t t = 0; t < p.nq; ++t) {
      if (TupleOffset(p, b, t) == c) acc += Ld(dy, (b * p.nq + t) * p.slice + s);
    }
    St(static_cast<T*>(p.dst), i, acc);
  }
};

DevStatus Check(const GatherNDParams& p, const char* op) {
  if (p.depth < 1 || p.depth > kMaxIndexDepth) return DevError(op);
  return DevOk();
}

}  // namespace

DevStatus GatherND(DevCtx& ctx, const GatherNDParams& p) {
  A8_DEV_RETURN_IF_ERROR(Check(p, "GatherND: index depth out of range"));
  const int64_t n = p.batch * p.nq * p.slice, cells = Cells(p);
  return DispatchBySize(p.elem_size, "GatherND", [&](auto u) {
    return ForEach(ctx, n, GatherNDFn<decltype(u)>{p, cells});
  });
}

DevStatus GatherNDGrad(DevCtx& ctx, const GatherNDParams& p) {
  A8_DEV_RETURN_IF_ERROR(Check(p, "a8.GatherNDGrad: index depth out of range"));
  const int64_t cells = Cells(p);
  return DispatchFloat(p.dtype, [&](auto t) {
    return ForEach(ctx, p.batch * cells * p.slice, GatherNDGradFn<decltype(t)>{p, cells});
  });
}

}  // namespace a8::A8_DEV_NS::gather_nd

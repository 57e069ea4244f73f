// The walk of the kernels that reduce a list of float tensors to one value (a8.GlobalNormSq's sum
// of squares, a8.UnscaleCheckFinite's overflow flag): each tensor in fixed chunks, one result per
// chunk, so the result does not depend on how ParallelFor splits the work.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {

// For each tensor t (dtypes[t], counts[t] elements; counts is as long as dtypes): `body(tag, t, b,
// e)` on each chunk [b, e) of `chunk` elements (the last may be shorter) over the pool, with tag
// the TypeTag of the tensor's storage type; its result of type R goes to the chunk's own slot.
// Then `fold(result)` on the chunks' results in order, tensor after tensor. A negative count or a
// dtype other than a float one is an error naming `op`.
template <typename R, typename Body, typename Fold>
Status ForEachTensorChunk(const char* op, int64_t chunk, const std::vector<DType>& dtypes,
                          const std::vector<int64_t>& counts, Body&& body, Fold&& fold) {
  for (size_t t = 0; t < dtypes.size(); ++t) {
    const int64_t n = counts[t];
    if (n < 0) return InvalidInput("{}: negative element count {}", op, n);
    const int64_t chunks = (n + chunk - 1) / chunk;
    std::vector<R> partial(static_cast<size_t>(chunks), R(0));
    A8_RETURN_IF_ERROR(Dispatch<TypeSet::kFloat>(dtypes[t], op, [&](auto tag) {
      ParallelFor(chunks, chunk, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          const int64_t b = c * chunk, e = std::min(n, b + chunk);
          partial[static_cast<size_t>(c)] = body(tag, t, b, e);
        }
      });
      return Status::Ok();
    }));
    for (const R& r : partial) fold(r);
  }
  return Status::Ok();
}

}  // namespace a8::cpu

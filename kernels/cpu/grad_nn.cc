// Backward kernels of Softmax/LogSoftmax and Dropout (see grad_nn.h).
#include "kernels/cpu/grad_nn.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

constexpr int64_t kTranscendentalCost = 16;

}  // namespace

Status SoftmaxGrad(DType dtype, const Dims& dims, int64_t axis, bool log, const void* dy,
                   const void* y, void* dx) {
  const char* op = log ? "a8.LogSoftmaxGrad" : "a8.SoftmaxGrad";
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) {
    return InvalidInput("{}: axis {} is outside rank {}", op, axis, rank);
  }
  const int64_t len = rank == 0 ? 1 : dims[axis];
  const int64_t inner = rank == 0 ? 1 : NumElements(Dims(dims.begin() + axis + 1, dims.end()));
  const int64_t outer = rank == 0 ? 1 : NumElements(Dims(dims.begin(), dims.begin() + axis));
  return Dispatch<TypeSet::kFloat>(dtype, op, [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* g = static_cast<const T*>(dy);
    const T* out = static_cast<const T*>(y);
    T* res = static_cast<T*>(dx);
    ParallelFor(outer * inner, len * kTranscendentalCost, [&](int64_t b, int64_t e) {
      for (int64_t line = b; line < e; ++line) {
        const int64_t base = (line / inner) * len * inner + line % inner;
        C sum = 0;
        for (int64_t k = 0; k < len; ++k) {
          const int64_t j = base + k * inner;
          sum += log ? Load(g[j]) : Load(g[j]) * Load(out[j]);
        }
        for (int64_t k = 0; k < len; ++k) {
          const int64_t j = base + k * inner;
          const C yv = Load(out[j]), gv = Load(g[j]);
          res[j] = Store<T>(log ? gv - std::exp(yv) * sum : yv * (gv - sum));
        }
      }
    });
    return Status::Ok();
  });
}

Status DropoutGrad(DType dtype, int64_t n, const void* dy, const bool* mask, float scale,
                   void* dx) {
  return Dispatch<TypeSet::kFloat>(dtype, "a8.DropoutGrad", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* g = static_cast<const T*>(dy);
    T* res = static_cast<T*>(dx);
    const C s = static_cast<C>(scale);
    ParallelFor(n, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) res[i] = Store<T>(mask[i] ? Load(g[i]) * s : C(0));
    });
    return Status::Ok();
  });
}

}  // namespace a8::cpu

// Gradient kernels: activation gradients and GatherGrad (scatter-add).
#include "kernels/cpu/grad_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

const char* ActivationGradName(ActivationGradOp op) {
  static const char* const kNames[] = {
#define A8_X(Name, Reads, Cost, Fused) "a8." #Name "Grad",
      A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
  };
  return kNames[static_cast<int>(op)];
}

// dx[i] = f(dy[i], z[i]) over [0, n) with the shared body f (kernels/common/unary_math.h).
// In the fast mode the erf Gelu's gradient runs the branch-free polynomial (fast_math.h).
template <typename T, typename F>
void MapGrad(int64_t n, int64_t cost, const T* dy, const T* z, T* dx, F f) {
  constexpr bool kFastGelu = std::is_same_v<F, GeluGradF>;
  if constexpr (kIsHalfElem<T>) {
    if constexpr (std::is_same_v<F, ReluGradF>) {  // the fast mode: on the bits, no conversion
      if (CurrentKernelMode() == KernelMode::kFast) {
        ParallelFor(n, 1, [&](int64_t b, int64_t e) {
          internal::ReluGradHalfBits(
              std::is_same_v<T, BFloat16>, e - b, reinterpret_cast<const uint16_t*>(dy + b),
              reinterpret_cast<const uint16_t*>(z + b), reinterpret_cast<uint16_t*>(dx + b));
        });
        return;
      }
    }
    // The fast mode: float blocks converted in vector registers (fast_convert.h).
    if (CurrentKernelMode() == KernelMode::kFast) {
      ParallelFor(n, cost, [&](int64_t b, int64_t e) {
        float fdy[kF32Block], fz[kF32Block];
        ForEachF32Block(b, e, [&](int64_t i, int64_t len) {
          ToF32(dy + i, fdy, len);
          ToF32(z + i, fz, len);
          if constexpr (kFastGelu) {
            internal::GeluErfGradF32(len, fdy, fz, fdy);
          } else {
            for (int64_t j = 0; j < len; ++j) fdy[j] = f(fdy[j], fz[j]);
          }
          FromF32(fdy, dx + i, len);
        });
      });
      return;
    }
  } else if constexpr (kFastGelu && std::is_same_v<T, float>) {
    if (CurrentKernelMode() == KernelMode::kFast) {
      ParallelFor(n, cost, [&](int64_t b, int64_t e) {
        internal::GeluErfGradF32(e - b, dy + b, z + b, dx + b);
      });
      return;
    }
  }
  ParallelFor(n, cost, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dx[i] = Store<T>(f(Load(dy[i]), Load(z[i])));
  });
}

template <typename T>
void ActivationGradKernel(ActivationGradOp op, int64_t n, const T* dy, const T* z, T* dx,
                          const ActivationGradAttrs& at) {
  switch (op) {
#define A8_X(Name, Reads, Cost, Fused)            \
  case ActivationGradOp::k##Name:                 \
    MapGrad(n, Cost, dy, z, dx, Name##GradF{at}); \
    break;
    A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
  }
}

// Indices as int64 in [0, dim), or InvalidInput naming the first one out of range.
template <typename I>
Status NormalizeIndices(const I* idx, int64_t n, int64_t dim, const char* op,
                        std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -dim || v >= dim) {
      return InvalidInput("{}: index {} (element {}) is out of range for a dim of {}", op, v, j,
                          dim);
    }
    (*out)[j] = v < 0 ? v + dim : v;
  }
  return Status::Ok();
}

}  // namespace

Status ActivationGrad(ActivationGradOp op, DType dtype, int64_t n, const void* dy, const void* z,
                      void* dx, const ActivationGradAttrs& attrs) {
  return Dispatch<TypeSet::kFloat>(dtype, ActivationGradName(op), [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    ActivationGradKernel(op, n, static_cast<const T*>(dy), static_cast<const T*>(z),
                         static_cast<T*>(dx), attrs);
    return Status::Ok();
  });
}

Status GatherGrad(DType dtype, const Dims& dy_dims, const void* dy, int64_t axis, DType index_dtype,
                  const Dims& index_dims, const void* indices, const Dims& data_dims, void* dx) {
  const char* op = "a8.GatherGrad";
  const int64_t rank = static_cast<int64_t>(data_dims.size());
  if (axis < -rank || axis >= rank) {
    return InvalidInput("{}: axis {} is out of range for rank {}", op, axis, rank);
  }
  if (axis < 0) axis += rank;
  Dims want(data_dims.begin(), data_dims.begin() + axis);
  want.insert(want.end(), index_dims.begin(), index_dims.end());
  want.insert(want.end(), data_dims.begin() + axis + 1, data_dims.end());
  if (want != dy_dims) {
    return InvalidInput("{}: dy has {} dims, expected {} from data and indices", op, dy_dims.size(),
                        want.size());
  }
  const int64_t dim = data_dims[axis];
  const int64_t outer = NumElements(Dims(data_dims.begin(), data_dims.begin() + axis));
  const int64_t inner = NumElements(Dims(data_dims.begin() + axis + 1, data_dims.end()));
  const int64_t nidx = NumElements(index_dims);
  std::vector<int64_t> idx;
  if (index_dtype == DType::kI64) {
    A8_RETURN_IF_ERROR(NormalizeIndices(static_cast<const int64_t*>(indices), nidx, dim, op, &idx));
  } else if (index_dtype == DType::kI32) {
    A8_RETURN_IF_ERROR(NormalizeIndices(static_cast<const int32_t*>(indices), nidx, dim, op, &idx));
  } else {
    return Unsupported("{}: indices must be i64 or i32, got {}", op, ElemName(index_dtype));
  }
  return Dispatch<TypeSet::kFloat>(dtype, op, [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    using A = Compute<T>;
    const T* g = static_cast<const T*>(dy);
    T* out = static_cast<T*>(dx);
    // Bucket the positions j by the row they land on (a stable counting sort), so that each
    // output row is owned by one work item that adds its contributions in index order.
    std::vector<int64_t> first(static_cast<size_t>(dim) + 1, 0), order(static_cast<size_t>(nidx));
    for (int64_t k : idx) ++first[k + 1];
    for (int64_t d = 0; d < dim; ++d) first[d + 1] += first[d];
    std::vector<int64_t> next(first.begin(), first.end() - 1);
    for (int64_t j = 0; j < nidx; ++j) order[next[idx[j]]++] = j;
    const int64_t per_row = dim == 0 ? 0 : std::max<int64_t>(nidx / dim, 1);
    ParallelFor(outer * dim, inner * per_row, [&](int64_t b, int64_t e) {
      // f16/bf16 rows sum in float and are rounded once.
      std::vector<A> row(std::is_same_v<T, A> ? 0 : static_cast<size_t>(inner));
      for (int64_t item = b; item < e; ++item) {
        const int64_t o = item / dim, d = item % dim;
        T* dst = out + item * inner;
        if (first[d] == first[d + 1]) {
          // No index lands here (most rows of an embedding's gradient): zeros, whose bits are
          // all zero in every float dtype, with no float row converted element by element (an
          // f16 BERT-base embedding gradient: 29 -> 11 ms a step, as f32's).
          std::memset(static_cast<void*>(dst), 0, static_cast<size_t>(inner) * sizeof(T));
          continue;
        }
        A* acc = nullptr;
        if constexpr (std::is_same_v<T, A>) {
          acc = dst;
        } else {
          acc = row.data();
        }
        std::fill(acc, acc + inner, A(0));
        for (int64_t p = first[d]; p < first[d + 1]; ++p) {
          const T* src = g + (o * nidx + order[p]) * inner;
          for (int64_t c = 0; c < inner; ++c) acc[c] += Load(src[c]);
        }
        if constexpr (!std::is_same_v<T, A>) {
          for (int64_t c = 0; c < inner; ++c) dst[c] = Store<T>(acc[c]);
        }
      }
    });
    return Status::Ok();
  });
}

}  // namespace a8::cpu

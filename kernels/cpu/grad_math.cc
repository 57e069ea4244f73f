// Gradient kernels: activation gradients, GatherGrad (scatter-add), SliceGrad (strided scatter).
#include "kernels/cpu/grad_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

constexpr int64_t kTranscendentalCost = 16;

const char* ActivationGradName(ActivationGradOp op) {
  static const char* const kNames[] = {
      "a8.ReluGrad", "a8.SigmoidGrad", "a8.TanhGrad", "a8.LeakyReluGrad", "a8.EluGrad",
      "a8.GeluGrad", "a8.GeluGrad",    "a8.ErfGrad",  "a8.SoftplusGrad",  "a8.HardSigmoidGrad"};
  return kNames[static_cast<int>(op)];
}

// 1 / (1 + e^-x) without overflow for large |x|.
template <typename A>
inline A Sigmoid(A x) {
  if (x >= A(0)) return A(1) / (A(1) + std::exp(-x));
  const A e = std::exp(x);
  return e / (A(1) + e);
}

// dx[i] = f(dy[i], z[i]) over [0, n).
template <typename T, typename F>
void MapGrad(int64_t n, int64_t cost, const T* dy, const T* z, T* dx, F f) {
  ParallelFor(n, cost, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dx[i] = Store<T>(f(Load(dy[i]), Load(z[i])));
  });
}

template <typename T>
void ActivationGradKernel(ActivationGradOp op, int64_t n, const T* dy, const T* z, T* dx,
                          const ActivationGradAttrs& at) {
  using A = Compute<T>;
  const A alpha = static_cast<A>(at.alpha), beta = static_cast<A>(at.beta);
  const A one = 1, zero = 0;
  switch (op) {
    case ActivationGradOp::kRelu:
      MapGrad(n, 1, dy, z, dx, [=](A g, A y) { return y > zero ? g : zero; });
      break;
    case ActivationGradOp::kSigmoid:
      MapGrad(n, 1, dy, z, dx, [=](A g, A y) { return g * y * (one - y); });
      break;
    case ActivationGradOp::kTanh:
      MapGrad(n, 1, dy, z, dx, [=](A g, A y) { return g * (one - y * y); });
      break;
    case ActivationGradOp::kLeakyRelu:
      MapGrad(n, 1, dy, z, dx, [=](A g, A x) { return x > zero ? g : alpha * g; });
      break;
    case ActivationGradOp::kElu:
      MapGrad(n, kTranscendentalCost, dy, z, dx,
              [=](A g, A x) { return x > zero ? g : alpha * std::exp(x) * g; });
      break;
    case ActivationGradOp::kGelu:
      // d/dx [x Phi(x)] = Phi(x) + x phi(x), Phi through erfc (no cancellation for x < 0).
      MapGrad(n, kTranscendentalCost, dy, z, dx, [=](A g, A x) {
        const A cdf = A(0.5) * std::erfc(-x * A(0.70710678118654752440));
        const A pdf = std::exp(A(-0.5) * x * x) * A(0.39894228040143267794);
        return g * (cdf + x * pdf);
      });
      break;
    case ActivationGradOp::kGeluTanh:
      // With s = (1 + tanh u) / 2 = sigmoid(2u): y = x s, dy/dx = s + 2 x s (1 - s) u'(x).
      MapGrad(n, kTranscendentalCost, dy, z, dx, [=](A g, A x) {
        const A k = A(0.79788456080286535588), c = A(0.044715);
        const A u = k * (x + c * x * x * x);
        const A s = Sigmoid(A(2) * u);
        const A du = k * (one + A(3) * c * x * x);
        return g * (s + A(2) * x * s * (one - s) * du);
      });
      break;
    case ActivationGradOp::kErf:
      MapGrad(n, kTranscendentalCost, dy, z, dx,
              [=](A g, A x) { return g * A(1.12837916709551257390) * std::exp(-x * x); });
      break;
    case ActivationGradOp::kSoftplus:
      MapGrad(n, kTranscendentalCost, dy, z, dx, [=](A g, A x) { return g * Sigmoid(x); });
      break;
    case ActivationGradOp::kHardSigmoid:
      MapGrad(n, 1, dy, z, dx, [=](A g, A x) {
        const A v = alpha * x + beta;
        return v > zero && v < one ? alpha * g : zero;
      });
      break;
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

Status SliceGrad(DType dtype, const Dims& dy_dims, const void* dy, const Dims& starts,
                 const Dims& steps, const Dims& data_dims, void* dx) {
  const char* op = "a8.SliceGrad";
  const size_t rank = data_dims.size();
  if (dy_dims.size() != rank || starts.size() != rank || steps.size() != rank) {
    return InvalidInput("{}: dy, starts, steps and the data must have the same rank {}", op, rank);
  }
  for (size_t d = 0; d < rank; ++d) {
    if (dy_dims[d] == 0) continue;
    const __int128 last = __int128{starts[d]} + __int128{dy_dims[d] - 1} * steps[d];  // no wrap
    if (steps[d] == 0 || starts[d] < 0 || starts[d] >= data_dims[d] || last < 0 ||
        last >= data_dims[d]) {
      return InvalidInput("{}: dim {}: {} elements from {} step {} do not fit in {}", op, d,
                          dy_dims[d], starts[d], steps[d], data_dims[d]);
    }
  }
  return DispatchBySize(dtype, [&](auto tag) -> Status {
    using U = A8_TAG_TYPE(tag);  // the slice only moves elements; zero bits are 0.0
    const U* g = static_cast<const U*>(dy);
    U* out = static_cast<U*>(dx);
    std::memset(out, 0, static_cast<size_t>(NumElements(data_dims)) * sizeof(U));
    const int64_t count = NumElements(dy_dims);
    if (count == 0) return Status::Ok();
    if (rank == 0) {
      out[0] = g[0];
      return Status::Ok();
    }
    const Dims stride = Strides(data_dims);
    const int64_t inner = dy_dims[rank - 1];
    const int64_t inner_step = steps[rank - 1] * stride[rank - 1];
    ParallelFor(count / inner, inner, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        int64_t off = starts[rank - 1] * stride[rank - 1];
        int64_t rest = row;
        for (size_t d = rank - 1; d-- > 0;) {
          const int64_t k = rest % dy_dims[d];
          rest /= dy_dims[d];
          off += (starts[d] + k * steps[d]) * stride[d];
        }
        const U* src = g + row * inner;
        for (int64_t k = 0; k < inner; ++k) out[off + k * inner_step] = src[k];
      }
    });
    return Status::Ok();
  });
}

}  // namespace a8::cpu

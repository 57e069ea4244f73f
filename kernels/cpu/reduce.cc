#include "kernels/cpu/reduce.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/common/sum_order.h"
#include "kernels/common/unary_math.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

const char* ReduceName(ReduceOp op) {
  static const char* const kNames[] = {"ReduceSum", "ReduceMean", "ReduceMax",
                                       "ReduceMin", "ReduceProd", "ReduceSumSquare",
                                       "ReduceL1",  "ReduceL2",   "ReduceLogSumExp"};
  return kNames[static_cast<int>(op)];
}

// Offsets (row-major over the selected axes) of every index combination of those axes.
std::vector<int64_t> SubsetOffsets(const Dims& dims, const std::vector<bool>& selected) {
  const Dims strides = Strides(dims);
  std::vector<int64_t> offsets = {0};
  for (size_t a = 0; a < dims.size(); ++a) {
    if (!selected[a]) continue;
    std::vector<int64_t> next;
    next.reserve(offsets.size() * dims[a]);
    for (int64_t base : offsets) {
      for (int64_t i = 0; i < dims[a]; ++i) next.push_back(base + i * strides[a]);
    }
    offsets.swap(next);
  }
  return offsets;
}

StatusOr<std::vector<bool>> AxisMask(const Dims& dims, const std::vector<int64_t>& axes,
                                     const char* op) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> mask(dims.size(), axes.empty());
  for (int64_t axis : axes) {
    A8_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, rank, op));
    if (mask[a]) return InvalidInput("{}: axis {} is repeated", op, axis);
    mask[a] = true;
  }
  return mask;
}

// a * b and a + b in the accumulator type; integers wrap around (two's complement) as ONNX's
// integer arithmetic does, where a signed overflow would be undefined behaviour.
template <typename A>
A AccMul(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return static_cast<A>(a * b);
  }
}
template <typename A>
A AccAdd(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return static_cast<A>(a + b);
  }
}

// Accumulates one output of a reduction. A is the accumulator type.
template <typename T, typename A>
A ReduceOne(ReduceOp op, const T* x, const std::vector<int64_t>& offs) {
  const int64_t n = static_cast<int64_t>(offs.size());
  auto val = [&](int64_t r) { return static_cast<A>(Load(x[offs[r]])); };
  switch (op) {
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      const bool is_max = op == ReduceOp::kMax;
      A best;
      if constexpr (std::is_floating_point_v<A>) {
        best = is_max ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
      } else {
        using C = Compute<T>;
        best = is_max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
      }
      for (int64_t r = 0; r < n; ++r) {
        A v = val(r);
        if (v != v) return v;  // NaN propagates
        if (is_max ? v > best : v < best) best = v;
      }
      return best;
    }
    case ReduceOp::kProd: {
      A p = 1;
      for (int64_t r = 0; r < n; ++r) p = AccMul(p, val(r));
      return p;
    }
    case ReduceOp::kLogSumExp: {
      if constexpr (std::is_floating_point_v<A>) {
        A m = -std::numeric_limits<A>::infinity();
        for (int64_t r = 0; r < n; ++r) m = std::fmax(m, val(r));
        if (std::isinf(m)) return m;
        A s = 0;
        for (int64_t r = 0; r < n; ++r) s += std::exp(val(r) - m);
        return m + std::log(s);
      }
      return A(0);
    }
    default: {
      // In chunks of kSumChunk (kernels/common/sum_order.h), as the device kernel adds.
      A s = 0, chunk = 0;
      for (int64_t r = 0; r < n; ++r) {
        A v = val(r);
        if (op == ReduceOp::kSumSquare || op == ReduceOp::kL2) v = AccMul(v, v);
        if (op == ReduceOp::kL1 && v < A(0)) v = static_cast<A>(-v);
        chunk = AccAdd(chunk, v);
        if ((r + 1) % kSumChunk == 0 || r + 1 == n) {
          s = AccAdd(s, chunk);
          chunk = 0;
        }
      }
      if (op == ReduceOp::kMean) {
        if constexpr (std::is_floating_point_v<A>)
          return s / static_cast<A>(n);
        else
          return n > 0 ? static_cast<A>(s / n) : A(0);
      }
      if (op == ReduceOp::kL2) {
        if constexpr (std::is_floating_point_v<A>) return std::sqrt(s);
      }
      return s;
    }
  }
}

// outer x len x inner view of `dims` around `axis`.
void SplitAround(const Dims& dims, int64_t axis, int64_t* outer, int64_t* len, int64_t* inner) {
  *outer = *inner = 1;
  for (int64_t i = 0; i < axis; ++i) *outer *= dims[i];
  *len = dims[axis];
  for (size_t i = axis + 1; i < dims.size(); ++i) *inner *= dims[i];
}

// Whether the selected axes are one contiguous run; if so, the outer x len x inner view of the
// input around it (len = the product of the run).
bool ContiguousRun(const Dims& dims, const std::vector<bool>& mask, int64_t* outer, int64_t* len,
                   int64_t* inner) {
  size_t first = 0;
  while (first < mask.size() && !mask[first]) ++first;
  size_t last = first;
  while (last < mask.size() && mask[last]) ++last;
  for (size_t i = last; i < mask.size(); ++i) {
    if (mask[i]) return false;
  }
  *outer = *len = *inner = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    (i < first ? *outer : (i < last ? *len : *inner)) *= dims[i];
  }
  return true;
}

// ReduceSum/ReduceMean of float types over one contiguous run of axes: each output still sums
// its elements in row-major order, in chunks of kSumChunk (the same bits as ReduceOne), but a
// whole row of `inner` outputs advances together, so the adds are vector adds and no offset table
// is built (BERT's mean pooling over the sequence was 5% of its step through the generic path).
template <typename T>
void SumRun(bool mean, int64_t outer, int64_t len, int64_t inner, const T* x, T* y) {
  using A = Compute<T>;
  ParallelFor(outer, len * inner, [&](int64_t ob, int64_t oe) {
    std::vector<A> acc(static_cast<size_t>(inner)), chunk(static_cast<size_t>(inner));
    for (int64_t o = ob; o < oe; ++o) {
      std::fill(acc.begin(), acc.end(), A(0));
      std::fill(chunk.begin(), chunk.end(), A(0));
      for (int64_t k = 0; k < len; ++k) {
        const T* row = x + (o * len + k) * inner;
        for (int64_t j = 0; j < inner; ++j) chunk[j] += Load(row[j]);
        if ((k + 1) % kSumChunk == 0 || k + 1 == len) {
          for (int64_t j = 0; j < inner; ++j) {
            acc[j] += chunk[j];
            chunk[j] = A(0);
          }
        }
      }
      for (int64_t j = 0; j < inner; ++j) {
        y[o * inner + j] = Store<T>(mean ? acc[j] / static_cast<A>(len) : acc[j]);
      }
    }
  });
}

// The fast mode's f32 Softmax over contiguous rows of `len`: per chunk of rows, the shifted scores
// x - max go to y, one vectorised exp runs over the whole chunk (BERT's rows are 16 long: a libm
// call per element was most of its Softmax), then each row is scaled by 1 / its sum (summed in
// order). y may be x. Short rows are taken kRowGroup at a time, element k of each row in turn:
// a row's max and sum are chains of dependent operations, and the group's chains overlap (each
// row still sees its elements in order, so the values are the same).
void SoftmaxRowsF32(int64_t rows, int64_t len, const float* x, float* y) {
  constexpr int64_t kRowGroup = 8;
  // Rows [r0, r0 + G): G a constant, so that the G running values stay in registers.
  auto max_shift = [&]<int64_t G>(int64_t r0) {
    float m[G];
    for (int64_t j = 0; j < G; ++j) m[j] = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < len; ++k) {
      for (int64_t j = 0; j < G; ++j) m[j] = std::max(m[j], x[(r0 + j) * len + k]);
    }
    for (int64_t j = 0; j < G; ++j) {
      const float* xr = x + (r0 + j) * len;
      float* yr = y + (r0 + j) * len;
      for (int64_t k = 0; k < len; ++k) yr[k] = xr[k] - m[j];
    }
  };
  auto scale = [&]<int64_t G>(int64_t r0) {
    float sum[G] = {};
    for (int64_t k = 0; k < len; ++k) {
      for (int64_t j = 0; j < G; ++j) sum[j] += y[(r0 + j) * len + k];
    }
    for (int64_t j = 0; j < G; ++j) {
      float* yr = y + (r0 + j) * len;
      const float inv_sum = 1.0f / sum[j];
      for (int64_t k = 0; k < len; ++k) yr[k] *= inv_sum;
    }
  };
  ParallelFor(rows, len, [&](int64_t b, int64_t e) {
    int64_t r = b;
    for (; r + kRowGroup <= e; r += kRowGroup) max_shift.template operator()<kRowGroup>(r);
    for (; r < e; ++r) max_shift.template operator()<1>(r);
    internal::ExpNonPositiveF32((e - b) * len, y + b * len, y + b * len);
    r = b;
    for (; r + kRowGroup <= e; r += kRowGroup) scale.template operator()<kRowGroup>(r);
    for (; r < e; ++r) scale.template operator()<1>(r);
  });
}

}  // namespace

StatusOr<Dims> ReduceOutputDims(const Dims& in_dims, const std::vector<int64_t>& axes,
                                bool keepdims) {
  A8_ASSIGN_OR_RETURN(std::vector<bool> mask, AxisMask(in_dims, axes, "Reduce"));
  Dims out;
  for (size_t i = 0; i < in_dims.size(); ++i) {
    if (!mask[i])
      out.push_back(in_dims[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

Status Reduce(ReduceOp op, DType dtype, const Dims& in_dims, const std::vector<int64_t>& axes,
              const void* x, void* y) {
  const char* name = ReduceName(op);
  A8_ASSIGN_OR_RETURN(std::vector<bool> mask, AxisMask(in_dims, axes, name));
  int64_t outer, len, inner;
  if ((op == ReduceOp::kSum || op == ReduceOp::kMean) && IsFloatDType(dtype) &&
      ContiguousRun(in_dims, mask, &outer, &len, &inner)) {
    return Dispatch<TypeSet::kFloat>(dtype, name, [&](auto tag) {
      using T = A8_TAG_TYPE(tag);
      SumRun(op == ReduceOp::kMean, outer, len, inner, static_cast<const T*>(x),
             static_cast<T*>(y));
      return Status::Ok();
    });
  }
  std::vector<bool> kept(mask.size());
  for (size_t i = 0; i < mask.size(); ++i) kept[i] = !mask[i];
  const std::vector<int64_t> reduced_offs = SubsetOffsets(in_dims, mask);
  const std::vector<int64_t> out_offs = SubsetOffsets(in_dims, kept);
  const int64_t out_n = static_cast<int64_t>(out_offs.size());
  auto kernel = [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    using A = std::conditional_t<kIsFloatElem<T>, Compute<T>, int64_t>;
    if constexpr (!kIsFloatElem<T>) {
      if (op == ReduceOp::kL2 || op == ReduceOp::kLogSumExp) {
        return Unsupported("{}: dtype {} is not supported", name, ElemName(dtype));
      }
    }
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    ParallelFor(out_n, static_cast<int64_t>(reduced_offs.size()) * 2, [&](int64_t b, int64_t e) {
      std::vector<int64_t> offs(reduced_offs.size());
      for (int64_t o = b; o < e; ++o) {
        for (size_t r = 0; r < offs.size(); ++r) offs[r] = out_offs[o] + reduced_offs[r];
        A v = ReduceOne<T, A>(op, in, offs);
        out[o] = Store<T>(static_cast<Compute<T>>(v));
      }
    });
    return Status::Ok();
  };
  return Dispatch<TypeSet::kNumeric>(dtype, name, kernel);
}

Status ArgReduce(bool is_max, DType dtype, const Dims& in_dims, int64_t axis,
                 bool select_last_index, const void* x, int64_t* y) {
  const char* name = is_max ? "ArgMax" : "ArgMin";
  A8_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, static_cast<int64_t>(in_dims.size()), name));
  int64_t outer, len, inner;
  SplitAround(in_dims, a, &outer, &len, &inner);
  // An empty axis has no index to return (and nothing to read).
  if (len == 0 && outer * inner > 0) return InvalidInput("{}: axis {} is empty", name, axis);
  return Dispatch<TypeSet::kNumeric>(dtype, name, [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    const T* in = static_cast<const T*>(x);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = in + o * len * inner + i;
        auto best = Load(p[0]);
        int64_t best_k = 0;
        for (int64_t k = 1; k < len; ++k) {
          auto v = Load(p[k * inner]);
          bool better = is_max ? v > best : v < best;
          if (better || (select_last_index && v == best)) best = v, best_k = k;
        }
        y[o * inner + i] = best_k;
      }
    }
    return Status::Ok();
  });
}

Status Softmax(DType dtype, const Dims& dims, int64_t axis, bool log, const void* x, void* y) {
  const char* name = log ? "LogSoftmax" : "Softmax";
  A8_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, static_cast<int64_t>(dims.size()), name));
  int64_t outer, len, inner;
  SplitAround(dims, a, &outer, &len, &inner);
  return Dispatch<TypeSet::kFloat>(dtype, name, [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    if constexpr (std::is_same_v<T, float>) {
      if (!log && inner == 1 && len > 0 && CurrentKernelMode() == KernelMode::kFast) {
        SoftmaxRowsF32(outer, len, in, out);
        return Status::Ok();
      }
    }
    ParallelFor(outer * inner, len * 8, [&](int64_t b, int64_t e) {
      std::vector<C> ex(static_cast<size_t>(len));
      for (int64_t r = b; r < e; ++r) {
        const int64_t base = (r / inner) * len * inner + r % inner;
        C m = -std::numeric_limits<C>::infinity();
        for (int64_t k = 0; k < len; ++k) m = std::max(m, Load(in[base + k * inner]));
        C sum = 0;
        for (int64_t k = 0; k < len; ++k) {
          ex[k] = ExpOrZero(Load(in[base + k * inner]) - m);
          sum += ex[k];
        }
        const C log_sum = log ? std::log(sum) : C(0), inv_sum = C(1) / sum;
        for (int64_t k = 0; k < len; ++k) {
          C v = log ? (Load(in[base + k * inner]) - m) - log_sum : ex[k] * inv_sum;
          out[base + k * inner] = Store<T>(v);
        }
      }
    });
    return Status::Ok();
  });
}

}  // namespace a8::cpu

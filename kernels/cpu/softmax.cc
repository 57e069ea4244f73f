#include "kernels/cpu/softmax.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/common/unary_math.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

// outer x len x inner view of `dims` around `axis`.
void SplitAround(const Dims& dims, int64_t axis, int64_t* outer, int64_t* len, int64_t* inner) {
  *outer = *inner = 1;
  for (int64_t i = 0; i < axis; ++i) *outer *= dims[i];
  *len = dims[axis];
  for (size_t i = axis + 1; i < dims.size(); ++i) *inner *= dims[i];
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

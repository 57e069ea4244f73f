#include "kernels/cpu/gemm.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/broadcast.h"

namespace a8::cpu {
namespace {

using internal::BlasGemm;
using internal::ComputeOutput;
using internal::ComputeView;

// The linear batch index into operand dims `in` (batch dims only) for output batch `index`.
int64_t BatchSource(const Dims& out, const Dims& in, int64_t index) {
  int64_t src = 0, stride = 1;
  size_t pad = out.size() - in.size();
  for (size_t i = out.size(); i-- > 0;) {
    int64_t idx = index % out[i];
    index /= out[i];
    if (i < pad) continue;
    int64_t d = in[i - pad];
    if (d != 1) src += idx * stride;
    stride *= d;
  }
  return src;
}

struct MatMulShape {
  int64_t m, n, k;
  Dims a_batch, b_batch, out_batch;
  Dims out_dims;
};

StatusOr<MatMulShape> ResolveMatMul(const Dims& a_dims, const Dims& b_dims) {
  if (a_dims.empty() || b_dims.empty()) {
    return InvalidInput("MatMul: operands must have rank >= 1, got [{}] and [{}]",
                        fmt::join(a_dims, ","), fmt::join(b_dims, ","));
  }
  Dims a = a_dims, b = b_dims;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulShape s;
  s.m = a[a.size() - 2];
  s.k = a.back();
  s.n = b.back();
  if (b[b.size() - 2] != s.k) {
    return InvalidInput("MatMul: inner dims differ: [{}] @ [{}]", fmt::join(a_dims, ","),
                        fmt::join(b_dims, ","));
  }
  s.a_batch.assign(a.begin(), a.end() - 2);
  s.b_batch.assign(b.begin(), b.end() - 2);
  A8_ASSIGN_OR_RETURN(s.out_batch, BroadcastDims({s.a_batch, s.b_batch}, "MatMul"));
  s.out_dims = s.out_batch;
  if (a_dims.size() > 1) s.out_dims.push_back(s.m);
  if (b_dims.size() > 1) s.out_dims.push_back(s.n);
  return s;
}

template <typename C>
void BatchedGemm(const MatMulShape& s, const C* a, const C* b, C* y) {
  const int64_t batches = NumElements(s.out_batch);
  if (s.k == 0) {
    std::fill(y, y + batches * s.m * s.n, C(0));
    return;
  }
  if (s.b_batch.empty() || NumElements(s.b_batch) == 1) {
    if (NumElements(s.a_batch) == batches) {
      // B is shared: fold the batch into M, one big GEMM.
      BlasGemm(false, false, batches * s.m, s.n, s.k, C(1), a, s.k, b, s.n, C(0), y, s.n);
      return;
    }
  }
  for (int64_t i = 0; i < batches; ++i) {
    const C* pa = a + BatchSource(s.out_batch, s.a_batch, i) * s.m * s.k;
    const C* pb = b + BatchSource(s.out_batch, s.b_batch, i) * s.k * s.n;
    BlasGemm(false, false, s.m, s.n, s.k, C(1), pa, s.k, pb, s.n, C(0), y + i * s.m * s.n, s.n);
  }
}

template <typename T>
void IntMatMul(const MatMulShape& s, const T* a, const T* b, T* y) {
  using U = std::make_unsigned_t<T>;
  const int64_t batches = NumElements(s.out_batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    const T* pa = a + BatchSource(s.out_batch, s.a_batch, bi) * s.m * s.k;
    const T* pb = b + BatchSource(s.out_batch, s.b_batch, bi) * s.k * s.n;
    T* py = y + bi * s.m * s.n;
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        U acc = 0;
        for (int64_t l = 0; l < s.k; ++l) {
          acc += static_cast<U>(pa[i * s.k + l]) * static_cast<U>(pb[l * s.n + j]);
        }
        py[i * s.n + j] = static_cast<T>(acc);
      }
    }
  }
}

}  // namespace

namespace internal {

__attribute__((target_clones("avx2", "default"))) void SmallGemmF32(
    int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
    int64_t ldb, float beta, float* c, int64_t ldc) {
  SmallGemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace internal

StatusOr<Dims> MatMulOutputDims(const Dims& a_dims, const Dims& b_dims) {
  A8_ASSIGN_OR_RETURN(MatMulShape s, ResolveMatMul(a_dims, b_dims));
  return s.out_dims;
}

Status MatMul(DType dtype, const Dims& a_dims, const void* a, const Dims& b_dims, const void* b,
              void* y) {
  A8_ASSIGN_OR_RETURN(MatMulShape s, ResolveMatMul(a_dims, b_dims));
  if (dtype == DType::kI32) {
    IntMatMul(s, static_cast<const int32_t*>(a), static_cast<const int32_t*>(b),
              static_cast<int32_t*>(y));
    return Status::Ok();
  }
  if (dtype == DType::kI64) {
    IntMatMul(s, static_cast<const int64_t*>(a), static_cast<const int64_t*>(b),
              static_cast<int64_t*>(y));
    return Status::Ok();
  }
  return Dispatch<TypeSet::kFloat>(dtype, "MatMul", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    ComputeView<T> av(a, NumElements(a_dims));
    ComputeView<T> bv(b, NumElements(b_dims));
    ComputeOutput<T> out(y, NumElements(s.out_dims));
    if (NumElements(s.out_dims) > 0) BatchedGemm(s, av.data(), bv.data(), out.data());
    out.Flush();
    return Status::Ok();
  });
}

Status Gemm(const GemmParams& p, const void* a, const void* b, const void* c, void* y) {
  if (p.m < 0 || p.n < 0 || p.k < 0) {
    return InvalidInput("Gemm: negative size m={} n={} k={}", p.m, p.n, p.k);
  }
  int64_t c_rows = 1, c_cols = 1;
  if (c != nullptr) {
    if (p.c_dims.size() > 2) {
      return InvalidInput("Gemm: C has rank {} > 2", p.c_dims.size());
    }
    if (p.c_dims.size() >= 1) c_cols = p.c_dims.back();
    if (p.c_dims.size() == 2) c_rows = p.c_dims[0];
    if ((c_rows != 1 && c_rows != p.m) || (c_cols != 1 && c_cols != p.n)) {
      return InvalidInput("Gemm: C dims [{}] do not broadcast to [{},{}]", fmt::join(p.c_dims, ","),
                          p.m, p.n);
    }
  }
  return Dispatch<TypeSet::kFloat>(p.dtype, "Gemm", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using C = Compute<T>;
    ComputeView<T> av(a, p.m * p.k);
    ComputeView<T> bv(b, p.k * p.n);
    ComputeOutput<T> out(y, p.m * p.n);
    C* py = out.data();
    C beta = 0;
    if (c != nullptr && p.beta != 0.0f) {
      ComputeView<T> cv(c, c_rows * c_cols);
      const C* pc = cv.data();
      for (int64_t i = 0; i < p.m; ++i) {
        const C* crow = pc + (c_rows == 1 ? 0 : i) * c_cols;
        C* yrow = py + i * p.n;
        if (c_cols == 1) {
          std::fill(yrow, yrow + p.n, crow[0]);
        } else {
          std::copy(crow, crow + p.n, yrow);
        }
      }
      beta = static_cast<C>(p.beta);
    } else {
      std::fill(py, py + p.m * p.n, C(0));  // BLAS need not read C when beta is 0; be sure
    }
    if (p.m > 0 && p.n > 0) {
      if (p.k == 0) {
        for (int64_t i = 0; i < p.m * p.n; ++i) py[i] = beta == C(0) ? C(0) : beta * py[i];
      } else {
        BlasGemm(p.trans_a, p.trans_b, p.m, p.n, p.k, static_cast<C>(p.alpha), av.data(),
                 p.trans_a ? p.m : p.k, bv.data(), p.trans_b ? p.k : p.n, beta, py, p.n);
      }
    }
    out.Flush();
    return Status::Ok();
  });
}

}  // namespace a8::cpu

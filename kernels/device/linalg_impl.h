// The Det kernels (declared in linalg.h).
#include "kernels/device/launch.h"
#include "kernels/device/linalg.h"

namespace a8::A8_DEV_NS::linalg {
namespace {

// The determinant of the n x n row-major matrix `a` (overwritten by its LU factors), by Gaussian
// elimination with partial pivoting; 0 as soon as a column has no non-zero pivot.
A8_HD double LuDeterminant(double* a, int64_t n) {
  double det = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    double best = a[k * n + k] < 0 ? -a[k * n + k] : a[k * n + k];
    for (int64_t r = k + 1; r < n; ++r) {
      const double v = a[r * n + k] < 0 ? -a[r * n + k] : a[r * n + k];
      if (v > best) {
        best = v;
        pivot = r;
      }
    }
    if (best == 0) return 0;
    if (pivot != k) {
      for (int64_t c = k; c < n; ++c) {
        const double t = a[k * n + c];
        a[k * n + c] = a[pivot * n + c];
        a[pivot * n + c] = t;
      }
      det = -det;
    }
    const double d = a[k * n + k];
    det *= d;
    for (int64_t r = k + 1; r < n; ++r) {
      const double f = a[r * n + k] / d;
      for (int64_t c = k + 1; c < n; ++c) a[r * n + c] -= f * a[k * n + c];
    }
  }
  return det;
}

template <typename T>
struct DetFn {
  DetParams p;
  A8_HD void operator()(int64_t b) const {
    const int64_t nn = p.n * p.n;
    const T* x = static_cast<const T*>(p.x) + b * nn;
    double* a = p.work + b * nn;
    for (int64_t i = 0; i < nn; ++i) a[i] = ToDouble(x[i]);
    static_cast<T*>(p.out)[b] = FromDouble<T>(LuDeterminant(a, p.n));
  }
};

// dX[b, i, j] = dy[b] * (-1)^(i+j) * det(X[b] without row i and column j). The minor is built
// in the matrix's (n-1)^2 slice of the scratch.
template <typename T>
struct DetGradFn {
  DetParams p;
  A8_HD void operator()(int64_t b) const {
    const int64_t n = p.n, nn = n * n, m = n - 1;
    const T* x = static_cast<const T*>(p.x) + b * nn;
    T* dx = static_cast<T*>(p.out) + b * nn;
    const double g = ToDouble(static_cast<const T*>(p.dy)[b]);
    if (n == 1) {
      dx[0] = FromDouble<T>(g);  // d x / d x
      return;
    }
    double* minor = p.work + b * nn;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t k = 0;
        for (int64_t r = 0; r < n; ++r) {
          if (r == i) continue;
          for (int64_t c = 0; c < n; ++c) {
            if (c != j) minor[k++] = ToDouble(x[r * n + c]);
          }
        }
        const double cofactor = ((i + j) % 2 == 0 ? 1 : -1) * LuDeterminant(minor, m);
        dx[i * n + j] = FromDouble<T>(g * cofactor);
      }
    }
  }
};

// Checks the sizes and points `q->work` at scratch for a double copy of every matrix.
DevStatus SetUp(DevCtx& ctx, const DetParams& p, const char* op, DetParams* q) {
  if (p.n < 1 || p.batch < 0) return DevError(op);
  *q = p;
  if (p.batch == 0) return DevOk();
  void* mem = nullptr;
  A8_DEV_RETURN_IF_ERROR(Scratch(ctx, sizeof(double) * p.batch * p.n * p.n, &mem));
  q->work = static_cast<double*>(mem);
  return DevOk();
}

}  // namespace

DevStatus Det(DevCtx& ctx, const DetParams& p) {
  DetParams q;
  A8_DEV_RETURN_IF_ERROR(SetUp(ctx, p, "Det: the matrices must be n x n with n >= 1", &q));
  return DispatchFloat(p.dtype,
                       [&](auto t) { return ForEach(ctx, q.batch, DetFn<decltype(t)>{q}); });
}

DevStatus DetGrad(DevCtx& ctx, const DetParams& p) {
  DetParams q;
  A8_DEV_RETURN_IF_ERROR(SetUp(ctx, p, "a8.DetGrad: the matrices must be n x n with n >= 1", &q));
  return DispatchFloat(p.dtype,
                       [&](auto t) { return ForEach(ctx, q.batch, DetGradFn<decltype(t)>{q}); });
}

}  // namespace a8::A8_DEV_NS::linalg

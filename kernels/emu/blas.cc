// The host emulation's GEMM/convolution engine (blas.h): the descriptor semantics computed on
// the CPU. A plain GEMM (no epilogue) converts each batch's A and B to the compute type and
// calls the CPU reference GEMM (kernels/cpu/blas.h: float accumulation for f32/f16/bf16, double
// for f64, alpha and beta applied by the GEMM, one rounding to D); epilogues and convolutions
// take the device fallbacks the CUDA engine uses where cuBLASLt/cuDNN cannot
// (gemm_conv.h: GemmViaAcc, ConvByGemm), so CI runs those kernels too. With DevCtx::tf32 (the
// kernel's Kernel.tf32_inputs) f32 A and B are rounded to TF32 first (kernels/common/tf32.h), as
// the CPU backend rounds the kernel's operands: TF32 tensor cores read them so.
#include "kernels/cpu/blas.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/common/tf32.h"
#include "kernels/device/gemm_conv.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS {
namespace {

// rows x cols elements of T, rows `ld` apart, as a dense compute-type matrix; f32 rounded to
// TF32 when `tf32`.
template <typename T, typename C>
void LoadDense(const T* src, int64_t rows, int64_t cols, int64_t ld, bool tf32,
               std::vector<C>* out) {
  out->resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) (*out)[i * cols + j] = static_cast<C>(Ld(src, i * ld + j));
  }
  if constexpr (std::is_same_v<T, float>) {
    if (tf32) {
      for (C& v : *out) v = RoundToTf32(v);
    }
  }
}

// D = alpha op(A) op(B) + beta C for every batch; T is A/B's type, U is D's.
template <typename T, typename U>
DevStatus PlainGemm(const GemmDesc& d, bool tf32) {
  using C = Acc<T>;
  const T* a = static_cast<const T*>(d.a);
  const T* b = static_cast<const T*>(d.b);
  U* c = static_cast<U*>(d.c);
  const int64_t a_rows = d.trans_a ? d.k : d.m, a_cols = d.trans_a ? d.m : d.k;
  const int64_t b_rows = d.trans_b ? d.n : d.k, b_cols = d.trans_b ? d.k : d.n;
  std::vector<C> av, bv, acc(static_cast<size_t>(d.m * d.n));
  for (int64_t bi = 0; bi < d.batch; ++bi) {
    U* cb = c + bi * d.stride_c;
    for (int64_t i = 0; i < d.m; ++i) {
      for (int64_t j = 0; j < d.n; ++j)
        acc[i * d.n + j] = d.beta != 0.0 ? static_cast<C>(Ld(cb, i * d.ldc + j)) : C(0);
    }
    const C alpha = static_cast<C>(d.alpha), beta = static_cast<C>(d.beta);
    if (d.k == 0) {
      for (C& v : acc) v = beta == C(0) ? C(0) : beta * v;
    } else {
      LoadDense(a + bi * d.stride_a, a_rows, a_cols, d.lda, tf32, &av);
      LoadDense(b + bi * d.stride_b, b_rows, b_cols, d.ldb, tf32, &bv);
      cpu::internal::BlasGemm(d.trans_a, d.trans_b, d.m, d.n, d.k, alpha, av.data(), a_cols,
                              bv.data(), b_cols, beta, acc.data(), d.n);
    }
    for (int64_t i = 0; i < d.m; ++i) {
      for (int64_t j = 0; j < d.n; ++j)
        St(cb, i * d.ldc + j, static_cast<Acc<U>>(acc[i * d.n + j]));
    }
  }
  return DevOk();
}

class EmuBlasEngine : public BlasEngine {
 public:
  DevStatus Gemm(DevCtx& ctx, const GemmDesc& d) override {
    A8_DEV_RETURN_IF_ERROR(CheckGemmDesc(d));
    if (d.epilogue != GemmEpilogue::kNone || d.batch * d.m * d.n == 0)
      return GemmViaAcc(ctx, *this, d);
    return DispatchFloat(d.a_type, [&](auto tag) -> DevStatus {
      using T = decltype(tag);
      if (d.c_type == d.a_type) return PlainGemm<T, T>(d, ctx.tf32);
      return PlainGemm<T, float>(d, ctx.tf32);  // CheckGemmDesc: the only other output is f32
    });
  }

  DevStatus Conv(DevCtx& ctx, const ConvDesc& d) override { return ConvByGemm(ctx, *this, d); }
};

}  // namespace

DevStatus MakeBlasEngine(void*, std::unique_ptr<BlasEngine>* out) {
  *out = std::make_unique<EmuBlasEngine>();
  return DevOk();
}

}  // namespace a8::A8_DEV_NS

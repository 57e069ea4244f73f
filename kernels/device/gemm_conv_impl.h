// Device kernels of gemm_conv.h (integer products, broadcast fills, the GEMM-with-epilogue
// fallback) and the BlasEngine buffer management of blas.h. Convolution by im2col is in
// gemm_conv_im2col_impl.h.
#pragma once

#include <type_traits>

#include "kernels/common/fused_elementwise.h"
#include "kernels/device/gemm_conv.h"
#include "kernels/device/launch.h"

namespace a8::A8_DEV_NS {

// ---- BlasEngine buffers (blas.h)

BlasEngine::~BlasEngine() {
  for (void* p : buffers_) {
    if (p != nullptr) Free(p);
  }
  for (int i = 0; i < num_retired_; ++i) Free(retired_[i]);
}

DevStatus BlasEngine::Buffer(DevCtx& ctx, Slot slot, size_t bytes, void** out) {
  if (bytes > sizes_[slot]) {
    if (ctx.capturing) {
      return DevError(
          "a GEMM or convolution needs more engine memory during CUDA graph capture "
          "than the eager first step sized");
    }
    if (buffers_[slot] != nullptr) {
      if (num_retired_ == kMaxRetired) return DevError("BLAS engine: too many buffer regrowths");
      retired_[num_retired_++] = buffers_[slot];
      buffers_[slot] = nullptr;
      sizes_[slot] = 0;
    }
    // A quarter more than asked, so that slowly growing requests reallocate rarely.
    const size_t want = bytes + bytes / 4;
    void* p = nullptr;
    A8_DEV_RETURN_IF_ERROR(Malloc(&p, want));
    buffers_[slot] = p;
    sizes_[slot] = want;
  }
  *out = buffers_[slot];
  return DevOk();
}

namespace gemm_conv {

// ---- integer products (wrapping, as the CPU's IntMatMul)

template <typename T>
struct IntMatMulFn {
  IntMatMulParams p;
  const T* a;
  const T* b;
  T* y;
  A8_HD void operator()(int64_t idx) const {
    using U = std::make_unsigned_t<T>;
    const int64_t j = idx % p.n, i = (idx / p.n) % p.m;
    int64_t bi = idx / (p.n * p.m), ao = 0, bo = 0;
    for (int d = p.batch_rank - 1; d >= 0; --d) {
      const int64_t v = bi % p.batch_dims[d];
      bi /= p.batch_dims[d];
      ao += v * p.a_batch_strides[d];
      bo += v * p.b_batch_strides[d];
    }
    U acc = 0;
    for (int64_t l = 0; l < p.k; ++l)
      acc += static_cast<U>(a[ao + i * p.k + l]) * static_cast<U>(b[bo + l * p.n + j]);
    y[idx] = static_cast<T>(acc);
  }
};

template <typename T>
struct IntGemmFn {
  IntGemmParams p;
  T alpha, beta;
  bool scale_alpha, add_c, scale_beta;
  const T* a;
  const T* b;
  const T* c;
  T* y;
  A8_HD void operator()(int64_t idx) const {
    using U = std::make_unsigned_t<T>;
    const int64_t i = idx / p.n, j = idx % p.n;
    U acc = 0;
    for (int64_t l = 0; l < p.k; ++l) {
      const T av = p.trans_a ? a[l * p.m + i] : a[i * p.k + l];
      const T bv = p.trans_b ? b[j * p.k + l] : b[l * p.n + j];
      acc += static_cast<U>(av) * static_cast<U>(bv);
    }
    if (scale_alpha) acc *= static_cast<U>(alpha);
    if (add_c) {
      U cv = static_cast<U>(c[(p.c_rows == 1 ? 0 : i) * p.c_cols + (p.c_cols == 1 ? 0 : j)]);
      if (scale_beta) cv *= static_cast<U>(beta);
      acc += cv;
    }
    y[idx] = static_cast<T>(acc);
  }
};

// f32 -> integer as ONNX Cast does on the CPU (kernels/cpu/cast_elem.h): truncation, NaN and
// out-of-range values give the type's minimum.
template <typename T>
T TruncFloat(float f) {
  const double x = f;
  if constexpr (sizeof(T) == 8) {
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return INT64_MIN;
    return static_cast<T>(x);
  } else {
    if (!(x > -2147483649.0 && x < 2147483648.0)) return INT32_MIN;
    return static_cast<T>(x);
  }
}

// ---- broadcast fills

template <typename T>
struct BroadcastMatrixFn {
  int64_t n, c_rows, c_cols;
  const T* c;
  T* y;
  A8_HD void operator()(int64_t idx) const {
    const int64_t i = idx / n, j = idx % n;
    y[idx] = c[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)];
  }
};

template <typename T>
struct ChannelBiasFn {
  int64_t channels, spatial;
  const T* bias;
  T* y;
  A8_HD void operator()(int64_t idx) const { y[idx] = bias[(idx / spatial) % channels]; }
};

// ---- the GEMM-with-epilogue fallback: acc [batch, m, n] (compute type A), then epilogue

template <typename T, typename A>
struct LoadAccFn {
  int64_t m, n, ldc, stride_c;
  A beta;
  const T* c;
  A* acc;
  A8_HD void operator()(int64_t idx) const {
    const int64_t j = idx % n, i = (idx / n) % m, b = idx / (m * n);
    acc[idx] = beta * static_cast<A>(Ld(c, b * stride_c + i * ldc + j));
  }
};

template <typename T, typename A>
struct EpilogueFn {
  int64_t m, n, ldc, stride_c, ldaux;
  int32_t epilogue;  // FusedEpilogue, or -1: none
  bool tanh_form;
  bool keep;  // write the epilogue value back into acc (bias gradient)
  const T* bias;
  const T* aux;
  T* pre;
  T* d;
  A* acc;
  A8_HD void operator()(int64_t idx) const {
    const int64_t j = idx % n, i = (idx / n) % m, b = idx / (m * n);
    const A x = acc[idx];
    A v = x;
    const int64_t at = b * stride_c + i * ldc + j;
    if (epilogue >= 0) {
      const A bv = bias != nullptr ? static_cast<A>(Ld(bias, j)) : A(0);
      const A xv = aux != nullptr ? static_cast<A>(Ld(aux, i * ldaux + j)) : A(0);
      A pre_v;
      v = ApplyEpilogue<A>(epilogue, tanh_form, x, bv, xv, &pre_v);
      if (pre != nullptr) St(pre, at, static_cast<Acc<T>>(pre_v));
    }
    if (keep) acc[idx] = v;
    St(d, at, static_cast<Acc<T>>(v));
  }
};

// One thread per column: rows in order, so the sum is the same whatever the launch shape.
template <typename T, typename A>
struct ColumnSumFn {
  int64_t rows, n;
  const A* acc;
  T* out;
  A8_HD void operator()(int64_t j) const {
    A s = 0;
    for (int64_t i = 0; i < rows; ++i) s += acc[i * n + j];
    St(out, j, static_cast<Acc<T>>(s));
  }
};

inline bool IsFloatType(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

}  // namespace gemm_conv

DevStatus IntMatMul(DevCtx& ctx, const IntMatMulParams& p) {
  int64_t count = p.m * p.n;
  for (int d = 0; d < p.batch_rank; ++d) count *= p.batch_dims[d];
  auto run = [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    return ForEach(ctx, count,
                   gemm_conv::IntMatMulFn<T>{p, static_cast<const T*>(p.a),
                                             static_cast<const T*>(p.b), static_cast<T*>(p.y)});
  };
  if (p.dtype == DType::kI64) return run(int64_t{});
  if (p.dtype == DType::kI32) return run(int32_t{});
  return DevError("IntMatMul: not an i32/i64 dtype");
}

DevStatus IntGemm(DevCtx& ctx, const IntGemmParams& p) {
  auto run = [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    gemm_conv::IntGemmFn<T> f{p,
                              gemm_conv::TruncFloat<T>(p.alpha),
                              gemm_conv::TruncFloat<T>(p.beta),
                              p.alpha != 1.0f,
                              p.c != nullptr && p.beta != 0.0f,
                              p.beta != 1.0f,
                              static_cast<const T*>(p.a),
                              static_cast<const T*>(p.b),
                              static_cast<const T*>(p.c),
                              static_cast<T*>(p.y)};
    return ForEach(ctx, p.m * p.n, f);
  };
  if (p.dtype == DType::kI64) return run(int64_t{});
  if (p.dtype == DType::kI32) return run(int32_t{});
  return DevError("IntGemm: not an i32/i64 dtype");
}

DevStatus BroadcastMatrix(DevCtx& ctx, DType dtype, int64_t m, int64_t n, const void* c,
                          int64_t c_rows, int64_t c_cols, void* y) {
  return DispatchAll(dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    return ForEach(ctx, m * n,
                   gemm_conv::BroadcastMatrixFn<T>{n, c_rows, c_cols, static_cast<const T*>(c),
                                                   static_cast<T*>(y)});
  });
}

DevStatus FillChannelBias(DevCtx& ctx, DType dtype, int64_t batch, int64_t channels,
                          int64_t spatial, const void* bias, void* y) {
  return DispatchFloat(dtype, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    return ForEach(ctx, batch * channels * spatial,
                   gemm_conv::ChannelBiasFn<T>{channels, spatial, static_cast<const T*>(bias),
                                               static_cast<T*>(y)});
  });
}

DevStatus CheckGemmDesc(const GemmDesc& d) {
  using gemm_conv::IsFloatType;
  if (d.m < 0 || d.n < 0 || d.k < 0 || d.batch < 0) return DevError("GEMM: negative size");
  const int64_t a_cols = d.trans_a ? d.m : d.k, b_cols = d.trans_b ? d.k : d.n;
  if (d.lda < a_cols || d.ldb < b_cols || d.ldc < d.n)
    return DevError("GEMM: a leading dimension is smaller than its matrix's rows");
  if (!IsFloatType(d.a_type) || d.b_type != d.a_type)
    return DevError("GEMM: A and B must have one float dtype");
  const bool wide_out = d.c_type == DType::kF32 && d.a_type != DType::kF64;
  if (d.c_type != d.a_type && !wide_out) return DevError("GEMM: unsupported output dtype");
  const bool has_bias = d.epilogue == GemmEpilogue::kBias ||
                        d.epilogue == GemmEpilogue::kBiasRelu ||
                        d.epilogue == GemmEpilogue::kBiasGelu;
  const bool backward = d.epilogue == GemmEpilogue::kDRelu || d.epilogue == GemmEpilogue::kDGelu;
  if (has_bias != (d.bias != nullptr) || backward != (d.aux != nullptr))
    return DevError("GEMM: the epilogue's bias/aux operands do not match it");
  if (backward && (d.batch != 1 || d.ldaux < d.n))
    return DevError("GEMM: a backward epilogue needs batch 1 and ldaux >= n");
  if (d.bias_grad != nullptr && !backward)
    return DevError("GEMM: a bias gradient needs a backward epilogue");
  if (d.pre != nullptr && (backward || d.epilogue == GemmEpilogue::kNone))
    return DevError("GEMM: a pre-activation output needs a forward epilogue");
  return DevOk();
}

DevStatus GemmViaAcc(DevCtx& ctx, BlasEngine& engine, const GemmDesc& d) {
  A8_DEV_RETURN_IF_ERROR(CheckGemmDesc(d));
  const int64_t count = d.batch * d.m * d.n;
  const bool wide = d.a_type == DType::kF64;
  const size_t acc_size = wide ? sizeof(double) : sizeof(float);
  if (count == 0) {
    // No rows: the bias gradient is an empty sum.
    if (d.bias_grad == nullptr || d.n == 0) return DevOk();
    return DispatchFloat(d.c_type, [&](auto tag) -> DevStatus {
      using T = decltype(tag);
      return ForEach(
          ctx, d.n,
          gemm_conv::ColumnSumFn<T, Acc<T>>{0, d.n, nullptr, static_cast<T*>(d.bias_grad)});
    });
  }
  void* acc = nullptr;
  A8_DEV_RETURN_IF_ERROR(
      engine.Buffer(ctx, BlasEngine::kGemmAcc, static_cast<size_t>(count) * acc_size, &acc));
  return DispatchFloat(d.c_type, [&](auto tag) -> DevStatus {
    using T = decltype(tag);
    using A = Acc<T>;
    A* accp = static_cast<A*>(acc);
    if (d.beta != 0.0) {
      A8_DEV_RETURN_IF_ERROR(
          ForEach(ctx, count,
                  gemm_conv::LoadAccFn<T, A>{d.m, d.n, d.ldc, d.stride_c, static_cast<A>(d.beta),
                                             static_cast<const T*>(d.c), accp}));
    } else if (d.k == 0) {
      A8_DEV_RETURN_IF_ERROR(Fill(acc, 0, static_cast<size_t>(count) * acc_size, ctx.stream));
    }
    if (d.k > 0) {
      GemmDesc plain = d;
      plain.c_type = wide ? DType::kF64 : DType::kF32;
      plain.c = acc;
      plain.ldc = d.n;
      plain.stride_c = d.m * d.n;
      plain.beta = d.beta != 0.0 ? 1.0 : 0.0;  // acc already holds beta C
      plain.epilogue = GemmEpilogue::kNone;
      plain.bias = plain.aux = nullptr;
      plain.pre = plain.bias_grad = nullptr;
      A8_DEV_RETURN_IF_ERROR(engine.Gemm(ctx, plain));
    }
    gemm_conv::EpilogueFn<T, A> f{d.m,
                                  d.n,
                                  d.ldc,
                                  d.stride_c,
                                  d.ldaux,
                                  FusedEpilogueOf(d.epilogue),
                                  d.gelu_tanh,
                                  d.bias_grad != nullptr,
                                  static_cast<const T*>(d.bias),
                                  static_cast<const T*>(d.aux),
                                  static_cast<T*>(d.pre),
                                  static_cast<T*>(d.c),
                                  accp};
    A8_DEV_RETURN_IF_ERROR(ForEach(ctx, count, f));
    if (d.bias_grad == nullptr) return DevOk();
    return ForEach(
        ctx, d.n,
        gemm_conv::ColumnSumFn<T, A>{d.batch * d.m, d.n, accp, static_cast<T*>(d.bias_grad)});
  });
}

}  // namespace a8::A8_DEV_NS

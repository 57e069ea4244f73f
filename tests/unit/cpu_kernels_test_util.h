// Helpers for the CPU kernel tests: random inputs exactly representable in their dtype, a
// float64 view of any buffer, correctly rounded float64 -> dtype references, and comparisons
// with per-dtype tolerances.
//
// Tolerances (relative, on top of an absolute floor scaled the same way): f32 1e-5, f16 1e-3,
// bf16 8e-3, f64 1e-12; tests of long accumulations scale them (GEMM and Conv compare against
// the sum of |terms| rather than the result). f16/bf16 references are rounded from float64 by
// half_reference.h (f16) or by an independent round-to-nearest-even (bf16).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/common/kernel_types.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/low_precision_gemm.h"
#include "tests/unit/half_reference.h"

namespace a8::cpu::testing {

// The dtype in which the fast GEMM reaches oneDNN's own kernel, which packs the B it is given:
// bf16 (the dtype AMX reads B packed in) where oneDNN multiplies bf16 itself (RouteOf), else f32
// (a converted copy of a bf16 B is no stable memory to keep packed). The packed-weight tests
// multiply in it.
inline DType OneDnnPackingDtype() {
  return internal::RouteOf(DType::kBF16) == internal::GemmRoute::kOneDnn ? DType::kBF16
                                                                         : DType::kF32;
}

inline double ToleranceFor(DType t) {
  switch (t) {
    case DType::kF32:
      return 1e-5;
    case DType::kF16:
      return 1e-3;
    case DType::kBF16:
      return 8e-3;
    case DType::kF64:
      return 1e-12;
    default:
      return 0.0;
  }
}

// float64 -> bf16, round to nearest even, independent of float16.h (normal range only).
inline uint16_t DoubleToBFloat16Bits(double d) {
  if (std::isnan(d)) return 0x7fc0;
  if (std::isinf(d) || d == 0.0) {
    float f = static_cast<float>(d);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>(u >> 16);
  }
  int e;
  double m = std::frexp(d, &e);  // |m| in [0.5, 1)
  double r = std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);
  float f = static_cast<float>(r);  // exact, or Inf on overflow
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

inline uint16_t DoubleToHalfBits(double d) { return a8::half_ref::ReferenceDoubleToHalfBits(d); }

// A buffer of `dtype` with its values as doubles.
struct Buffer {
  DType dtype = DType::kF32;
  std::vector<unsigned char> bytes;
  Dims dims;
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  int64_t size() const { return static_cast<int64_t>(bytes.size() / ElemSize(dtype)); }
};

// Writes `v` into element i of b, rounded to nearest even (integers: truncated). The storage
// type of each dtype is the kernels' own (Dispatch); every dtype is in TypeSet::kAll, so the
// status is always ok.
inline void SetValue(Buffer& b, int64_t i, double v) {
  unsigned char* p = b.bytes.data() + i * ElemSize(b.dtype);
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  (void)Dispatch<TypeSet::kAll>(b.dtype, "SetValue", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    if constexpr (std::is_same_v<T, Half>) {
      put(DoubleToHalfBits(v));
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      put(DoubleToBFloat16Bits(v));
    } else if constexpr (std::is_same_v<T, bool>) {
      put(static_cast<uint8_t>(v != 0.0));
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      // A negative value as its two's complement (exact, unlike v + 2^64).
      put(v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v));
    } else {
      put(static_cast<T>(v));
    }
    return Status::Ok();
  });
}

// Element i of b as a double (bool: any nonzero byte is 1).
inline double GetValue(const Buffer& b, int64_t i) {
  const unsigned char* p = b.bytes.data() + i * ElemSize(b.dtype);
  double value = 0.0;
  (void)Dispatch<TypeSet::kAll>(b.dtype, "GetValue", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    using Stored = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
    Stored x;
    std::memcpy(&x, p, sizeof(x));
    if constexpr (std::is_same_v<T, Half>) {
      value = HalfBitsToFloat(x.bits);
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      value = BFloat16BitsToFloat(x.bits);
    } else if constexpr (std::is_same_v<T, bool>) {
      value = x != 0;
    } else {
      value = static_cast<double>(x);
    }
    return Status::Ok();
  });
  return value;
}

inline Buffer MakeBuffer(DType dtype, const Dims& dims) {
  Buffer b;
  b.dtype = dtype;
  b.dims = dims;
  b.bytes.assign(static_cast<size_t>(NumElements(dims)) * ElemSize(dtype), 0);
  return b;
}

inline Buffer FromValues(DType dtype, const Dims& dims, const std::vector<double>& values) {
  Buffer b = MakeBuffer(dtype, dims);
  for (int64_t i = 0; i < b.size(); ++i) SetValue(b, i, values[i]);
  return b;
}

// Random values uniform in [lo, hi) (integers: whole numbers), stored in `dtype`.
inline Buffer RandomBuffer(DType dtype, const Dims& dims, std::mt19937_64& rng, double lo = -2.0,
                           double hi = 2.0) {
  Buffer b = MakeBuffer(dtype, dims);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < b.size(); ++i) {
    double v = dist(rng);
    if (dtype == DType::kBool)
      v = v > (lo + hi) / 2;
    else if (!IsFloatDType(dtype))
      v = std::floor(v);
    SetValue(b, i, v);
  }
  return b;
}

// `n` f32 values uniform in [lo, hi): the f32 operands of the fast kernels (scales, biases,
// statistics) beside an input of another dtype.
inline std::vector<float> RandomF32(int64_t n, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = static_cast<float>(dist(rng));
  return v;
}

inline std::vector<double> Values(const Buffer& b) {
  std::vector<double> v(b.size());
  for (int64_t i = 0; i < b.size(); ++i) v[i] = GetValue(b, i);
  return v;
}

// The float64 `v` rounded to `dtype` once, as a double.
inline double RoundTo(DType dtype, double v) {
  Buffer b = MakeBuffer(dtype, {1});
  SetValue(b, 0, v);
  return GetValue(b, 0);
}

// |got - want| <= tol * (|want| + floor) elementwise; `mag` (when given) replaces |want| as the
// scale, for results of long sums whose terms cancel.
inline void ExpectClose(const Buffer& got, const std::vector<double>& want, double tol,
                        const std::vector<double>* mag = nullptr, double floor = 1e-3) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(want.size()));
  int failures = 0;
  for (int64_t i = 0; i < got.size() && failures < 5; ++i) {
    double g = GetValue(got, i), w = want[i];
    double scale = (mag != nullptr ? (*mag)[i] : std::fabs(w)) + floor;
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    // f16 subnormals are 2^-24 apart: allow one of them.
    double slack = got.dtype == DType::kF16 ? 5.9604644775390625e-08 : 0.0;
    if (!(std::fabs(g - w) <= tol * scale + slack)) {
      ADD_FAILURE() << "element " << i << ": got " << g << " want " << w << " (tol " << tol << " * "
                    << scale << ", dtype " << ElemName(got.dtype) << ")";
      ++failures;
    }
  }
}

// Bit-for-bit: every element equals the float64 reference rounded once to the dtype.
inline void ExpectRoundedExactly(const Buffer& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(want.size()));
  Buffer ref = FromValues(got.dtype, got.dims, want);
  int failures = 0;
  for (int64_t i = 0; i < got.size() && failures < 5; ++i) {
    size_t es = ElemSize(got.dtype);
    if (std::memcmp(got.bytes.data() + i * es, ref.bytes.data() + i * es, es) != 0) {
      if (std::isnan(want[i]) && std::isnan(GetValue(got, i))) continue;
      ADD_FAILURE() << "element " << i << ": got " << GetValue(got, i) << " want "
                    << GetValue(ref, i) << " (from " << want[i] << ", dtype " << ElemName(got.dtype)
                    << ")";
      ++failures;
    }
  }
}

inline constexpr DType kFloatDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};

// The linear index into an input of `in_dims` that numpy broadcasting reads for output element
// `out_index` of `out_dims`.
inline int64_t BroadcastSource(const Dims& out_dims, const Dims& in_dims, int64_t out_index) {
  int64_t src = 0, stride = 1;
  size_t pad = out_dims.size() - in_dims.size();
  for (size_t i = out_dims.size(); i-- > 0;) {
    int64_t idx = out_index % out_dims[i];
    out_index /= out_dims[i];
    if (i < pad) continue;
    int64_t d = in_dims[i - pad];
    if (d != 1) src += idx * stride;
    stride *= d;
  }
  return src;
}

// The linear index into a 3-D image of dims `img` that kernel tap `tap` of the window at grid
// position `at` reads (strides `s`, leading pads `pb`, dilations `d`), or -1 where the tap falls
// in the padding: the direct float64 references of convolution and pooling.
inline int64_t WindowTapSource(const int64_t at[3], const int64_t tap[3], const int64_t s[3],
                               const int64_t pb[3], const int64_t d[3], const int64_t img[3]) {
  int64_t index = 0;
  for (int a = 0; a < 3; ++a) {
    const int64_t pos = at[a] * s[a] - pb[a] + tap[a] * d[a];
    if (pos < 0 || pos >= img[a]) return -1;
    index = index * img[a] + pos;
  }
  return index;
}

// Floats around every rounding boundary of f16 and bf16 (every `f16_step`-th f16 midpoint between
// neighbours, one ulp either side and the neighbour itself; every `bf16_step`-th bf16 tie and its
// neighbours), specials (overflow, subnormals, signed zeros, infinities, NaNs), then `randoms`
// random bit patterns from `seed`: the inputs of the vector conversions' bit-for-bit tests.
inline std::vector<float> ConversionBoundaryInputs(uint32_t f16_step, uint32_t bf16_step,
                                                   uint64_t seed, int randoms) {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x7c00u; h += f16_step) {
    const float a = HalfBitsToFloat(static_cast<uint16_t>(h));
    const float b = HalfBitsToFloat(static_cast<uint16_t>(h + 1));
    const float mid = a + (b - a) / 2;
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f), a}) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  for (uint32_t b = 0; b < 0x7f80u; b += bf16_step) {
    const uint32_t lo = b << 16, tie = lo | 0x8000u;
    for (uint32_t bits : {lo, tie, tie - 1, tie + 1}) {
      v.push_back(BitsToFloat(bits));
      v.push_back(BitsToFloat(bits | 0x80000000u));
    }
  }
  for (float x : {65504.0f, 65519.0f, 65520.0f, 1e30f, INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f,
                  1e-45f, 5.96e-8f, 2.98e-8f, 2.99e-8f}) {
    v.push_back(x);
  }
  std::mt19937_64 rng(seed);
  for (int i = 0; i < randoms; ++i) v.push_back(BitsToFloat(static_cast<uint32_t>(rng())));
  return v;
}

// Whether f16 bits are a NaN.
inline bool IsHalfNaN(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// HalfToFloat widens every f16 bit pattern to the scalar body's float (NaN: a NaN), the patterns
// starting `offset` elements into an array of 65536 + `padding`: the vector loop at that offset,
// and its tail.
inline void ExpectEveryHalfPatternWidensAsScalar(size_t padding, size_t offset) {
  std::vector<Half> h(65536 + padding);
  for (size_t i = 0; i < h.size(); ++i) h[i].bits = static_cast<uint16_t>(i);
  std::vector<float> f(h.size());
  HalfToFloat(h.data() + offset, f.data(), static_cast<int64_t>(h.size() - offset));
  for (size_t i = 0; i + offset < h.size(); ++i) {
    const uint16_t bits = h[i + offset].bits;
    if (IsHalfNaN(bits)) {
      ASSERT_TRUE(std::isnan(f[i])) << "pattern " << bits;
    } else {
      ASSERT_EQ(FloatToBits(f[i]), FloatToBits(HalfBitsToFloat(bits))) << "pattern " << bits;
    }
  }
}

// A 2-D convolution case: x [n, c, h, w], m filters of k x k, the same stride, dilation and pads
// on both axes (`bias`: whether the test passes one); ParamsOf makes its parameters.
// f32 [n, c, spatial] as [n, spatial, c] (NHWC: the CPU backend's channels-last activations),
// or back (`to_nhwc` false).
inline std::vector<float> NchwNhwc(const float* x, int64_t n, int64_t c, int64_t spatial,
                                   bool to_nhwc) {
  std::vector<float> y(static_cast<size_t>(n * c * spatial));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t q = 0; q < spatial; ++q) {
        const int64_t nchw = (b * c + ch) * spatial + q, nhwc = (b * spatial + q) * c + ch;
        y[to_nhwc ? nhwc : nchw] = x[to_nhwc ? nchw : nhwc];
      }
    }
  }
  return y;
}

// A 4-D f32 buffer [N, C, H, W] stored NHWC (dims unchanged), and back.
inline Buffer WithLayout(const Buffer& b, bool to_nhwc) {
  Buffer out = b;
  const std::vector<float> y = NchwNhwc(static_cast<const float*>(b.data()), b.dims[0], b.dims[1],
                                        b.dims[2] * b.dims[3], to_nhwc);
  std::memcpy(out.data(), y.data(), out.bytes.size());
  return out;
}
inline Buffer ToNhwc(const Buffer& b) { return WithLayout(b, true); }
inline Buffer FromNhwc(const Buffer& b) { return WithLayout(b, false); }

struct Conv2dCase {
  int64_t n, c, h, w, m, k, stride, dilation, pad_begin, pad_end;
  bool bias;
};

inline ConvParams ParamsOf(const Conv2dCase& c, DType t) {
  ConvParams p;
  p.dtype = t;
  p.batch = c.n;
  p.in_channels = c.c;
  p.out_channels = c.m;
  p.in_spatial = {c.h, c.w};
  p.kernel = {c.k, c.k};
  p.strides = {c.stride, c.stride};
  p.dilations = {c.dilation, c.dilation};
  p.pads = {c.pad_begin, c.pad_begin, c.pad_end, c.pad_end};
  return p;
}

// The parameters of an a8.FusedMatMul in `t` of an [m, k] A and a [k, n] B (not transposed),
// with `epilogue`.
inline FusedMatMulParams FusedMatMulOf(DType t, int64_t m, int64_t n, int64_t k, int32_t epilogue) {
  FusedMatMulParams p;
  p.dtype = t;
  p.m = m;
  p.n = n;
  p.k = k;
  p.epilogue = epilogue;
  return p;
}

// A pooling case: x's dims [N, C, spatial...] and the window; ParamsOf makes its parameters.
struct PoolCase {
  Dims x, kernel, strides, dilations, pads;
  bool ceil_mode, count_include_pad;
};

inline PoolParams ParamsOf(const PoolCase& c, DType dt) {
  PoolParams p;
  p.dtype = dt;
  p.batch = c.x[0];
  p.channels = c.x[1];
  p.in_spatial.assign(c.x.begin() + 2, c.x.end());
  p.kernel = c.kernel;
  p.strides = c.strides;
  p.dilations = c.dilations;
  p.pads = c.pads;
  p.ceil_mode = c.ceil_mode;
  p.count_include_pad = c.count_include_pad;
  return p;
}

}  // namespace a8::cpu::testing

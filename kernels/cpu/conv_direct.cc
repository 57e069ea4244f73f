// The direct convolution of conv_direct.h: kernels per instruction set and their dispatch.
#include "kernels/cpu/conv_direct.h"

#include <algorithm>
#include <atomic>

#include "kernels/common/unary_math.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu::internal {
namespace {

std::atomic<CpuIsa> g_direct_isa{CpuIsa::kBest};

// One sample's buffer (all input channels) must fit in L2 for the direct path to pay; a chunk
// of samples is sized to stay in L1 (the kernel reloads every B vector for each block of output
// channels): 18 KiB, leaving the weights and the tile most of the rest of a 32 KiB L1 (the
// example CNN's 16-channel 8x8 convolution: 3 samples a chunk, 24 row vectors, 8 whole tiles of
// three; 4 KiB less gave 2 samples and a tile of one vector: 124 against 119 us).
constexpr int64_t kDirectMaxBufferElems = int64_t{1} << 15;
constexpr int64_t kDirectChunkElems = 4608;

// GCC vector types of VW floats that may be unaligned and alias float (a dependent
// vector_size is not honoured in templates, hence one specialisation per width).
template <int VW>
struct FloatVec;
template <>
struct FloatVec<4> {
  typedef float type __attribute__((vector_size(16), aligned(4), may_alias));
};
template <>
struct FloatVec<8> {
  typedef float type __attribute__((vector_size(32), aligned(4), may_alias));
};
template <>
struct FloatVec<16> {
  typedef float type __attribute__((vector_size(64), aligned(4), may_alias));
};

// Where a chunk's output columns go: samples [n, n + count) of Y, rows [m, m + MR) of it.
struct DirectOut {
  float* y;           // Y at sample n, channel m
  const float* bias;  // at m, or null
  int64_t count;
  const float* z;  // the epilogue's addend at Y's offsets (Z at sample n, channel m), or null
  bool relu;
};

// out[i] = epilogue(src[i] + b) for i < n: the bias, then o.z's element at `z_at + i`, then Relu,
// each in f32 as the unfused Conv, Add and Relu round.
[[gnu::always_inline]] inline void DirectEpilogueRow(const DirectOut& o, int64_t z_at,
                                                     const float* src, float b, int64_t n,
                                                     float* out) {
  if (o.z == nullptr && !o.relu) {
    for (int64_t i = 0; i < n; ++i) out[i] = src[i] + b;
    return;
  }
  const float* z = o.z != nullptr ? o.z + z_at : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    float v = src[i] + b;
    if (z != nullptr) v += z[i];
    if (o.relu) v = ReluF{}(v);
    out[i] = v;
  }
}

// Writes tile[MR][nv * VW] (columns [j0, j0 + nv * VW)) to Y: the parts of each buffer row that
// are outputs, plus bias and the epilogue.
template <int VW, int MR>
[[gnu::always_inline]] inline void DirectStore(const DirectConv& d, const DirectOut& o, int64_t j0,
                                               int64_t nv, const float* tile) {
  const int64_t j1 = j0 + nv * VW, plane_out = d.ho * d.wo;
  for (int64_t row = j0 / d.wp; row * d.wp < j1; ++row) {
    const int64_t s = row / d.slot, oh = row % d.slot;
    if (s >= o.count) break;
    if (oh >= d.ho) continue;
    const int64_t c0 = std::max(j0, row * d.wp), c1 = std::min(j1, row * d.wp + d.wo);
    const int64_t at = s * d.y_sample + oh * d.wo + (c0 - row * d.wp);
    for (int r = 0; r < MR; ++r) {
      const float b = o.bias != nullptr ? o.bias[r] : 0.0f;
      DirectEpilogueRow(o, at + r * plane_out, tile + r * nv * VW + (c0 - j0), b, c1 - c0,
                        o.y + at + r * plane_out);
    }
  }
}

// acc[MR][NV] = rows `w` (MR rows, ldw apart, [cg][taps] each) times the shifted views of `pad`:
// vector v covers the VW columns from cols[v]; then sink(r, v, acc[r][v]) for each. Fully
// unrolled over MR and NV so the accumulators stay in registers (the sink takes them from there:
// accumulators bound for a stack array were kept in it by the compiler, one FMA in twelve reading
// and writing memory, 2.2x slower); VW is the vector width of the target the caller is compiled
// for.
template <int VW, int MR, int NV, typename Sink>
[[gnu::always_inline]] inline void DirectTile(const DirectConv& d, const float* w, int64_t ldw,
                                              const float* pad, const int64_t* cols, Sink& sink) {
  using V = typename FloatVec<VW>::type;
  V acc[MR][NV];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  }
  const int64_t* offs = d.offs.data();
  for (int64_t c = 0; c < d.cg; ++c) {
    const float* wc = w + c * d.taps;
    const float* pc = pad + c * d.channel_stride;
    for (int64_t t = 0; t < d.taps; ++t) {
      const float* src = pc + offs[t];
      V b[NV];
      for (int v = 0; v < NV; ++v) b[v] = *reinterpret_cast<const V*>(src + cols[v]);
      for (int r = 0; r < MR; ++r) {
        const float a = wc[r * ldw + t];
        for (int v = 0; v < NV; ++v) acc[r][v] += a * b[v];
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) sink(r, v, acc[r][v]);
  }
}

// Stores accumulator (r, v) to tile[MR][nv * VW] (the contiguous mode's columns, DirectStore).
// (The sinks cast pointers to FloatVec's types, never to a deduced V: a template argument drops
// the typedef's aligned(4), and the store would assume 32-byte alignment.)
template <int VW>
struct TileSink {
  using U = typename FloatVec<VW>::type;
  float* tile;
  int64_t nv;
  template <typename V>
  [[gnu::always_inline]] void operator()(int r, int v, V acc) const {
    *reinterpret_cast<U*>(tile + (r * nv + v) * VW) = acc;
  }
};

// Row mode (d.wo a multiple of VW): accumulator (r, v) is a segment of an output row (output
// channel r of the block, Y offset at[v]), stored with bias and the epilogue: each step in f32 as
// the unfused Conv, Add and Relu round (ReluF's NaN rule included).
template <int VW>
struct RowSink {
  using U = typename FloatVec<VW>::type;
  const DirectOut& o;
  const int64_t* at;
  int64_t plane_out;
  template <typename V>
  [[gnu::always_inline]] void operator()(int r, int v, V acc) const {
    const int64_t to = r * plane_out + at[v];
    U val = acc + (o.bias != nullptr ? o.bias[r] : 0.0f);
    if (o.z != nullptr) val += *reinterpret_cast<const U*>(o.z + to);
    if (o.relu) {
      const U zero = {};
      val = val > zero ? val : (val == val ? zero : val);
    }
    *reinterpret_cast<U*>(o.y + to) = val;
  }
};

// DirectTile with NV = nv (1 to NVMAX).
template <int VW, int MR, int NVMAX, typename Sink>
[[gnu::always_inline]] inline void DirectTiles(const DirectConv& d, const float* w, int64_t ldw,
                                               const float* buf, const int64_t* col, int64_t nv,
                                               Sink& sink) {
  switch (nv) {
    case 1:
      DirectTile<VW, MR, 1>(d, w, ldw, buf, col, sink);
      break;
    case 2:
      if constexpr (NVMAX >= 2) DirectTile<VW, MR, 2>(d, w, ldw, buf, col, sink);
      break;
    case 3:
      if constexpr (NVMAX >= 3) DirectTile<VW, MR, 3>(d, w, ldw, buf, col, sink);
      break;
    default:
      if constexpr (NVMAX >= 4) DirectTile<VW, MR, 4>(d, w, ldw, buf, col, sink);
      break;
  }
}

// Output channels [m0, m0 + MR) of one group over a chunk's columns, NVMAX vectors a tile. Where
// an output row is a whole number of vectors (row mode), the vectors are the rows' segments
// (the gap columns between rows are never computed); otherwise they run over every column.
template <int VW, int MR, int NVMAX>
[[gnu::always_inline]] inline void DirectRows(const DirectConv& d, const float* w, const float* buf,
                                              int64_t cols, const DirectOut& o) {
  const int64_t ldw = d.cg * d.taps;
  alignas(64) float tile[MR * NVMAX * VW];
  static_assert(NVMAX >= 1 && NVMAX <= 4);
  const bool rows = d.wo % VW == 0;
  const int64_t segs = d.wo / VW, per_sample = d.ho * segs;
  const int64_t nvec = rows ? o.count * per_sample : (cols + VW - 1) / VW;
  int64_t col[NVMAX], at[NVMAX];
  for (int64_t q0 = 0; q0 < nvec; q0 += NVMAX) {
    // The last, partial tile: no more vectors than it needs.
    const int64_t nv = std::min<int64_t>(NVMAX, nvec - q0);
    for (int64_t v = 0; v < nv; ++v) {
      const int64_t q = q0 + v;
      if (rows) {
        const int64_t s = q / per_sample, oh = q % per_sample / segs, seg = q % segs;
        col[v] = (s * d.slot + oh) * d.wp + seg * VW;
        at[v] = s * d.y_sample + oh * d.wo + seg * VW;
      } else {
        col[v] = q * VW;
      }
    }
    if (rows) {
      RowSink<VW> sink{o, at, d.ho * d.wo};
      DirectTiles<VW, MR, NVMAX>(d, w, ldw, buf, col, nv, sink);
    } else {
      TileSink<VW> sink{tile, nv};
      DirectTiles<VW, MR, NVMAX>(d, w, ldw, buf, col, nv, sink);
      DirectStore<VW, MR>(d, o, q0 * VW, nv, tile);
    }
  }
}

// Samples [n0, n1), `d.chunk` at a time: fill the buffer, then each group's output channels in
// blocks of MRMAX (the remainder one block of fewer). Reads reach a window's span past the
// last output column (and up to a tile past that): the buffer has (pt + pb + 1) rows of zeros
// beyond the chunk's slots per channel, and a tile's worth after the last channel.
template <int VW, int MRMAX, int NVMAX>
[[gnu::always_inline]] inline void DirectSamples(const DirectConv& d, const float* x,
                                                 const float* w, const float* bias, float* y,
                                                 const DirectEpilogue& e, int64_t n0, int64_t n1) {
  std::vector<float> buf(static_cast<size_t>(d.cg * d.channel_stride + NVMAX * VW), 0.0f);
  const int64_t ldw = d.cg * d.taps;
  static_assert(MRMAX >= 1 && MRMAX <= 6);
  for (int64_t n = n0; n < n1; n += d.chunk) {
    const int64_t count = std::min(d.chunk, n1 - n);
    const int64_t cols = ((count - 1) * d.slot + d.ho - 1) * d.wp + d.wo;
    for (int64_t gi = 0; gi < d.group; ++gi) {
      for (int64_t c = 0; c < d.cg; ++c) {
        for (int64_t s = 0; s < count; ++s) {
          const float* src = x + (n + s) * d.x_sample + (gi * d.cg + c) * d.h * d.w;
          float* dst = buf.data() + c * d.channel_stride + (s * d.slot + d.pt) * d.wp + d.pl;
          for (int64_t i = 0; i < d.h; ++i) {
            std::copy(src + i * d.w, src + (i + 1) * d.w, dst + i * d.wp);
          }
        }
      }
      for (int64_t m0 = 0; m0 < d.mg; m0 += MRMAX) {
        const int64_t mr = std::min<int64_t>(MRMAX, d.mg - m0), m = gi * d.mg + m0;
        const float* wm = w + m * ldw;
        const int64_t y_at = n * d.y_sample + m * d.ho * d.wo;
        const DirectOut o{y + y_at, bias != nullptr ? bias + m : nullptr, count,
                          e.z != nullptr ? e.z + y_at : nullptr, e.relu};
        switch (mr) {
          case 1:
            DirectRows<VW, 1, NVMAX>(d, wm, buf.data(), cols, o);
            break;
          case 2:
            if constexpr (MRMAX >= 2) DirectRows<VW, 2, NVMAX>(d, wm, buf.data(), cols, o);
            break;
          case 3:
            if constexpr (MRMAX >= 3) DirectRows<VW, 3, NVMAX>(d, wm, buf.data(), cols, o);
            break;
          case 4:
            if constexpr (MRMAX >= 4) DirectRows<VW, 4, NVMAX>(d, wm, buf.data(), cols, o);
            break;
          case 5:
            if constexpr (MRMAX >= 5) DirectRows<VW, 5, NVMAX>(d, wm, buf.data(), cols, o);
            break;
          default:
            if constexpr (MRMAX >= 6) DirectRows<VW, 6, NVMAX>(d, wm, buf.data(), cols, o);
            break;
        }
      }
    }
  }
}

// One instantiation per instruction set, picked at run time: AVX-512 (32 vector registers:
// 6 rows x 4 vectors of accumulators; its 8-wide form for rows of 8, 24, ... columns, which run
// in row mode), AVX2 with FMA and baseline SSE2 (16 registers: 4 x 3).
__attribute__((target("avx512f,avx512vl,fma"))) void DirectSamplesAvx512(
    const DirectConv& d, const float* x, const float* w, const float* bias, float* y,
    const DirectEpilogue& e, int64_t n0, int64_t n1) {
  DirectSamples<16, 6, 4>(d, x, w, bias, y, e, n0, n1);
}
__attribute__((target("avx512f,avx512vl,fma"))) void DirectSamplesAvx512Ymm(
    const DirectConv& d, const float* x, const float* w, const float* bias, float* y,
    const DirectEpilogue& e, int64_t n0, int64_t n1) {
  DirectSamples<8, 6, 4>(d, x, w, bias, y, e, n0, n1);
}
__attribute__((target("avx2,fma"))) void DirectSamplesAvx2(const DirectConv& d, const float* x,
                                                           const float* w, const float* bias,
                                                           float* y, const DirectEpilogue& e,
                                                           int64_t n0, int64_t n1) {
  DirectSamples<8, 4, 3>(d, x, w, bias, y, e, n0, n1);
}
void DirectSamplesBaseline(const DirectConv& d, const float* x, const float* w, const float* bias,
                           float* y, const DirectEpilogue& e, int64_t n0, int64_t n1) {
  DirectSamples<4, 4, 3>(d, x, w, bias, y, e, n0, n1);
}

using SamplesFn = void (*)(const DirectConv&, const float*, const float*, const float*, float*,
                           const DirectEpilogue&, int64_t, int64_t);

// The variant for `d` on this machine, capped by SetConvIsaForTesting, and its vector width.
SamplesFn PickVariant(const DirectConv& d, int* vw) {
  static const CpuIsa best = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) {
      return CpuIsa::kAvx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::kAvx2;
    return CpuIsa::kBaseline;
  }();
  // The lower of the machine's best and the one a test asked for.
  const CpuIsa isa = std::min(best, g_direct_isa.load(std::memory_order_relaxed));
  if (isa == CpuIsa::kAvx512) {
    *vw = d.wo % 16 != 0 && d.wo % 8 == 0 ? 8 : 16;
    return *vw == 8 ? &DirectSamplesAvx512Ymm : &DirectSamplesAvx512;
  }
  *vw = isa == CpuIsa::kAvx2 ? 8 : 4;
  return isa == CpuIsa::kAvx2 ? &DirectSamplesAvx2 : &DirectSamplesBaseline;
}

}  // namespace

bool MakeDirectConv(const ConvParams& p, const Dims& out_spatial, DirectConv* d) {
  const size_t r = p.in_spatial.size();
  if (r < 1 || r > 2 || out_spatial.size() != r || p.kernel.size() != r) return false;
  for (int64_t s : p.strides) {
    if (s != 1) return false;
  }
  for (int64_t pad : p.pads) {
    if (pad < 0) return false;
  }
  // Rows and columns: a 1-D conv is one row.
  auto at = [&](const Dims& v, size_t i, int64_t dflt) { return v.empty() ? dflt : v[i]; };
  const int64_t kh = r == 2 ? p.kernel[0] : 1, kw = p.kernel[r - 1];
  const int64_t dh = r == 2 ? at(p.dilations, 0, 1) : 1, dw = at(p.dilations, r - 1, 1);
  const int64_t pb = r == 2 ? at(p.pads, 2, 0) : 0, pr = at(p.pads, 2 * r - 1, 0);
  d->cg = p.in_channels / p.group;
  d->mg = p.out_channels / p.group;
  d->group = p.group;
  d->taps = kh * kw;
  d->h = r == 2 ? p.in_spatial[0] : 1, d->w = p.in_spatial[r - 1];
  d->pt = r == 2 ? at(p.pads, 0, 0) : 0, d->pl = at(p.pads, r - 1, 0);
  d->ho = r == 2 ? out_spatial[0] : 1, d->wo = out_spatial[r - 1];
  // Output rows and columns must not run into the next sample / row either (a 1x1 kernel with
  // pads has more outputs than the padded-once image has pixels).
  d->wp = std::max(d->w + std::max(d->pl, pr), d->wo);
  d->slot = std::max(d->h + std::max(d->pt, pb), d->ho);
  // One sample's span plus the rows a window reaches past its slot: see DirectSamples.
  const int64_t per_sample = d->slot * d->wp, extra = (d->pt + pb + 1) * d->wp;
  if (d->cg * (per_sample + extra) > kDirectMaxBufferElems) return false;
  d->chunk = std::clamp<int64_t>((kDirectChunkElems / d->cg - extra) / per_sample, 1, p.batch);
  d->channel_stride = d->chunk * per_sample + extra;
  d->x_sample = p.in_channels * d->h * d->w;
  d->y_sample = p.out_channels * d->ho * d->wo;
  d->offs.resize(static_cast<size_t>(d->taps));
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) d->offs[i * kw + j] = i * dh * d->wp + j * dw;
  }
  return true;
}

void SetConvIsaForTesting(CpuIsa isa) { g_direct_isa.store(isa, std::memory_order_relaxed); }

bool DirectConvRowMode(const DirectConv& d) {
  int vw = 0;
  // Not the AVX-512 CPUs' 8-wide variant (rows of 8, 24, ... columns): at half their vector
  // width oneDNN's blocked kernel beats it (the example CNN's 16-channel 8x8 convolution, batch
  // 32, one thread, Sapphire Rapids: 94 against 139 us).
  return PickVariant(d, &vw) != &DirectSamplesAvx512Ymm && d.wo % vw == 0;
}

void DirectConvF32(const DirectConv& d, int64_t batch, const float* x, const float* w,
                   const float* bias, float* y, const DirectEpilogue& epilogue) {
  int vw = 0;
  const SamplesFn fn = PickVariant(d, &vw);
  const int64_t macs = d.group * d.mg * d.cg * d.taps * d.slot * d.wp;
  ParallelFor(batch, macs / 4,
              [&](int64_t n0, int64_t n1) { fn(d, x, w, bias, y, epilogue, n0, n1); });
}

}  // namespace a8::cpu::internal

// Direct convolution of small stride-1 1-D/2-D images in float (Conv's f32/f16/bf16 compute;
// conv.cc decides when it applies and converts the dtypes). A chunk of samples is copied,
// per input channel, into a zero-filled buffer of "padded rows": row width wp = w + max(pad
// left, pad right) (one shared zero gap between rows: reading left of a row lands in the gap of
// the row above), and `slot` rows per sample (h + max(pad top, pad bottom): one shared zero band
// between samples). Output (s, oh, ow) is column J = (s * slot + oh) * wp + ow, and tap (kh, kw)
// reads the buffer at J + kh * dh * wp + kw * dw: for every tap the chunk's outputs are one
// contiguous run, so the convolution is a GEMM whose B rows are shifted views of the buffer (no
// im2col), the weights read in place. Columns outside [0, ho) x [0, wo) are computed and
// dropped, except in row mode: where an output row is a whole number of the kernel's vectors
// (8 columns with AVX2 or AVX-512, 4 with SSE2, 16 with AVX-512), each vector is a segment of
// one output row and the gap columns are never computed. Samples are split over the pool, one
// hand-off per call. Used where a sample's buffer is small; larger images take the im2col +
// BLAS path.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/conv.h"

namespace a8::cpu::internal {

struct DirectConv {
  int64_t cg = 0, mg = 0, group = 1, taps = 0;
  int64_t h = 0, w = 0, pt = 0, pl = 0, wp = 0, ho = 0, wo = 0;
  int64_t slot = 0;            // buffer rows per sample
  int64_t chunk = 1;           // samples per buffer
  int64_t channel_stride = 0;  // buffer elements per input channel
  int64_t x_sample = 0, y_sample = 0;
  std::vector<int64_t> offs;  // tap offsets into the buffer
};

// Whether Conv `p` (its output spatial dims `out_spatial`) takes the direct path; fills `d` if
// so: stride 1, 1 or 2 spatial dims, and one sample's buffer small enough.
bool MakeDirectConv(const ConvParams& p, const Dims& out_spatial, DirectConv* d);

// Whether the variant this machine runs takes `d` in row mode at the CPU's full vector width.
// There the direct path beats oneDNN's blocked convolution with its layout reorders (the example
// CNN's 16-channel 8x8 convolution at batch 32, one thread, AVX2: 119 against 164 us), so the
// fast mode takes it first; an AVX-512 CPU's rows of 8 columns (half a vector) go to oneDNN.
bool DirectConvRowMode(const DirectConv& d);

// What the direct path applies to Y as it stores it (a8.FusedConv, conv.h): + z (Y's dims, at
// Y's offsets) where not null, then Relu (kernels/common/unary_math.h's ReluF) where `relu`.
struct DirectEpilogue {
  const float* z = nullptr;
  bool relu = false;
};

// Y [batch, M, ho, wo] = conv(X, W) + bias (null: none), f32, over the geometry of `d`.
void DirectConvF32(const DirectConv& d, int64_t batch, const float* x, const float* w,
                   const float* bias, float* y, const DirectEpilogue& epilogue = {});

}  // namespace a8::cpu::internal

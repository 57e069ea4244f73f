// How many samples one im2col GEMM takes. The filter gradient's GEMM sums over k = samples x
// output positions, and a GEMM's float sum over k is not the same operations as sums of
// per-chunk GEMMs added together: the CPU reference (kernels/cpu/grad_conv_pool.cc) and the
// device im2col path (kernels/device/gemm_conv_im2col_impl.h) chunk the batch alike, so that
// cuda-emu's filter gradients equal the CPU's bit for bit.
#pragma once

#include <stdint.h>

namespace a8 {

// The column matrix of one chunk stays under this many elements.
inline constexpr int64_t kConvMaxColElems = int64_t{1} << 25;

// Samples per chunk (1 to `batch`; `batch` when a sample has no columns), for a column matrix of
// `per_sample` elements a sample (in_channels x kernel taps x output positions).
inline constexpr int64_t ConvBatchChunk(int64_t batch, int64_t per_sample) {
  const int64_t chunk = per_sample > 0 ? kConvMaxColElems / per_sample : batch;
  return chunk < 1 ? 1 : (chunk > batch ? batch : chunk);
}

}  // namespace a8

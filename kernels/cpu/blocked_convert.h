// f16/bf16 activations straight into (and out of) the f32 layouts of oneDNN's convolutions.
//
// oneDNN 2.6 has no f16 convolution on our CPUs, and its f16 reorders run a scalar loop (about
// 200x slower than its f32 reorder to the same layout: measured 222 ms against 0.96 ms for a
// [16, 64, 32, 32] tensor). The f32 path already reorders every activation from NCHW into the
// primitive's layout (NHWC for brgconv's forward, nChw16c for the gradients here) and back; for
// f16 that one pass also converts: 16 channels at a time are read as f16 rows, widened in vector
// registers and transposed in registers (AVX-512F), or through an L1 tile on the stack with
// fast_convert.h's levels (F16C+AVX2, scalar), and written into the f32 buffer the primitive
// reads. The output goes the other way and is rounded once. So an f16 convolution makes no
// widened copy besides the layout buffer the f32 convolution has too, and reads half the bytes.
#pragma once

#include <cstdint>

#include "kernels/common/kernel_types.h"

namespace a8::cpu::internal {

// Element (n, c, p) of an activation [n, c, p] (p: the flattened spatial position) sits at
// n * sn + (c / block) * sc + p * sp + c % block of the f32 buffer: block 1 with sp 1 is plain
// NCHW, block 16 with sp 16 is nChw16c, block c with sp c is NHWC. Channels past `c` up to the
// last block's end are padding.
struct BlockedLayout {
  int64_t n = 0, c = 0, p = 0;
  int64_t sn = 0, sc = 0, sp = 0, block = 1;
};

inline constexpr int64_t kBlockedTile = 64;
inline constexpr int64_t kMaxBlock = 16;

// Whether the converters take layout `l`: plain NCHW (block 1, sp 1), channels last (block >= c,
// sp >= block), or blocks of 8 or a multiple of 16 channels with sp == block.
bool BlockedLayoutSupported(const BlockedLayout& l);

// Plain [n, c, p] f16/bf16 `x` (dtype) into the f32 buffer `y` of layout `l`, padding channels 0.
void HalfToBlocked(DType dtype, const void* x, const BlockedLayout& l, float* y);

// The f32 buffer `x` of layout `l` into plain [n, c, p] f16/bf16 `y`, rounded once.
void BlockedToHalf(DType dtype, const float* x, const BlockedLayout& l, void* y);

}  // namespace a8::cpu::internal

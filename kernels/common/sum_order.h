// The order in which long float sums add, shared by the CPU reference kernels and the device
// kernels so that both backends give the same bits.
#pragma once

#include <cstdint>

namespace a8 {

// A float sum of more than kSumChunk terms (ReduceSum/Mean/SumSquare/L1/L2 over the reduced
// elements in row-major order; LayerNormalization's scale and bias gradients over the rows) adds
// its terms in chunks of kSumChunk, each chunk in order from 0, then the chunks' sums in order
// from 0. A GPU sums the chunks of every output at once (BERT-base's bias gradients reduce 4,096
// rows into 768-3,072 outputs: one thread an output left the GPU nearly idle), and a sum of 64
// or fewer terms is the plain running sum.
inline constexpr int64_t kSumChunk = 64;

inline constexpr int64_t SumChunks(int64_t terms) {
  return terms <= 0 ? 0 : (terms + kSumChunk - 1) / kSumChunk;
}

}  // namespace a8

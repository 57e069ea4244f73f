// The fast mode's AdamW/Adam update over f32 parameters and moments (kernel_mode.h).
//
// The reference update (optim.cc: AdamUpdate) runs optim_math.h's AdamElement one element at a
// time: its std::sqrt keeps errno semantics, so the loop has a branch per element and stays
// scalar, and its pointers are re-read every element (the outputs may alias the inputs). On the
// BERT-base-width encoder that was 13% of the bf16 step. This path walks blocks of kF32Block
// elements: each operand block copied (the gradient converted in vector registers from f16/bf16)
// into on-stack float buffers, the same float formula run over them in AVX-512 / AVX2+FMA / SSE2
// vectors (compiled with -fno-math-errno; sqrt and division are exact either way), the results
// stored back. FMA contraction makes its results differ from the reference in the last bits:
// checked against it within f32's tolerance (cpu_kernels_fast_optim_test.cc).
#pragma once

#include <cstdint>

#include "kernels/common/optim_math.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu::internal {

// AdamElement over n elements: param, m, v and their next values f32 (the outputs may be the
// inputs), grad of `grad_dtype` (f32, f16 or bf16). With `inv` (a8.AdamUpdate's scale input,
// optim.h AdamExtras), each gradient element is first unscaled as UnscaleElement does; with
// `copy`, param_next is also rounded into it (copy_dtype f16 or bf16, as the fast Cast rounds).
// False (nothing done) for another grad dtype.
bool AdamUpdateF32Fast(const AdamStep<float>& s, DType grad_dtype, int64_t n, const float* param,
                       const void* grad, const float* m, const float* v, float* param_next,
                       float* m_next, float* v_next, const float* inv = nullptr,
                       DType copy_dtype = DType::kF16, void* copy = nullptr);

}  // namespace a8::cpu::internal

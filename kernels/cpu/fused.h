// Kernels of the fuse pass's ops (passes/fusion/fuse.h; semantics in
// compiler/ir/op_table_fused.cc): a GEMM with an epilogue, and an elementwise program. The
// per-element math is the host/device body of kernels/common/fused_elementwise.h; these add the
// loops (and the GEMM) around it.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/common/fused_elementwise.h"
#include "kernels/cpu/dtype.h"

namespace a8::cpu {

using a8::FusedMatMulParams;  // kernels/common/kernel_types.h
static_assert(FusedMatMulParams{}.epilogue == kEpilogueBias);

// y[m, n] = epilogue(A[m, k] @ op(B)) with float accumulation (double for f64) and one rounding.
// bias ([n]) for the bias epilogues, aux ([m, n]) for the backward ones, else null. out1 may be
// null: the pre-activation [m, n] (forward) or the bias gradient [n], sum over rows of the
// unrounded y (backward with bgrad).
Status FusedMatMul(const FusedMatMulParams& p, const void* a, const void* b, const void* bias,
                   const void* aux, void* y, void* out1);

// y[i] = EvalFused(program, {x_0[i or 0], ..., x_{n-1}[i or 0]}) for i in [0, count): inputs of
// dtype `in_dtype`, an input with in_counts[j] == 1 broadcast, others of `count` elements; y of
// `out_dtype`. Math in float, or double when either dtype is f64; one rounding.
Status FusedElementwise(const FusedProgram& program, DType in_dtype, const void* const* inputs,
                        const int64_t* in_counts, DType out_dtype, int64_t count, void* y);

}  // namespace a8::cpu

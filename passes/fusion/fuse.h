// fuse: rewrites the graph into fewer, larger kernels (issue 6, "Fusion pass").
//
// 1. GEMM epilogues -> a8.FusedMatMul (compiler/ir/op_table_fused.cc has the exact semantics of
//    each fused op):
//    - forward: MatMul(A [..., M, K], B [K, N]) + Add(bias [N], either operand order), or
//      Gemm(A, B[, C = bias [N] | [1, N]]) with transA=0, alpha=beta=1, optionally followed by
//      Relu or Gelu (approximate none/tanh): epilogues bias, bias_relu, bias_gelu, relu, gelu.
//      When the pre-activation has other uses (a8.GeluGrad reads x), it becomes output 1. A lone
//      Gemm (with or without C) and a lone MatMul are left as they are.
//    - backward: a MatMul / Gemm (no C, transA=0) whose result's only use is the dy of
//      a8.ReluGrad / a8.GeluGrad -> epilogue drelu / dgelu (aux = the grad's saved operand), and
//      "_bgrad" when a ReduceSum(keepdims=0) over all but the last dim of that gradient exists:
//      output 1 replaces the ReduceSum (cuBLASLt's DRELU_BGRAD / DGELU_BGRAD).
// 2. Convolution epilogues -> a8.FusedConv: a Conv whose output's only reader is an Add of a
//    tensor of that output's type (the residual, either operand order) and / or then a Relu.
//    The Add's other operand becomes input 3 (Z; input 2, the bias, stays absent when the Conv
//    had none). Each step rounds as unfused (op_table_fused.cc), so the plan's values are the
//    unfused plan's.
// 3. Elementwise chains -> a8.FusedElementwise: maximal trees of float elementwise nodes (Relu,
//    Gelu, Sigmoid, Tanh, Exp, Log, Neg, Abs, Sqrt, Reciprocal, Erf, Cast between float types,
//    Add/Sub/Mul/Div, Sum as its chain of Adds in input order, a8.ReluGrad/GeluGrad/SigmoidGrad/
//    TanhGrad) whose operands have the node's shape or one element, joined through values with a
//    single use that are not graph outputs (nor state-update sources). One-element constants are
//    folded into the program; the other inputs must share one dtype. A tree of one node stays as
//    it is, but for a Sum (the backward's gradient sums, often of widened f16 gradients: their
//    Casts join the tree, and the Sum kernel's copies go).
//
// Guarantees: only nodes whose operand and result dtypes line up are fused (a Cast between a
// MatMul and its Add blocks the fusion); the fused node's outputs keep the replaced values' names
// and types; every fused node lists the nodes it came from in `a8.onnx_nodes` (lower writes them
// to the plan's onnx_nodes) and keeps its main node's a8.precision / a8.why. Numerics: float
// (double for f64) math and one rounding, so fused and unfused plans differ by the dropped
// f16/bf16 intermediate roundings, and in f32 only by summation order and libm.
// Runs after loss-scaling, before bucket-gradients; `a800c --no-fuse` leaves it out.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(Fuse);

}  // namespace a8

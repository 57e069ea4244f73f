// `--check-numerics` support: finding the first non-finite element of a float buffer, and the
// error text that names where it came from.
//
// The executor calls these after every kernel (ExecutorOptions::check_numerics); nothing here
// runs without the option. f16 and bf16 are tested on their bits, so no element is converted
// unless it is the one reported.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/ir/types.h"
#include "compiler/plan/plan.pb.h"

namespace a8 {

struct NonFinite {
  int64_t index = 0;  // flat, row-major
  double value = 0;   // Inf, -Inf or NaN
};

// The first Inf or NaN among the `count` elements of `dtype` at `data`; nullopt when all are
// finite or `dtype` is not a float type (integers and bools cannot be non-finite).
std::optional<NonFinite> FindNonFinite(DType dtype, const uint8_t* data, int64_t count);

// "nan", "inf" or "-inf" (a NaN's sign and payload say nothing useful here).
std::string NonFiniteName(double value);

// Reads all of buffer `id` as float64.
using ReadBufferF64 = std::function<StatusOr<std::vector<double>>(int id)>;

// The original ONNX node (an entry of kern.onnx_nodes) that produced the non-finite element
// `index` of the kernel's output 0, whose inputs are finite:
// - a8.FusedElementwise: its program is re-evaluated on that element on the host, instruction
//   by instruction, and the member blamed is the first whose result is non-finite once rounded
//   to the kernel's output dtype (as that member's own output would be in the unfused plan: an
//   FP16 Mul whose product exceeds 65504 is the node that overflows, even though the fused kernel
//   computes in float). Members are the program's instructions in order, after its constant
//   loads; a widening cast member (".f32"/".f64", exact) has no instruction.
// - a8.FusedMatMul (forward epilogues): the element's accumulator is recomputed on the host: its
//   first node (the MatMul) when the product alone does not fit the output type, else the bias
//   Add when adding the bias overflows, else the last node (the activation); a backward
//   epilogue: its first node;
// - a8.FusedConv with a residual: the element's convolution is recomputed on the host: its first
//   node (the Conv) when it alone does not fit the output type, else the residual Add;
// - any other kernel: its first ONNX node, else its node.
StatusOr<std::string> BlameOnnxNode(const plan::Plan& plan, const plan::Kernel& kern, int64_t index,
                                    const ReadBufferF64& read);

}  // namespace a8

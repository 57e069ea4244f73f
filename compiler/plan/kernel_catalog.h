// The kernel catalog: every kernel a plan may name, so every kernel a backend must implement.
//
// A kernel name is "<qualified op>:<input dtypes>-><output dtypes>", dtypes spelled as in the IR
// ("f32", "bf16", "i64", "bool"), an absent optional input spelled `_`, trailing absent inputs
// left out: "Gemm:f32,f32,f32->f32", "Clip:f16,_,f16->f16", "Relu:f32->f32". The op is
// qualified by its domain outside ai.onnx ("a8.UnscaleCheckFinite").
//
// The signatures each op allows come from its ONNX type constraints restricted to a800c's dtypes
// (Relu: T in {f32,f16,bf16,f64,i64,i32,i8}; comparisons give bool; Cast any -> any), one row per
// op, each the op table's signature of the op (OpDef::kernel: set by its entry or in
// compiler/ir/op_table_kernels.cc). Every op of the op table has a row except `Constant` (the
// importer turns it into a constant value) and ai.onnx.preview.training's `Gradient` (replaced
// by autodiff before plans exist); its optimizers Adam, Momentum and Adagrad have rows. The
// compiler checks every kernel it writes and the plan reader every kernel it reads against this
// table, so a backend that implements every signature here can run every plan.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/op_node.h"
#include "compiler/ir/status.h"
#include "compiler/ir/types.h"

namespace a8 {

// One op's row, readable: for `a800c-run --list-kernels` and errors.
struct KernelPattern {
  std::string op;       // qualified op: "Relu", "Clip"
  std::string pattern;  // "Relu:T->T, T in {f32,f16,bf16,f64,i64,i32,i8}"; `?` optional,
                        // `*` one or more ("Concat:T*->T, T in {...}")
};

// A kernel name taken apart.
struct KernelSignature {
  std::string op;                            // qualified op
  std::vector<std::optional<DType>> inputs;  // nullopt: an absent optional input (`_`)
  std::vector<DType> outputs;
};

// The kernel name of a node (an IR Node converts to an OpNode), from its op and its values'
// dtypes (absent inputs `_`, trailing absent inputs dropped). Does not check it: see CheckKernel.
std::string KernelName(const OpNode& node);
std::string KernelName(const KernelSignature& sig);

// Takes a kernel name apart; an error naming the text when it is malformed (no ':', no '->',
// an unknown dtype, an empty op).
StatusOr<KernelSignature> ParseKernelName(std::string_view name);

// Ok when `op` with these dtypes is a signature backends must run; else InvalidInput naming the
// kernel and why ("unknown kernel op 'Foo'", "Relu:bool->bool: T must be one of {...}, got
// bool", "Gemm:f32->f32: expects 2 to 3 inputs, got 1").
Status CheckKernel(std::string_view op, const std::vector<std::optional<DType>>& inputs,
                   const std::vector<DType>& outputs);
Status CheckKernel(const KernelSignature& sig);
// Parses and checks a name.
Status CheckKernelName(std::string_view name);

// True when `op` (qualified) has a catalog row.
bool IsCatalogOp(std::string_view op);

// Every row, sorted by op.
std::vector<KernelPattern> AllKernelPatterns();

// Every concrete kernel name of `op` with every optional input and output present and each `*`
// part taken once (Concat:f32->f32, ...): what a backend's coverage test walks. Empty for an op
// without a row. Sorted.
std::vector<std::string> KernelNamesForOp(std::string_view op);

}  // namespace a8

// The constant evaluator: computes a node's outputs from constant inputs, at compile time.
//
// What it guarantees:
// - the ops it folds are the ones shape and constant subgraphs are made of (Shape, Gather,
//   Concat, Reshape, Slice, Cast, integer arithmetic, comparisons, ...), listed in
//   `IsFoldableOp`; any other op, and any op whose data inputs are not all constant, gives an
//   Unsupported status, which callers treat as "leave the node alone";
// - results are bit-for-bit what onnxruntime's CPU kernels compute: arithmetic in the tensor's
//   dtype (f16/bf16 computed in float and rounded with kernels/common/float16.h, round to
//   nearest even), integer Div truncates toward zero as C++ does, integer Mod follows the sign of
//   the divisor (fmod=0) or of the dividend (fmod=1), integer overflow wraps, Range accumulates
//   `start += delta` as ORT does, Sum of 3+ f16 inputs adds in float and rounds once. Checked
//   against onnxruntime on random data for every op and dtype; the one exception is Exp and Log,
//   which use the C library and may differ from ORT's vectorized Eigen kernels in the last bit;
// - `Shape` and `Size` fold even when their input is not constant: after shape-inference every
//   type is static;
// - no output larger than `kMaxFoldElements` elements is materialized, so a hostile model cannot
//   make the compiler allocate unbounded memory; such nodes are Unsupported (not folded);
// - bad constant data (a Gather index out of range, an integer division by zero) is an
//   InvalidInput error naming the node, as the runtime would fail on it every step.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

inline constexpr int64_t kMaxFoldElements = int64_t{1} << 20;

// Whether the evaluator knows `node`'s op (it may still decline a particular node).
bool IsFoldableOp(const Node& node);

// Whether `node` reads only the type of its input `i`, so that the input need not be constant:
// Shape's and Size's input, CastLike's second (the dtype it casts to; the dynamo exporter writes
// a Conv's zero bias as Expand(CastLike(0, input), [C])).
bool ReadsTypeOnly(const Node& node, int i);

// Evaluates `node`. `inputs[i]` is the data of input i, null for an absent optional input or an
// input it reads the type of only (ReadsTypeOnly). Returns one tensor per node output.
StatusOr<std::vector<TensorDataPtr>> EvaluateNode(const Node& node,
                                                  const std::vector<TensorDataPtr>& inputs);

// Replaces every output of `node` by a new constant holding `data[i]` and named like the output
// it replaces (uses and graph outputs move to it), then erases `node`. Returns the constants.
// The data types must equal the outputs' types (an Internal error otherwise).
StatusOr<std::vector<Value*>> ReplaceWithConstants(Graph& graph, Node* node,
                                                   const std::vector<TensorDataPtr>& data);

// The data of each input of `node` that is a constant (role kConstant with data), else null.
std::vector<TensorDataPtr> ConstantInputs(const Node& node);

// Whether operand `operand` of `node` is shape-like: it is read as shape/axes/indices metadata
// (Reshape's shape, Slice's starts..steps, Expand's shape, ...), never as tensor data.
bool IsShapeOperand(const Node& node, int operand);

}  // namespace a8

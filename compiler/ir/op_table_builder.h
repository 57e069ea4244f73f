// Builders for op-table entries (internal to compiler/ir): keep each entry to a few lines.
//
// The table is assembled in op_table.cc from one `Add...Ops` function per family. The ONNX
// families live in op_table.cc; a800c's internal ops (domain "a8": gradient ops, losses,
// optimizer updates) each have their own file, with their shape rules beside them:
// op_table_grad_math.cc, op_table_grad_nn.cc, op_table_optim.cc.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_table.h"

namespace a8 {

// The float element types a kernel row lists for most float ops (KernelRowSpec).
inline const std::vector<DType> kKernelFloats = {DType::kF32, DType::kF16, DType::kBF16,
                                                 DType::kF64};

inline AttrSpec Opt(std::string name, Attribute dflt) {
  AttrKind kind = dflt.kind();
  return AttrSpec{std::move(name), kind, false, std::move(dflt)};
}
inline AttrSpec OptNoDefault(std::string name, AttrKind kind) {
  return AttrSpec{std::move(name), kind, false, std::nullopt};
}
inline AttrSpec Req(std::string name, AttrKind kind) {
  return AttrSpec{std::move(name), kind, true, std::nullopt};
}

struct Arity {
  int min_inputs, max_inputs, min_outputs, max_outputs;
};

inline OpDef Op(std::string name, Arity arity, std::vector<AttrSpec> attrs,
                std::vector<int> implemented, int canonical, ShapeRule infer, std::string doc,
                std::string domain = "") {
  OpDef op;
  op.domain = std::move(domain);
  op.name = std::move(name);
  op.min_inputs = arity.min_inputs;
  op.max_inputs = arity.max_inputs;
  op.min_outputs = arity.min_outputs;
  op.max_outputs = arity.max_outputs;
  op.attrs = std::move(attrs);
  op.implemented = std::move(implemented);
  op.canonical = canonical;
  op.infer = infer;
  op.doc = std::move(doc);
  return op;
}

// `op` with its gradient decision stated in the table (most ops state it through their rule in
// passes/autodiff instead: see GradDecision).
inline OpDef WithGradient(GradDecision decision, OpDef op) {
  op.gradient = decision;
  return op;
}

// `op`, not differentiable: its inputs get no gradient (GradDecision::kNone).
inline OpDef NotDifferentiable(OpDef op) {
  return WithGradient(GradDecision::kNone, std::move(op));
}

// `op` with precision class `precision` and one kernel row (`ins`, `outs` as KernelRowSpec spells
// them, "T,T,i64?") whose T is any of kKernelFloats.
inline OpDef WithFloatKernel(OpPrecisionClass precision, std::string ins, std::string outs,
                             OpDef op) {
  op.precision = precision;
  op.kernel = KernelRowSpec{std::move(ins), std::move(outs), {{'T', kKernelFloats}}};
  return op;
}

// `op`, a normalization that may read `inputs` and write output 0 in the low type
// (OpDef::low_edge_inputs).
inline OpDef WithLowEdges(std::vector<int> inputs, OpDef op) {
  op.low_edge_inputs = std::move(inputs);
  return op;
}

// `op` with `inputs` read in whatever float type they come (OpDef::any_float_inputs).
inline OpDef ReadsAnyFloat(std::vector<int> inputs, OpDef op) {
  op.any_float_inputs = std::move(inputs);
  return op;
}

// `op`, a GEMM or convolution whose `inputs` are the operands it multiplies (OpDef::tf32_inputs).
inline OpDef Multiplies(std::vector<int> inputs, OpDef op) {
  op.tf32_inputs = std::move(inputs);
  return op;
}

// Conv's attributes (ConvTranspose's with `transpose`), with their ONNX defaults; a8.FusedConv
// takes Conv's (op_table.cc).
std::vector<AttrSpec> ConvAttrs(bool transpose);

// The domain of a800c's internal ops ("a8.ReluGrad").
inline constexpr const char* kA8Domain = "a8";

// An internal op: domain "a8", version 1 (internal ops have no ONNX history; the IR never
// imports them from ONNX, only from IR text).
inline OpDef InternalOp(std::string name, Arity arity, std::vector<AttrSpec> attrs, ShapeRule infer,
                        std::string doc) {
  OpDef op = Op(std::move(name), arity, std::move(attrs), {1}, 1, infer, std::move(doc), kA8Domain);
  op.onnx_versions = {1};
  return op;
}

constexpr Arity kUnary{1, 1, 1, 1};
constexpr Arity kBinary{2, 2, 1, 1};
constexpr Arity kVariadic{1, -1, 1, 1};
constexpr int kMany = -1;

// An elementwise activation `name` and its gradient op a8.<name>Grad(dy, saved), declared
// together (op_table_grad_math.cc): the forward op is unary, elementwise and runs in place, its
// kernel maps `types` to itself; the gradient op takes the forward op's attributes, its class and
// its types; `gradient` says which tensor it saves (the generic rule in
// passes/autodiff/grad_rules_math.cc emits it). The math of both is kernels/common/unary_math.h.
struct Activation {
  std::string name;
  std::vector<AttrSpec> attrs;
  std::vector<int> implemented;
  int canonical = 0;
  OpPrecisionClass precision = OpPrecisionClass::kFollow;
  GradDecision gradient = GradDecision::kActivationOfInput;
  std::string doc;                 // the forward op's --list-ops line
  std::string grad_doc;            // the gradient op's
  ShapeRule infer = nullptr;       // nullptr: float in, float out (InferFloatUnary)
  ShapeRule grad_infer = nullptr;  // nullptr: dx like dy (InferActivationGrad)
  std::vector<DType> types = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};
};
void AddActivation(std::vector<OpDef>* ops, Activation a);

// The activations and their gradients (op_table_activations.cc), added by AddElementwiseOps.
void AddActivations(std::vector<OpDef>* ops);
void AddBitwiseOps(std::vector<OpDef>* ops);  // op_table_bitwise.cc

// Internal op families, one file each.
void AddGradMathOps(std::vector<OpDef>* ops);   // op_table_grad_math.cc: elementwise/shape/reduce
void AddGradNnOps(std::vector<OpDef>* ops);     // op_table_grad_nn.cc: nn gradients, a8 losses
void AddOptimizerOps(std::vector<OpDef>* ops);  // op_table_optim.cc: updates, step control
void AddFusedOps(std::vector<OpDef>* ops);      // op_table_fused.cc: the fuse pass's kernels
void AddGatherNdOps(std::vector<OpDef>* ops);   // op_table_gather_nd.cc: GatherND, its gradient
void AddScatterOps(std::vector<OpDef>* ops);    // op_table_scatter.cc: ScatterND/Elements, TopK
// op_table_grid_sample.cc: GridSample and its gradient, Col2Im, DeformConv
void AddGridSampleOps(std::vector<OpDef>* ops);
// op_table_value_shaped.cc: NonZero, Unique, NonMaxSuppression (folded at compile time)
void AddValueShapedOps(std::vector<OpDef>* ops);
void AddLinalgOps(std::vector<OpDef>* ops);  // op_table_linalg.cc: Det and its gradient
// op_table_roi_pool.cc: MaxUnpool, RoiAlign and their gradients
void AddRoiPoolOps(std::vector<OpDef>* ops);
// op_table_random.cc: RandomUniform/Normal(Like), Bernoulli
void AddRandomOps(std::vector<OpDef>* ops);
// op_table_attention.cc: a8.FusedAttention and its gradient
void AddAttentionOps(std::vector<OpDef>* ops);
// Sets OpDef::precision from PRECISION.md's lists for the entries that do not set it themselves,
// and pins the internal ops left without one (op_table_precision.cc).
void ClassifyPrecision(std::vector<OpDef>* ops);
// Sets OpDef::kernel, the kernel-catalog signature, for the entries that do not set it themselves
// (op_table_kernels.cc).
void DeclareKernelRows(std::vector<OpDef>* ops);

// For the two above: sets `field` of each entry a list names (qualified name, value). A name the
// table lacks, or an entry whose field is already set, stops the program at start-up naming
// every such entry and `list` (a build that must not ship: the table disagrees with its list).
void StopOnTableErrors(const char* list, const std::string& errors);
template <typename T>
void SetFromList(std::vector<OpDef>* ops, const char* list, std::optional<T> OpDef::*field,
                 std::vector<std::pair<std::string, T>> rows) {
  std::map<std::string, OpDef*, std::less<>> index;
  for (OpDef& op : *ops) index.emplace(QualifiedName(op), &op);
  std::string errors;
  for (auto& [name, value] : rows) {
    auto it = index.find(name);
    if (it == index.end() || (it->second->*field).has_value()) {
      errors += " " + name + (it == index.end() ? " is not in the table;" : " is set twice;");
      continue;
    }
    it->second->*field = std::move(value);
  }
  StopOnTableErrors(list, errors);
}

}  // namespace a8

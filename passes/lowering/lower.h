// lower: turns a scheduled, memory-planned graph into a plan (compiler/plan/plan.proto).
//
// Not a pass: the IR is left as it is. LowerToPlan reads the graph and its memory plan
// (graph.memory_plan, set by `plan-memory`) and guarantees, for the plan it returns (checked by
// ValidatePlan before it returns):
// - one buffer per graph value, in this order: graph-level values (inputs, parameters, state,
//   constants, in creation order), then node outputs in node order, then one CONSTANT buffer per
//   tensor attribute (named "<node>.<attr>", made unique) in node order. Inputs, intermediates
//   and outputs are ARENA buffers at the memory plan's offsets, with its live ranges and aliases;
//   parameters, state and constants are PERSISTENT, packed in that order at 64-byte alignment,
//   their initial bytes in the blob at 64-aligned offsets (a value without data, such as an
//   elided parameter of IR text, gets has_init false);
// - one kernel per node, in node order, named by kernel_catalog.h (a signature outside the
//   catalog is an Unsupported error naming the node and the kernel). Attributes are explicit:
//   every attribute whose AttrSpec has a default and the node lacks is filled in; Conv,
//   ConvTranspose, MaxPool and AveragePool get explicit `pads` (auto_pad resolved, auto_pad set
//   to NOTSET), `strides`, `dilations` and, for Conv/ConvTranspose, `kernel_shape` from the
//   weight (ConvTranspose: `output_padding`, and `output_shape` resolved into pads, an output
//   that reaches past the last window as extra output_padding, as onnx does). Attributes
//   named "a8.*" (annotations) are left out. `node` and `onnx_nodes` are the node's name;
// - bindings for every graph input and output, by value name.
#pragma once

#include <map>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/pass/compile_config.h"
#include "compiler/plan/plan_file.h"

namespace a8 {

// The attributes a plan kernel for `node` carries: a8.* annotations left out, every attribute
// with a documented default filled in, convolution and pooling windows explicit (see above).
// Tensor attributes stay as they are (lower stores them as CONSTANT buffers).
using AttributeMap = std::map<std::string, Attribute>;
StatusOr<AttributeMap> KernelAttributes(const Node& node);

// Writes attribute `a` named `name` into `out`; a tensor attribute is an Internal error (it
// needs a buffer, which only lower can add).
Status SetPlanAttribute(const std::string& name, const Attribute& a, plan::Attribute* out);

struct LowerOptions {
  std::string model_name;      // Plan.model_name (the model file's base name)
  std::string model_hash;      // Plan.model_hash: ContentHash(model file bytes), "xxh3:..."
  std::string target = "any";  // "any", "cpu", "sm_80", "sm_90"
  // The caller's last use of the graph's weights (the driver): each parameter's and state's data
  // is dropped from the graph once it is in the blob or made at load, so that the weights are
  // not held twice while the plan is built.
  bool release_weights = false;
  // The blob as PlanFile.pieces pointing at the graph's tensors (kept alive by the plan), not a
  // copy of them: for a caller that streams the plan to a file (the driver).
  bool blob_in_pieces = false;
  // The compile configuration (not owned): plan.precision, the TF32 kernels and Plan.train's
  // settings come from it. Null: an fp32 compile without training flags.
  const CompileConfig* config = nullptr;
};

// Errors: Internal "lower: the graph has no memory plan; run plan-memory first" without
// graph.memory_plan; Internal when the memory plan misses a value or disagrees with a type;
// Unsupported naming the node for a kernel outside the catalog or a convolution geometry that
// cannot be made explicit.
StatusOr<PlanFile> LowerToPlan(const Graph& graph, const LowerOptions& options);

}  // namespace a8

// Runs one ONNX decomposition (compiler/onnx/import_decompose.h) as the importer would, for the
// gradient checks of the decomposition tests.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "compiler/onnx/import_decompose.h"
#include "compiler/onnx/import_upgrade.h"
#include "passes/analysis/shape_inference.h"
#include "tests/unit/grad_check_util.h"

namespace a8::testing {

// Decomposes `req` (the caller sets op, version, inputs, attrs and, where it wants them, known
// dims) as node `name` with outputs y0 ... y{num_outputs - 1} (`name`.y0 ... for another name than
// 'node', so that a graph can hold several): the ranks and dtypes are those of the operands, the
// new nodes are upgraded to their canonical forms and typed by shape inference. Returns the
// outputs.
inline StatusOr<std::vector<Value*>> DecomposeAsImported(Graph& g, DecomposeRequest req,
                                                         int num_outputs = 1,
                                                         const std::string& name = "node") {
  auto counter = std::make_shared<int>(0);
  req.name = name;
  req.where = "node '" + name + "' (" + req.op + ")";
  const std::string prefix = name == "node" ? "y" : name + ".y";
  for (int i = 0; i < num_outputs; ++i) req.outputs.push_back({prefix + std::to_string(i), {}});
  req.fresh_name = [counter](const std::string& base) {
    return base + "." + std::to_string((*counter)++);
  };
  req.known_rank = [](const Value* v) -> std::optional<int64_t> {
    return static_cast<int64_t>(v->dims().size());
  };
  req.known_dtype = [](const Value* v) -> std::optional<DType> { return v->dtype(); };
  UpgradeContext ctx;
  ctx.graph = &g;
  ctx.fresh_name = req.fresh_name;
  ctx.known_rank = req.known_rank;
  ctx.known_dtype = req.known_dtype;
  A8_ASSIGN_OR_RETURN(std::vector<DecomposedNode> nodes, Decompose(g, req));
  for (const DecomposedNode& d : nodes) {
    const OpDef* def = FindOp(d.node->domain(), d.node->op());
    if (def == nullptr) return Internal("no op {}", d.node->op());
    A8_RETURN_IF_ERROR(UpgradeNode(d.node, d.since_version, def->canonical, ctx));
    d.node->set_version(def->canonical);
  }
  auto inferred = ShapeInference().Run(g);
  if (!inferred.ok()) return inferred.status();
  std::vector<Value*> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back(g.FindValue(prefix + std::to_string(i)));
  return outs;
}

// A gradient check of `op` (ai.onnx, at `version`) imported as its decomposition: trailing absent
// operands dropped, every operand's dims known (DecomposeRequest::known_dims), the nodes upgraded
// and typed by DecomposeAsImported.
inline GradCheckCase DecomposedGradCase(const std::string& op, int version,
                                        std::map<std::string, Attribute> attrs,
                                        std::vector<GradCheckInput> inputs, int num_outputs = 1) {
  GradCheckCase c;
  c.op = op;
  c.inputs = std::move(inputs);
  c.num_outputs = num_outputs;
  c.build = [op, version, attrs, num_outputs](
                Graph& g, const std::vector<Value*>& operands) -> StatusOr<std::vector<Value*>> {
    DecomposeRequest req;
    req.op = op;
    req.version = version;
    req.inputs = operands;
    while (!req.inputs.empty() && req.inputs.back() == nullptr) req.inputs.pop_back();
    req.attrs = attrs;
    req.known_dims = [](const Value* v) -> std::optional<std::vector<int64_t>> {
      return v->dims();
    };
    return DecomposeAsImported(g, std::move(req), num_outputs);
  };
  return c;
}

// A differentiable f64 operand (uniform in [-1, 1] from the case's seed).
inline GradCheckInput F64(std::vector<int64_t> dims) { return Input(DType::kF64, std::move(dims)); }

}  // namespace a8::testing

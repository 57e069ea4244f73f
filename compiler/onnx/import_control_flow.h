// If, Loop and Scan at import, unrolled into the nodes of their subgraphs; FlexAttention's
// modifier subgraphs (score_mod, prob_mod) inlined into its decomposition the same way.
//
// a800c's graphs are static and its plans straight-line, so control flow is decided at compile
// time, and gradients come from the unrolled nodes like from any others:
//   If (cond)            -> the taken branch's nodes; cond must be a compile-time constant (a
//                           constant, a --bind'ed graph input, or a value that folds to one);
//   Loop (M, cond, v..)  -> M copies of the body (iteration number k a constant), each reading the
//                           values the one before carried; M must be a compile-time constant, the
//                           initial cond true (or absent) and the body's cond_out provably true
//                           (cond_in passed through, or a constant true): a loop that exits on
//                           data has no static unrolling. Scan outputs are the per-iteration values
//                           stacked along axis 0;
//   Scan-9/11/16/19/21.. -> one copy of the body per position along the scan axes (the sequence
//                           length is a static dim), the slices taken with Gather, in the
//                           directions given; scan outputs stacked along scan_output_axes in their
//                           directions. Scan-8 (a batch axis first, per-batch bodies) likewise,
//                           once per batch element, without sequence_lens;
//   FlexAttention (ai.onnx.preview) with score_mod or prob_mod
//                        -> its scores half, score_mod's nodes, Softmax, prob_mod's nodes, its
//                           output half (import_decompose_flex_attention.cc, `a8.stage`).
// The copies' values and nodes get fresh names (the first copy keeps the body's names where they
// are free); outer-scope names the body reads are kept, and nested subgraphs have the free names
// renamed the same way, so nested control flow is expanded when the importer reaches it. The
// replacement is made of ONNX nodes at the model's opset, imported as any other (upgrades,
// decompositions, --bind hints).
// Any other case is one Unsupported error naming the node and why.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8::onnx_import {

// Whether `n` is If, Loop or Scan of the default domain, or an ai.onnx.preview FlexAttention with
// a subgraph attribute.
bool IsControlFlowNode(const onnx::NodeProto& n);

struct ControlFlowContext {
  std::string where;  // "node 'L' (Loop)"
  std::string name;   // the node's name
  int64_t opset = 0;  // of the default domain
  // The data of outer value `value` when it is a compile-time constant, else Unsupported naming
  // the node, `field` and why.
  std::function<StatusOr<TensorDataPtr>(const std::string& value, const std::string& field)>
      constant;
  // The static dims of outer value `value`, when known.
  std::function<std::optional<std::vector<int64_t>>(const std::string& value)> dims;
  // A value name, and a node name, that nothing in the model uses (reserved from then on).
  std::function<std::string(const std::string& base)> fresh_name;
  std::function<std::string(const std::string& base)> fresh_node_name;
};

// Adds to `names` every name that the subgraphs of `n` (nested ones included) read.
void SubgraphReads(const onnx::NodeProto& n, std::set<std::string>* names);

// At most this many nodes come out of one expansion (a hostile trip count is an error).
inline constexpr int64_t kMaxUnrolledNodes = 200000;

// The nodes that replace control-flow node `n`, in order; the last ones produce n's outputs
// under their names.
StatusOr<std::vector<onnx::NodeProto>> ExpandControlFlow(const onnx::NodeProto& n,
                                                         const ControlFlowContext& ctx);

}  // namespace a8::onnx_import

// Helpers shared by the fuse pass's two halves (internal to passes/fusion; see fuse.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8::fusion {

using Stats = std::map<std::string, int64_t>;

// Whether `n` is the ONNX (default domain) op `op`.
inline bool IsOnnxOp(const Node* n, const char* op) {
  return n != nullptr && n->domain().empty() && n->op() == op;
}

// The only user of `v` when it has exactly one use and is not a graph output (*operand: which of
// its inputs `v` is).
inline Node* SoleUser(const Value* v, int* operand = nullptr) {
  if (v->uses().size() != 1 || v->is_graph_output()) return nullptr;
  if (operand != nullptr) *operand = v->uses()[0].operand;
  return v->uses()[0].node;
}

// The names of the nodes `n` stands for: its `a8.onnx_nodes` when it is itself fused, else its
// name.
std::vector<std::string> Provenance(const Node* n);

// The attributes every fused node carries: `a8.onnx_nodes` from `members` (in order), and
// `main`'s a8.precision / a8.why.
void AddFusedAnnotations(const std::vector<const Node*>& members, const Node* main,
                         std::map<std::string, Attribute>* attrs);

// Renames each of `values` to a free `<name>.unfused` and returns the original names, so the
// fused node's outputs can take them.
std::vector<std::string> FreeNames(Graph& graph, const std::vector<Value*>& values);

// Erases `members` (outputs unused by then), last first, then the constants only they used.
void EraseMembers(Graph& graph, const std::vector<Node*>& members);

// Replaces `members` (in graph order) by one node a8.`op`(inputs) {attrs + the annotations of
// AddFusedAnnotations}, named after `main` and inserted before `insert_before`: its outputs take
// the names, types and uses of `outputs` (in order), then the members are erased.
Status EmitFused(Graph& graph, const char* op, std::vector<Value*> inputs,
                 std::map<std::string, Attribute> attrs, const Node* main, Node* insert_before,
                 const std::vector<Node*>& members, const std::vector<Value*>& outputs);

// GEMM epilogues (fuse_matmul.cc), convolution epilogues (fuse_conv.cc) and elementwise chains
// (fuse_elementwise.cc); each returns how many fused nodes it built.
StatusOr<int> FuseMatMulEpilogues(Graph& graph, Stats* stats);
StatusOr<int> FuseConvEpilogues(Graph& graph, Stats* stats);
StatusOr<int> FuseElementwiseChains(Graph& graph, Stats* stats);

}  // namespace a8::fusion

// The op registry (op_table.h) seen from the IR graph: building a typed node. The registry
// itself knows no graph (op_node.h); this is the IR's side, in a8compiler.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/op_table.h"
#include "compiler/ir/status.h"

namespace a8 {

// Emits a node of op `domain`.`op` (which must be in the table) before `before` (or at the end),
// at the op's canonical version, checks it against its OpDef and types its outputs from the op's
// shape rule: what a pass that builds new nodes needs. `pass` names the pass in errors.
StatusOr<Node*> EmitTypedNode(Graph& g, const std::string& pass, const std::string& domain,
                              const std::string& op, std::vector<Value*> inputs,
                              const std::vector<std::string>& out_names,
                              std::map<std::string, Attribute> attrs, const std::string& node_name,
                              Node* before = nullptr);

}  // namespace a8

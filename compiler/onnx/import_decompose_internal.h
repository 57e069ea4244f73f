// The helpers that the decomposition files (import_decompose*.cc) share: the node emitter and
// the arity check. Internal to compiler/onnx.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/onnx/import_decompose.h"

namespace a8::decompose_internal {

// One node of a decomposition with a single output: a fresh intermediate `<name>.<suffix>`, or
// the ONNX output when `last`.
class Emitter {
 public:
  Emitter(Graph& g, const DecomposeRequest& req) : g_(g), req_(req) {}

  Value* Emit(const std::string& op, int since_version, std::vector<Value*> inputs,
              std::map<std::string, Attribute> attrs, const std::string& suffix, bool last) {
    std::pair<std::string, TensorType> out =
        last ? req_.outputs[0]
             : std::make_pair(req_.fresh_name(req_.name + "." + suffix), TensorType{});
    Node* n = g_.AddNode(op, "", std::move(inputs), {out}, std::move(attrs),
                         last ? req_.name : req_.name + "." + suffix);
    nodes_.push_back({n, since_version});
    return n->output(0);
  }
  // A compile-time constant `<name>.<suffix>` (an axis, a shape, epsilon).
  Value* Constant(const std::string& suffix, TensorDataPtr data) {
    return g_.AddConstant(req_.fresh_name(req_.name + "." + suffix), std::move(data));
  }
  Value* Int64s(const std::string& suffix, const std::vector<int64_t>& v,
                std::vector<int64_t> dims) {
    return Constant(suffix, TensorData::FromInt64s(v, std::move(dims)));
  }
  std::vector<DecomposedNode> nodes() const { return nodes_; }

 private:
  Graph& g_;
  const DecomposeRequest& req_;
  std::vector<DecomposedNode> nodes_;
};

// The request has exactly `inputs` present inputs and one output.
Status CheckArity(const DecomposeRequest& req, size_t inputs);

}  // namespace a8::decompose_internal

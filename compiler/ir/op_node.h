// What the op registry sees of one node: its op, name, version, operand types and constant data,
// attributes and output types. A view, not the IR's Node: the op registry (op_def.h: arity,
// attribute checks, shape rules) and the plan validator (compiler/plan/plan_validate.cc, which
// has a plan kernel, not a graph) use it, so neither needs the IR graph (graph.h). The IR fills
// one from a Node (the converting constructor, compiler/ir/op_node_ir.cc, in a8compiler), so a
// shape rule is called with a Node as before; the plan validator fills one from a kernel.
//
// A view points into what it was filled from (names, types, data, attributes): it lives no
// longer than that.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/status.h"
#include "compiler/ir/types.h"

namespace a8 {

class Node;  // compiler/ir/graph.h: the IR fills an OpNode from one (op_node_ir.cc)

// An operand or result of an OpNode: the parts of the IR's Value a rule reads.
class OpValue {
 public:
  // Names the graph input that a value is computed from (through any nodes), "" when none: how
  // the IR answers FeedingGraphInput for its values (op_node_ir.cc); called only on an error.
  using FeedingInputFn = std::string (*)(const void* source);

  OpValue(const std::string* name, const TensorType* type, const TensorDataPtr* data,
          bool graph_input, const void* source = nullptr, FeedingInputFn feeding = nullptr)
      : name_(name),
        type_(type),
        data_(data),
        graph_input_(graph_input),
        source_(source),
        feeding_(feeding) {}

  const std::string& name() const { return *name_; }
  const TensorType& type() const { return *type_; }
  DType dtype() const { return type_->dtype; }
  const std::vector<int64_t>& dims() const { return type_->dims; }
  // The constant data (a constant's, a parameter's initial value); null when there is none.
  const TensorDataPtr& data() const { return *data_; }
  // Fed each step (ValueRole::kInput): a rule that needs it constant says how to freeze it.
  bool is_graph_input() const { return graph_input_; }
  // The graph input this value is fed by or computed from, "" when none is known (a plan
  // kernel's operands know none): the input a "freeze it with --bind" hint names.
  std::string FeedingGraphInput() const {
    if (graph_input_) return *name_;
    return feeding_ != nullptr ? feeding_(source_) : std::string();
  }

 private:
  const std::string* name_;
  const TensorType* type_;
  const TensorDataPtr* data_;
  bool graph_input_;
  const void* source_;
  FeedingInputFn feeding_;
};

class OpNode : public AttributeGetters<OpNode> {
 public:
  // `inputs[i]` null: an absent optional input. The pointers must outlive the view.
  OpNode(std::string_view domain, std::string_view op, std::string_view name, int version,
         std::vector<const OpValue*> inputs, std::vector<const OpValue*> outputs,
         const std::map<std::string, Attribute>* attrs);
  // The IR's node (defined with the IR, in a8compiler: the registry never calls it).
  OpNode(const Node& node);  // NOLINT(google-explicit-constructor): rules take Nodes as before

  OpNode(const OpNode&) = delete;
  OpNode& operator=(const OpNode&) = delete;

  const std::string& op() const { return op_; }
  // "" for ai.onnx, "ai.onnx.preview.training", "a8".
  const std::string& domain() const { return domain_; }
  // "Relu", "a8.ReluGrad": how dumps and kernel names spell the op.
  std::string qualified_op() const;
  const std::string& name() const { return name_; }
  int version() const { return version_; }
  // "node 'Relu_3' (Relu)": the WHERE of an error message (as Node::Where()).
  std::string Where() const;

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // Absent optional inputs are null.
  const OpValue* input(int i) const { return i >= 0 && i < num_inputs() ? inputs_[i] : nullptr; }
  bool has_input(int i) const { return input(i) != nullptr; }
  const OpValue* output(int i) const { return outputs_[i]; }
  const std::vector<const OpValue*>& outputs() const { return outputs_; }

  const std::map<std::string, Attribute>& attrs() const { return *attrs_; }
  bool has_attr(const std::string& n) const { return attrs_->count(n) > 0; }
  const Attribute* attr(const std::string& n) const;
  // GetInt, GetFloat, GetString, GetInts: AttributeGetters (attribute.h), as Node's.

 private:
  std::string domain_, op_, name_;
  int version_ = 0;
  std::vector<const OpValue*> inputs_, outputs_;
  const std::map<std::string, Attribute>* attrs_;
  // The OpValues the IR constructor fills (inputs_/outputs_ point into it; never resized after).
  std::vector<OpValue> owned_;
};

}  // namespace a8

// The a800c IR: one Graph of Nodes connected by Values.
//
// - A Value has exactly one definition: a node output, or a graph-level input, parameter, state
//   or constant. Every use is recorded (node, operand index), so passes can rewrite in O(uses).
// - Nodes keep program order (the verifier checks it is a topological order). Nodes and values
//   live in IdPools (compiler/ir/id_pool.h): blocks in creation order, never moved, so a Node* or
//   Value* stays valid until that node or value is erased. The order is a doubly linked list over
//   node ids held in two dense int vectors, so walking it (nodes(), NodeList()) reads one small
//   array instead of chasing a heap cell per node. Insert, move and erase are O(1).
// - Iterator rules (as std::list's): adding or moving nodes invalidates no iterator (a node added
//   after the iterator's position is visited, one added before is not; a moved node is followed
//   to its new place); erasing a node invalidates iterators at that node only. To erase while
//   walking, walk a NodeList() snapshot.
// - Names are unique per graph and stable (ONNX names where they exist; derived values get
//   suffixes such as `.f16`), so dumps are deterministic and testable with FileCheck.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/id_pool.h"
#include "compiler/ir/memory_plan.h"
#include "compiler/ir/training_config.h"
#include "compiler/ir/types.h"

namespace a8 {

class Graph;
class Node;

enum class ValueRole : uint8_t {
  kIntermediate,  // produced by a node
  kInput,         // a graph input (data fed each step)
  kParameter,     // a trainable or frozen weight with initial data
  kState,         // persistent non-parameter state (BatchNorm running stats, optimizer moments)
  kConstant,      // compile-time constant data (folded shapes, small tensors)
};
std::string_view ValueRoleName(ValueRole r);  // "input", "param", "state", "const", ""

struct Use {
  Node* node;
  int operand;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  // Dense per-graph number, given at creation and never reused (0, 1, 2, ...; erased values
  // leave gaps): passes index vectors by it instead of hashing pointers. Below
  // Graph::value_id_bound().
  int id() const { return id_; }
  const TensorType& type() const { return type_; }
  void set_type(TensorType t) { type_ = std::move(t); }
  DType dtype() const { return type_.dtype; }
  const std::vector<int64_t>& dims() const { return type_.dims; }
  ValueRole role() const { return role_; }
  void set_role(ValueRole r) { role_ = r; }

  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }
  bool is_graph_output() const { return graph_output_count_ > 0; }

  // Initial data for parameters, state and constants; null for intermediates and inputs, and for
  // parameters read from IR text whose data was elided.
  const TensorDataPtr& data() const { return data_; }
  void set_data(TensorDataPtr d) { data_ = std::move(d); }
  bool is_constant() const { return role_ == ValueRole::kConstant && data_ != nullptr; }

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  TensorType type_;
  ValueRole role_ = ValueRole::kIntermediate;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<Use> uses_;
  int graph_output_count_ = 0;
  TensorDataPtr data_;
  int id_ = 0;
  // A graph-level value's slot in Graph::graph_values_ (-1 otherwise): O(1) erase.
  int64_t graph_index_ = -1;
};

class Node : public AttributeGetters<Node> {
 public:
  const std::string& op() const { return op_; }
  // Dense per-graph number, given at creation and never reused (see Value::id()). Below
  // Graph::node_id_bound(). Not the position in the node order.
  int id() const { return id_; }
  // "" for the default ONNX domain (ai.onnx), "ai.onnx.preview.training", "a8" for internal ops.
  const std::string& domain() const { return domain_; }
  // Whether this is a800c's internal op `a8.<op>`.
  bool IsInternal(std::string_view op) const { return domain_ == "a8" && op_ == op; }
  // "Relu", "ai.onnx.preview.training.Adam", "a8.UnscaleCheckFinite": how dumps spell the op.
  std::string qualified_op() const;
  // The ONNX schema version (since_version) whose semantics this node has.
  int version() const { return version_; }
  void set_version(int v) { version_ = v; }
  // The ONNX node name (the importer names unnamed nodes), for errors and for mapping back.
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  // "node 'Relu_3' (Relu)": the WHERE of an error message.
  std::string Where() const;

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // Absent optional inputs are null.
  Value* input(int i) const { return i < num_inputs() ? inputs_[i] : nullptr; }
  bool has_input(int i) const { return input(i) != nullptr; }
  Value* output(int i) const { return outputs_[i]; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  void SetInput(int i, Value* v);  // grows the operand list with nulls when needed
  void AddInput(Value* v) { SetInput(num_inputs(), v); }
  void RemoveTrailingInputs(int new_count);

  const std::map<std::string, Attribute>& attrs() const { return attrs_; }
  bool has_attr(const std::string& n) const { return attrs_.count(n) > 0; }
  const Attribute* attr(const std::string& n) const;
  void SetAttr(const std::string& n, Attribute a) { attrs_[n] = std::move(a); }
  void RemoveAttr(const std::string& n) { attrs_.erase(n); }
  // GetInt, GetFloat, GetString, GetInts: AttributeGetters (attribute.h), as OpNode's.

  Graph* graph() const { return graph_; }

 private:
  friend class Graph;
  Graph* graph_ = nullptr;
  std::string op_, domain_, name_;
  int version_ = 0;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::map<std::string, Attribute> attrs_;
  int id_ = 0;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  // Opset imports: domain ("" = ai.onnx) -> version. Sorted, so printing is deterministic.
  std::map<std::string, int64_t> opsets;
  // Where the graph came from ("model.onnx"), for error messages.
  std::string source;
  // Graph outputs' types as the ONNX model declared them (filled by the importer; empty for
  // graphs built otherwise). Only outputs whose type has a shape get an entry; a dynamic dim is
  // -1. shape-inference checks the inferred output types against these.
  std::map<std::string, TensorType> declared_output_types;
  // Set by plan-memory (passes/memory/plan_memory.h); printed and parsed as the graph's trailing
  // `memory { ... }` block. Any pass that changes nodes after it must clear it.
  std::optional<MemoryPlan> memory_plan;
  // The graph's training step, once there is one: build-training creates it from the training
  // flags (the compile configuration, which the passes receive from the PassManager and which
  // is not stored here), the importer from a model's TrainingInfoProto; loss-scaling completes
  // it and lowering writes Plan.train from it. Not part of the IR text.
  std::optional<TrainingStep> train_step;

  // ---- values
  Value* AddInput(const std::string& name, TensorType type);
  Value* AddParameter(const std::string& name, TensorDataPtr data);
  Value* AddState(const std::string& name, TensorDataPtr data);
  Value* AddConstant(const std::string& name, TensorDataPtr data);
  // A graph-level value of any role; `data` may be null (elided).
  Value* AddGraphValue(const std::string& name, ValueRole role, TensorType type,
                       TensorDataPtr data);
  Value* FindValue(const std::string& name) const;
  // Renames `v` when `name` is free (returns false otherwise). For passes that replace a node
  // and want its outputs to keep their (ONNX) names.
  bool RenameValue(Value* v, const std::string& name);
  // `base` if unused, else `base.1`, `base.2`, ...
  std::string UniqueName(const std::string& base) const;
  // Graph-level values in creation order (inputs, parameters, state, constants).
  std::vector<Value*> graph_values() const;
  const std::vector<Value*>& inputs() const { return inputs_; }
  std::vector<Value*> parameters() const;  // role kParameter, in creation order
  const std::vector<Value*>& outputs() const { return outputs_; }
  void SetOutputs(std::vector<Value*> outs);
  void AddOutput(Value* v);
  void ReplaceOutput(int i, Value* v);
  // Erases a graph-level value with no uses that is not an output. O(1) amortized: the slot in
  // the creation-order list is cleared and the list compacted once half of it is cleared.
  void EraseGraphValue(Value* v);
  // One more than the largest Value::id() / Node::id() given so far: the size of a vector
  // indexed by id.
  int value_id_bound() const { return next_value_id_; }
  int node_id_bound() const { return next_node_id_; }

  // ---- training: state updates (ONNX TrainingInfoProto's update_binding)
  // After every step, graph-level value `target` (a parameter or state) takes the value of
  // `value`, the step's new value of it (an optimizer update, new running statistics). `value`
  // is kept alive to the end of the step like a graph output (it counts in is_graph_output()),
  // and ReplaceAllUsesWith follows it. Printed as `update %target = %value`.
  struct StateUpdate {
    Value* target;
    Value* value;
  };
  const std::vector<StateUpdate>& updates() const { return updates_; }
  void AddUpdate(Value* target, Value* value);

  // ---- nodes
  // Appends (or inserts before `before`) a node with outputs of the given names and types
  // (names are made unique).
  Node* AddNode(const std::string& op, const std::string& domain, std::vector<Value*> inputs,
                const std::vector<std::pair<std::string, TensorType>>& outputs,
                std::map<std::string, Attribute> attrs = {}, const std::string& node_name = "",
                Node* before = nullptr);
  // Erases a node whose outputs have no uses and are not graph outputs.
  void EraseNode(Node* n);
  // Moves `n` right before `before` (or to the end when null).
  void MoveNode(Node* n, Node* before);
  void ReplaceAllUsesWith(Value* from, Value* to);  // also in graph outputs

  // Program order, `for (Node* n : graph.nodes())`; see the iterator rules at the top.
  class NodeRange {
   public:
    struct Iter {
      const Graph* g;
      int id;  // -1: the end
      Node* operator*() const { return g->node_pool_.Get(id); }
      Iter& operator++() {
        id = g->next_[id];
        return *this;
      }
      bool operator==(const Iter& o) const { return id == o.id; }
      bool operator!=(const Iter& o) const { return id != o.id; }
    };
    explicit NodeRange(const Graph* g) : g_(g) {}
    Iter begin() const { return {g_, g_->head_}; }
    Iter end() const { return {g_, -1}; }

   private:
    const Graph* g_;
  };
  NodeRange nodes() const { return NodeRange(this); }
  // A snapshot, safe to iterate while erasing or inserting.
  std::vector<Node*> NodeList() const;
  size_t num_nodes() const { return num_nodes_; }
  // Replaces the node order (a permutation of the current nodes).
  void Reorder(const std::vector<Node*>& order);

 private:
  Value* NewValue(const std::string& name, TensorType type, ValueRole role);
  void RemoveUse(Value* v, Node* n, int operand);
  friend class Node;

  // Before `before` (the end when -1): links id into the order.
  void LinkBefore(int id, int before);
  void Unlink(int id);

  IdPool<Node> node_pool_;
  IdPool<Value> value_pool_;
  // The order: next_[id] / prev_[id] of a node id (-1 at either end), first and last node.
  std::vector<int> next_, prev_;
  int head_ = -1, tail_ = -1;
  size_t num_nodes_ = 0;
  // Keys view Value::name_ (a value never moves; every name change goes through the graph),
  // so a name is stored once.
  std::unordered_map<std::string_view, Value*> by_name_;
  void CompactGraphValues();

  // Inputs, params, state, constants in creation order; erased ones are null until compacted.
  std::vector<Value*> graph_values_;
  int64_t erased_graph_values_ = 0;  // null slots in graph_values_
  int next_value_id_ = 0;
  int next_node_id_ = 0;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<StateUpdate> updates_;
};

}  // namespace a8

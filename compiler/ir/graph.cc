#include "compiler/ir/graph.h"

#include <algorithm>
#include <cassert>

#include "base/enum_names.h"

namespace a8 {

std::string_view ValueRoleName(ValueRole r) {
  static constexpr EnumName<ValueRole> kNames[] = {{ValueRole::kIntermediate, ""},
                                                   {ValueRole::kInput, "input"},
                                                   {ValueRole::kParameter, "param"},
                                                   {ValueRole::kState, "state"},
                                                   {ValueRole::kConstant, "const"}};
  return NameIn(kNames, r, "?");
}

// ---- Node

std::string Node::qualified_op() const { return domain_.empty() ? op_ : domain_ + "." + op_; }

std::string Node::Where() const { return fmt::format("node '{}' ({})", name_, qualified_op()); }

void Node::SetInput(int i, Value* v) {
  if (i >= num_inputs()) inputs_.resize(i + 1, nullptr);
  if (inputs_[i]) graph_->RemoveUse(inputs_[i], this, i);
  inputs_[i] = v;
  if (v) v->uses_.push_back(Use{this, i});
}

void Node::RemoveTrailingInputs(int new_count) {
  while (num_inputs() > new_count) {
    SetInput(num_inputs() - 1, nullptr);
    inputs_.pop_back();
  }
}

const Attribute* Node::attr(const std::string& n) const {
  auto it = attrs_.find(n);
  return it == attrs_.end() ? nullptr : &it->second;
}

// ---- Graph: values

Value* Graph::NewValue(const std::string& name, TensorType type, ValueRole role) {
  Value* v = value_pool_.Create();
  // One hash lookup when the name is free (the common case); UniqueName's probe otherwise.
  v->name_ = name.empty() ? std::string("v") : name;
  if (!by_name_.try_emplace(v->name_, v).second) {
    v->name_ = UniqueName(v->name_);
    by_name_.emplace(v->name_, v);
  }
  v->type_ = std::move(type);
  v->role_ = role;
  v->id_ = next_value_id_++;
  assert(v == value_pool_.Get(v->id_));
  return v;
}

std::string Graph::UniqueName(const std::string& base) const {
  if (!by_name_.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = fmt::format("{}.{}", base, i);
    if (!by_name_.count(n)) return n;
  }
}

Value* Graph::AddGraphValue(const std::string& name, ValueRole role, TensorType type,
                            TensorDataPtr data) {
  Value* v = NewValue(name, std::move(type), role);
  v->data_ = std::move(data);
  v->graph_index_ = static_cast<int64_t>(graph_values_.size());
  graph_values_.push_back(v);
  if (role == ValueRole::kInput) inputs_.push_back(v);
  return v;
}

Value* Graph::AddInput(const std::string& name, TensorType type) {
  return AddGraphValue(name, ValueRole::kInput, std::move(type), nullptr);
}
Value* Graph::AddParameter(const std::string& name, TensorDataPtr data) {
  TensorType t = data->type;
  return AddGraphValue(name, ValueRole::kParameter, std::move(t), std::move(data));
}
Value* Graph::AddState(const std::string& name, TensorDataPtr data) {
  TensorType t = data->type;
  return AddGraphValue(name, ValueRole::kState, std::move(t), std::move(data));
}
Value* Graph::AddConstant(const std::string& name, TensorDataPtr data) {
  TensorType t = data->type;
  return AddGraphValue(name, ValueRole::kConstant, std::move(t), std::move(data));
}

Value* Graph::FindValue(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Value*> Graph::graph_values() const {
  if (erased_graph_values_ == 0) return graph_values_;
  std::vector<Value*> out;
  out.reserve(graph_values_.size() - erased_graph_values_);
  for (Value* v : graph_values_)
    if (v) out.push_back(v);
  return out;
}

std::vector<Value*> Graph::parameters() const {
  std::vector<Value*> out;
  for (Value* v : graph_values_)
    if (v && v->role() == ValueRole::kParameter) out.push_back(v);
  return out;
}

void Graph::SetOutputs(std::vector<Value*> outs) {
  for (Value* v : outputs_) --v->graph_output_count_;
  outputs_ = std::move(outs);
  for (Value* v : outputs_) ++v->graph_output_count_;
}

void Graph::AddOutput(Value* v) {
  outputs_.push_back(v);
  ++v->graph_output_count_;
}

bool Graph::RenameValue(Value* v, const std::string& name) {
  if (v->name_ == name) return true;
  if (by_name_.count(name)) return false;
  by_name_.erase(v->name_);
  v->name_ = name;
  by_name_.emplace(v->name_, v);
  return true;
}

void Graph::AddUpdate(Value* target, Value* value) {
  updates_.push_back({target, value});
  ++value->graph_output_count_;
}

void Graph::ReplaceOutput(int i, Value* v) {
  --outputs_[i]->graph_output_count_;
  outputs_[i] = v;
  ++v->graph_output_count_;
}

void Graph::EraseGraphValue(Value* v) {
  assert(v->uses_.empty() && !v->is_graph_output() && v->producer_ == nullptr);
  assert(v->graph_index_ >= 0 && graph_values_[v->graph_index_] == v);
  graph_values_[v->graph_index_] = nullptr;
  v->graph_index_ = -1;
  ++erased_graph_values_;
  if (erased_graph_values_ * 2 > static_cast<int64_t>(graph_values_.size())) CompactGraphValues();
  // Graph inputs are few: a scan is cheap.
  auto in = std::find(inputs_.begin(), inputs_.end(), v);
  if (in != inputs_.end()) inputs_.erase(in);
  by_name_.erase(v->name_);
  value_pool_.Destroy(v->id_);
}

void Graph::CompactGraphValues() {
  size_t kept = 0;
  for (Value* v : graph_values_) {
    if (v == nullptr) continue;
    v->graph_index_ = static_cast<int64_t>(kept);
    graph_values_[kept++] = v;
  }
  graph_values_.resize(kept);
  erased_graph_values_ = 0;
}

void Graph::RemoveUse(Value* v, Node* n, int operand) {
  auto& u = v->uses_;
  for (auto it = u.begin(); it != u.end(); ++it) {
    if (it->node == n && it->operand == operand) {
      u.erase(it);
      return;
    }
  }
  assert(false && "use not found");
}

// ---- Graph: nodes

Node* Graph::AddNode(const std::string& op, const std::string& domain, std::vector<Value*> inputs,
                     const std::vector<std::pair<std::string, TensorType>>& outputs,
                     std::map<std::string, Attribute> attrs, const std::string& node_name,
                     Node* before) {
  Node* raw = node_pool_.Create();
  raw->graph_ = this;
  raw->id_ = next_node_id_++;
  assert(raw == node_pool_.Get(raw->id_));
  raw->op_ = op;
  raw->domain_ = domain;
  raw->name_ = node_name;
  raw->attrs_ = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) raw->SetInput(static_cast<int>(i), inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* v = NewValue(outputs[i].first, outputs[i].second, ValueRole::kIntermediate);
    v->producer_ = raw;
    v->producer_output_ = static_cast<int>(i);
    raw->outputs_.push_back(v);
  }
  next_.push_back(-1);
  prev_.push_back(-1);
  LinkBefore(raw->id_, before ? before->id_ : -1);
  ++num_nodes_;
  return raw;
}

void Graph::LinkBefore(int id, int before) {
  const int after = before < 0 ? tail_ : prev_[before];
  next_[id] = before;
  prev_[id] = after;
  (after < 0 ? head_ : next_[after]) = id;
  (before < 0 ? tail_ : prev_[before]) = id;
}

void Graph::Unlink(int id) {
  const int p = prev_[id], n = next_[id];
  (p < 0 ? head_ : next_[p]) = n;
  (n < 0 ? tail_ : prev_[n]) = p;
}

void Graph::EraseNode(Node* n) {
  for (Value* v : n->outputs_) {
    assert(v->uses_.empty() && !v->is_graph_output());
    by_name_.erase(v->name_);
    value_pool_.Destroy(v->id_);
  }
  for (int i = 0; i < n->num_inputs(); ++i)
    if (n->inputs_[i]) RemoveUse(n->inputs_[i], n, i);
  // next_[id] keeps its value, but an iterator at an erased node is invalid all the same.
  const int id = n->id_;
  Unlink(id);
  --num_nodes_;
  node_pool_.Destroy(id);
}

void Graph::MoveNode(Node* n, Node* before) {
  if (n == before) return;
  Unlink(n->id_);
  LinkBefore(n->id_, before ? before->id_ : -1);
}

void Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Use> uses = from->uses_;
  for (const Use& u : uses) u.node->SetInput(u.operand, to);
  // Only a graph output or a state update's value is named below: skip the scans otherwise
  // (passes replace thousands of values; the scans made that quadratic).
  if (from->graph_output_count_ == 0) return;
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i] == from) ReplaceOutput(static_cast<int>(i), to);
  for (StateUpdate& u : updates_) {
    if (u.value == from) {
      --from->graph_output_count_;
      u.value = to;
      ++to->graph_output_count_;
    }
  }
}

std::vector<Node*> Graph::NodeList() const {
  std::vector<Node*> out;
  out.reserve(num_nodes_);
  for (int id = head_; id >= 0; id = next_[id]) out.push_back(node_pool_.Get(id));
  return out;
}

void Graph::Reorder(const std::vector<Node*>& order) {
  assert(order.size() == num_nodes_);
  int last = -1;
  for (Node* n : order) {
    const int id = n->id_;
    prev_[id] = last;
    (last < 0 ? head_ : next_[last]) = id;
    last = id;
  }
  if (last >= 0) next_[last] = -1;
  tail_ = last;
}

}  // namespace a8

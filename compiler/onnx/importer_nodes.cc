// ONNX -> IR: graph inputs (with --shape and --batch), initializers, Constant nodes and every
// other node, upgraded to the canonical version (importer_internal.h).
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>

#include "compiler/ir/op_table.h"
#include "compiler/onnx/import_decompose.h"
#include "compiler/onnx/import_upgrade.h"
#include "compiler/onnx/importer_internal.h"
#include "compiler/onnx/model_scan.h"
#include "compiler/onnx/torch_signature.h"

namespace a8::onnx_import {

namespace {

// "'N'" for a named dim, "(unnamed)" for one with neither a value nor a name.
std::string DimLabel(const onnx::TensorShapeProto::Dimension& d) {
  return d.dim_param().empty() ? "(unnamed)" : fmt::format("'{}'", d.dim_param());
}

}  // namespace

StatusOr<TensorType> Importer::BindInputType(const onnx::ValueInfoProto& vi,
                                             const std::map<std::string, int64_t>& named,
                                             std::vector<std::string>* unbound) {
  const std::string what = fmt::format("graph input '{}'", vi.name());
  A8_ASSIGN_OR_RETURN(const DType dtype, TensorElemType(vi, what));
  const onnx::TypeProto::Tensor& tt = vi.type().tensor_type();
  TensorType type{dtype, {}};
  auto given = opts_.shapes.find(vi.name());
  if (given != opts_.shapes.end()) {
    type.dims = given->second;
    for (size_t i = 0; i < type.dims.size(); ++i) {
      if (type.dims[i] < 0) {
        return InvalidInput("--shape {}: dim {} is negative ({})", vi.name(), i, type.dims[i]);
      }
    }
    if (tt.has_shape()) {
      if (tt.shape().dim_size() != type.rank()) {
        return InvalidInput("--shape {}: gives rank {}, but the model declares rank {}", vi.name(),
                            type.rank(), tt.shape().dim_size());
      }
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto& d = tt.shape().dim(i);
        if (d.has_dim_value() && d.dim_value() >= 0 && d.dim_value() != type.dims[i]) {
          return InvalidInput("--shape {}: dim {} is {}, but the model declares {}", vi.name(), i,
                              type.dims[i], d.dim_value());
        }
      }
    }
  } else {
    if (!tt.has_shape()) {
      return InvalidInput("{}: has no shape; give one with --shape={}:D0xD1x...", what, vi.name());
    }
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (d.has_dim_value()) {
        // ONNX dims are >= 0 (0: an empty tensor); a negative one is no way to say "dynamic".
        if (d.dim_value() < 0) {
          return InvalidInput("{}: dim {} is {}; a dim is a size >= 0 or a symbolic name", what, i,
                              d.dim_value());
        }
        type.dims.push_back(d.dim_value());
        continue;
      }
      auto by_name = d.dim_param().empty() ? named.end() : named.find(d.dim_param());
      if (by_name != named.end()) {
        type.dims.push_back(by_name->second);
      } else if (i == 0 && opts_.batch) {
        type.dims.push_back(*opts_.batch);
      } else {
        type.dims.push_back(1);  // a placeholder: the caller fails on any unbound dim
        const std::string flags =
            d.dim_param().empty()
                ? fmt::format("{}--shape={}:D0xD1x...", i == 0 ? "--batch=SIZE or " : "", vi.name())
                : fmt::format("{}--dim={}=SIZE or --shape={}:D0xD1x...",
                              i == 0 ? "--batch=SIZE, " : "", d.dim_param(), vi.name());
        unbound->push_back(
            fmt::format("input '{}' dim {} {} (set {})", vi.name(), i, DimLabel(d), flags));
      }
    }
  }
  auto n = type.NumElements();
  if (!n.ok()) return n.status().WithContext(what);
  return type;
}

Status Importer::CheckInputFlags() {
  std::vector<std::string> names;  // the graph inputs that are data, for the messages
  std::set<std::string> params;    // every symbolic dim name of those inputs
  for (const onnx::ValueInfoProto& vi : graph_.input()) {
    if (initializers_.count(vi.name())) continue;
    names.push_back(vi.name());
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) continue;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value() && !d.dim_param().empty()) params.insert(d.dim_param());
    }
  }
  auto is_input = [&](const std::string& name) {
    return input_decls_.count(name) && !initializers_.count(name);
  };
  for (const auto& [name, dims] : opts_.shapes) {
    if (!is_input(name)) {
      return InvalidInput("--shape {}: the model has no input '{}' (inputs: {})", name, name,
                          fmt::join(names, ", "));
    }
  }
  for (const auto& [name, data] : opts_.bound) {
    if (!is_input(name)) {
      return InvalidInput("--bind {}: the model has no input '{}' (inputs: {})", name, name,
                          fmt::join(names, ", "));
    }
    if (opts_.shapes.count(name)) {
      return InvalidInput("--bind {}: the input also has a --shape; give one or the other", name);
    }
  }
  for (const auto& [name, value] : opts_.dims) {
    if (!params.count(name)) {
      return InvalidInput("--dim {}: no input has a dim named '{}' ({})", name, name,
                          params.empty() ? std::string("the inputs have no named dims")
                                         : fmt::format("named dims: {}", fmt::join(params, ", ")));
    }
    if (value < 0) return InvalidInput("--dim {}: the size is negative ({})", name, value);
  }
  return Status::Ok();
}

Status Importer::ImportBoundInput(const onnx::ValueInfoProto& vi, TensorDataPtr data) {
  const std::string what = fmt::format("--bind {}", vi.name());
  A8_ASSIGN_OR_RETURN(const DType dtype,
                      TensorElemType(vi, fmt::format("graph input '{}'", vi.name())));
  if (data->type.dtype == DType::kU16 && dtype == DType::kBF16) {
    // .npy has no bf16: a <u2 array holds a bf16 input's bits (as a800c-run's --input reads it).
    auto bits = std::make_shared<TensorData>(*data);
    bits->type.dtype = DType::kBF16;
    data = std::move(bits);
  }
  if (data->type.dtype != dtype) {
    return InvalidInput("{}: the array is {}, the model declares {}", what,
                        DTypeName(data->type.dtype), DTypeName(dtype));
  }
  const onnx::TypeProto::Tensor& tt = vi.type().tensor_type();
  if (tt.has_shape()) {
    if (tt.shape().dim_size() != data->type.rank()) {
      return InvalidInput("{}: the array has rank {}, the model declares rank {}", what,
                          data->type.rank(), tt.shape().dim_size());
    }
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (d.has_dim_value() && d.dim_value() != data->type.dims[i]) {
        return InvalidInput("{}: dim {} of the array is {}, the model declares {}", what, i,
                            data->type.dims[i], d.dim_value());
      }
    }
  }
  RecordGraphValue(g_->AddConstant(vi.name(), std::move(data)));
  return Status::Ok();
}

Status Importer::ImportInputs() {
  A8_RETURN_IF_ERROR(CheckInputFlags());
  // Names bound by --dim, then the names of leading dims that --batch binds (so that a batch dim
  // named 'N' is N in every input that uses the name).
  std::map<std::string, int64_t> named = opts_.dims;
  if (opts_.batch) {
    for (const onnx::ValueInfoProto& vi : graph_.input()) {
      if (initializers_.count(vi.name()) || opts_.shapes.count(vi.name()) ||
          opts_.bound.count(vi.name()) || !vi.type().has_tensor_type()) {
        continue;
      }
      const auto& tt = vi.type().tensor_type();
      if (tt.has_shape() && tt.shape().dim_size() > 0 && !tt.shape().dim(0).has_dim_value() &&
          !tt.shape().dim(0).dim_param().empty()) {
        named.emplace(tt.shape().dim(0).dim_param(), *opts_.batch);
      }
    }
  }
  std::vector<std::string> unbound;
  for (const onnx::ValueInfoProto& vi : graph_.input()) {
    // An input that also has an initializer is a weight with a default (ONNX IR < 4 lists every
    // initializer as an input): it becomes a parameter in ImportInitializers.
    if (initializers_.count(vi.name())) continue;
    auto bound = opts_.bound.find(vi.name());
    if (bound != opts_.bound.end()) {
      A8_RETURN_IF_ERROR(ImportBoundInput(vi, bound->second));
      continue;
    }
    A8_ASSIGN_OR_RETURN(TensorType type, BindInputType(vi, named, &unbound));
    RecordGraphValue(g_->AddInput(vi.name(), std::move(type)));
  }
  if (!unbound.empty()) {
    return InvalidInput("a800c needs static shapes, and {} not bound: {}",
                        unbound.size() == 1 ? "this dim is" : "these dims are",
                        fmt::join(unbound, "; "));
  }
  return Status::Ok();
}

Status Importer::ImportInitializers() {
  // Which initializers are used only as attribute-like operands (and are not graph outputs).
  std::map<std::string, bool> only_attribute_like;
  for (const onnx::NodeProto& n : graph_.node()) {
    for (int i = 0; i < n.input_size(); ++i) {
      if (!initializers_.count(n.input(i))) continue;
      const bool attr_like = IsAttributeLikeOperand(NormalizeDomain(n.domain()), n.op_type(), i);
      auto [it, inserted] = only_attribute_like.emplace(n.input(i), attr_like);
      if (!inserted) it->second = it->second && attr_like;
    }
  }
  for (const onnx::ValueInfoProto& vi : graph_.output()) only_attribute_like[vi.name()] = false;
  // What subgraphs (If, Loop, Scan bodies) read is data.
  std::set<std::string> read_in_subgraphs;
  for (const onnx::NodeProto& n : graph_.node()) SubgraphReads(n, &read_in_subgraphs);
  for (const std::string& name : read_in_subgraphs) {
    if (initializers_.count(name)) only_attribute_like[name] = false;
  }
  // The dynamo exporter's BUFFERs (torch_signature.h) are module state, not parameters: constant,
  // but for BatchNormalization's running statistics, which training updates as state.
  std::set<std::string> buffers = TorchExportBuffers(graph_);
  for (const onnx::NodeProto& n : graph_.node()) {
    if (n.op_type() != "BatchNormalization" || !NormalizeDomain(n.domain()).empty()) continue;
    for (const std::string& in : n.input()) buffers.erase(in);
  }
  if (opts_.identity_aliases != nullptr) {
    for (const onnx::NodeProto& n : graph_.node()) {
      if (n.op_type() == "Identity" && NormalizeDomain(n.domain()).empty() && n.input_size() == 1 &&
          n.output_size() == 1 && initializers_.count(n.input(0)) > 0)
        (*opts_.identity_aliases)[n.input(0)].push_back(n.output(0));
    }
  }

  for (int i = 0; i < graph_.initializer_size(); ++i) {
    const onnx::TensorProto& t = graph_.initializer(i);
    const std::string what = fmt::format("initializer '{}'", t.name());
    const std::string_view* raw = nullptr;
    if (raw_outside_ != nullptr && static_cast<size_t>(i) < raw_outside_->size() &&
        (*raw_outside_)[i].has_value()) {
      raw = &*(*raw_outside_)[i];
    }
    A8_ASSIGN_OR_RETURN(auto data, TensorFromOnnx(t, what, model_dir_, raw, raw_owner_));
    if (raw != nullptr && !data->bytes.is_view()) DropMappedPages(*raw);  // copied: resident once
    if (release_float_data_ != nullptr && IsFloat(data->type.dtype)) {
      std::string().swap(*release_float_data_->mutable_initializer(i)->mutable_raw_data());
    }
    auto decl = input_decls_.find(t.name());
    if (decl != input_decls_.end() && decl->second->type().has_tensor_type()) {
      const auto& tt = decl->second->type().tensor_type();
      if (tt.elem_type() != DTypeToOnnx(data->type.dtype)) {
        return InvalidInput(
            "{}: the graph input of the same name declares element type {}, the "
            "data is {}",
            what, OnnxElemTypeName(tt.elem_type()), DTypeName(data->type.dtype));
      }
    }
    auto use = only_attribute_like.find(t.name());
    const bool constant = !IsFloat(data->type.dtype) ||
                          (use != only_attribute_like.end() && use->second) ||
                          buffers.count(t.name()) > 0;
    Value* v = constant ? g_->AddConstant(t.name(), std::move(data))
                        : g_->AddParameter(t.name(), std::move(data));
    RecordGraphValue(v);
  }
  return Status::Ok();
}

Status Importer::ImportConstantNode(const onnx::NodeProto& n, const std::string& where) {
  if (n.output_size() != 1 || n.output(0).empty()) {
    return InvalidInput("{}: a Constant has exactly one output", where);
  }
  if (n.attribute_size() != 1) {
    return InvalidInput("{}: a Constant has exactly one value attribute, got {}", where,
                        n.attribute_size());
  }
  const onnx::AttributeProto& a = n.attribute(0);
  const std::string& key = a.name();
  if (key == "value_string" || key == "value_strings" || key == "sparse_value") {
    return Unsupported("{}: attribute '{}': {} constants are not supported", where, key,
                       key == "sparse_value" ? "sparse" : "string");
  }
  A8_ASSIGN_OR_RETURN(Attribute attr, AttributeFromOnnx(a, where, model_dir_));
  std::shared_ptr<TensorData> data;
  if (key == "value" && attr.kind() == AttrKind::kTensor) {
    data = std::make_shared<TensorData>(*attr.tensor());
  } else if (key == "value_float" && attr.kind() == AttrKind::kFloat) {
    data = TensorData::FromFloats({attr.f()}, {});
  } else if (key == "value_floats" && attr.kind() == AttrKind::kFloats) {
    data = TensorData::FromFloats(attr.floats(), {static_cast<int64_t>(attr.floats().size())});
  } else if (key == "value_int" && attr.kind() == AttrKind::kInt) {
    data = TensorData::FromInt64s({attr.i()}, {});
  } else if (key == "value_ints" && attr.kind() == AttrKind::kInts) {
    data = TensorData::FromInt64s(attr.ints(), {static_cast<int64_t>(attr.ints().size())});
  } else {
    return InvalidInput("{}: attribute '{}' of kind {} is not a Constant value", where, key,
                        AttrKindName(attr.kind()));
  }
  RecordGraphValue(g_->AddConstant(n.output(0), std::move(data)));
  return Status::Ok();
}

Status Importer::UnreadOutputs(int index, int from, const char* why) const {
  const onnx::NodeProto& n = *nodes_[index];
  for (int i = from; i < n.output_size(); ++i) {
    const std::string& out = n.output(i);
    if (out.empty()) continue;
    for (const onnx::ValueInfoProto& g : graph_.output()) {
      if (g.name() == out) {
        return Unsupported("{}: output '{}' is a graph output; {}",
                           NodeWhere(node_names_[index], "", n.op_type()), out, why);
      }
    }
    for (int k = index + 1; k < static_cast<int>(nodes_.size()); ++k) {
      for (const std::string& in : nodes_[k]->input()) {
        if (in != out) continue;
        return Unsupported("{}: output '{}' is read by node '{}'; {}",
                           NodeWhere(node_names_[index], "", n.op_type()), out, node_names_[k],
                           why);
      }
    }
  }
  return Status::Ok();
}

Status Importer::ImportNode(int index) {
  const onnx::NodeProto& n = *nodes_[index];
  const std::string domain = NormalizeDomain(n.domain());
  const std::string& name = node_names_[index];
  const std::string where = NodeWhere(name, domain, n.op_type());
  // ai.onnx.preview's FlexAttention is imported as a decomposition, as default-domain ops are.
  const bool preview_op = domain == kPreviewDomain && IsDecomposedPreviewOp(n.op_type());
  if (domain != "" && domain != kTrainingDomain && !preview_op) {
    return Unsupported("{}: ops of domain '{}' are not supported (a800c supports ai.onnx and {})",
                       where, n.domain(), kTrainingDomain);
  }
  if (!preview_op && !g_->opsets.count(domain)) {
    return InvalidInput("{}: domain '{}' is not in the model's opset_import", where, n.domain());
  }
  if (domain.empty() && n.op_type() == "SequenceAt") return ImportSequenceAt(index, where);
  std::vector<Value*> inputs;
  for (int i = 0; i < n.input_size(); ++i) {
    const std::string& in = n.input(i);
    if (in.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    if (auto seq = sequences_.find(in); seq != sequences_.end()) {
      return Unsupported(
          "{}: input '{}' is the sequence made by {}; a800c takes a sequence only through "
          "SequenceAt at a constant position",
          where, in, seq->second.where);
    }
    Value* v = g_->FindValue(in);
    if (!v) {
      if (producer_.count(in)) {
        return InvalidInput("{}: input '{}' is used before it is produced (cycle or wrong order)",
                            where, in);
      }
      return InvalidInput(
          "{}: input {} '{}' is not produced by any node, graph input or "
          "initializer",
          where, i, in);
    }
    inputs.push_back(v);
  }
  if (domain.empty() && n.op_type() == "Constant") return ImportConstantNode(n, where);
  // Attributes first, so that a subgraph is reported as such even on an unsupported op (If).
  std::map<std::string, Attribute> attrs;
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (preview_op && a.has_g()) {
      // score_mod and prob_mod were inlined before (import_control_flow.h).
      return InvalidInput("{}: attribute '{}' is a graph the importer did not inline", where,
                          a.name());
    }
    A8_ASSIGN_OR_RETURN(Attribute attr, AttributeFromOnnx(a, where, model_dir_));
    if (!attrs.emplace(a.name(), std::move(attr)).second) {
      return InvalidInput("{}: attribute '{}' is given twice", where, a.name());
    }
  }

  if (domain.empty() && n.op_type() == "SplitToSequence") {
    return ImportSplitToSequence(index, where, inputs, attrs);
  }
  if ((domain.empty() || preview_op) && IsDecomposedOp(n.op_type())) {
    return ImportDecomposedNode(index, where, std::move(inputs), std::move(attrs));
  }
  const OpDef* def = FindOp(domain, n.op_type());
  if (!def) {
    if (OnnxKnowsOp(domain, n.op_type())) {
      return Unsupported("{}: op '{}' of {} is not supported by a800c", where, n.op_type(),
                         DomainName(domain));
    }
    return InvalidInput("{}: unknown op '{}' in domain {}", where, n.op_type(), DomainName(domain));
  }
  auto version = ResolveOpVersion(*def, g_->opsets.at(domain));
  if (!version.ok()) return version.status().WithContext(where);

  // Trailing empty outputs are absent; an empty one in the middle gets a fresh name.
  int num_outputs = n.output_size();
  while (num_outputs > 0 && n.output(num_outputs - 1).empty()) --num_outputs;
  if (domain.empty() && n.op_type() == "BatchNormalization" && *version < 14 && num_outputs > 3) {
    A8_RETURN_IF_ERROR(
        UnreadOutputs(index, 3, "BatchNormalization-14 has no saved_mean/saved_var"));
    num_outputs = 3;  // the training form's saved_mean and saved_var (import_upgrade.h)
  }
  std::vector<std::pair<std::string, TensorType>> outputs;
  std::vector<const onnx::TypeProto*> declared;
  for (int i = 0; i < num_outputs; ++i) {
    const std::string& out = n.output(i);
    const std::string out_name = out.empty() ? FreshName(fmt::format("{}.out{}", name, i)) : out;
    auto vi = value_info_.find(out);
    const onnx::TypeProto* type = vi == value_info_.end() ? nullptr : vi->second;
    std::optional<TensorType> t = type ? StaticType(*type) : std::nullopt;
    outputs.emplace_back(out_name, t.value_or(TensorType{}));
    declared.push_back(type);
  }
  Node* node = g_->AddNode(n.op_type(), domain, inputs, outputs, std::move(attrs), name);
  for (int i = 0; i < num_outputs; ++i) {
    if (declared[i]) RecordDeclaredType(node->output(i), *declared[i]);
  }

  A8_RETURN_IF_ERROR(UpgradeNode(node, *version, def->canonical, MakeUpgradeContext(index)));
  A8_RETURN_IF_ERROR(CheckNodeAgainstOpDef(*node, *def));
  node->set_version(def->canonical);
  return Status::Ok();
}

UpgradeContext Importer::MakeUpgradeContext(int index) {
  UpgradeContext ctx;
  ctx.graph = g_.get();
  ctx.fresh_name = [this](const std::string& base) { return FreshName(base); };
  ctx.known_rank = [this, index](const Value* v) -> std::optional<int64_t> {
    auto it = known_rank_.find(v);
    if (it != known_rank_.end()) return it->second;
    return OnnxInferredRank(v->name(), index);
  };
  ctx.known_dtype = [this](const Value* v) -> std::optional<DType> {
    auto it = known_dtype_.find(v);
    if (it == known_dtype_.end()) return std::nullopt;
    return it->second;
  };
  return ctx;
}

Status Importer::ImportDecomposedNode(int index, const std::string& where,
                                      std::vector<Value*> inputs,
                                      std::map<std::string, Attribute> attrs) {
  const onnx::NodeProto& n = *nodes_[index];
  std::optional<int> version;
  if (NormalizeDomain(n.domain()) == kPreviewDomain) {
    // The ai.onnx.preview ops decomposed here have one version, 1 (the importer keeps no opset
    // of that domain: the graph it makes has only default-domain nodes).
    for (const onnx::OperatorSetIdProto& o : model_.opset_import()) {
      if (o.domain() == kPreviewDomain && o.version() >= 1) version = 1;
    }
    if (!version) {
      return InvalidInput(
          "{}: domain '{}' has no version of at least 1 in the model's "
          "opset_import",
          where, kPreviewDomain);
    }
  } else {
    const int64_t opset = g_->opsets.at("");
    version = OnnxSinceVersion("", n.op_type(), opset);
    if (!version) {
      return InvalidInput("{}: {} is not defined at opset {} of ai.onnx", where, n.op_type(),
                          opset);
    }
  }
  DecomposeRequest req;
  req.op = n.op_type();
  req.version = *version;
  req.name = node_names_[index];
  req.where = where;
  req.inputs = std::move(inputs);
  req.attrs = std::move(attrs);
  req.fresh_name = [this](const std::string& base) { return FreshName(base); };
  const UpgradeContext ctx = MakeUpgradeContext(index);
  req.known_rank = ctx.known_rank;
  // An intermediate the model does not declare: what onnx's inference says (the zero point of
  // a QuantizeLinear computed by a Cast, in DynamicQuantizeLinear's expansion). Only here, not
  // for every node's upgrade, as each new node index reruns onnx's inference.
  req.known_dtype = [this, index, known = ctx.known_dtype](const Value* v) -> std::optional<DType> {
    std::optional<DType> t = known(v);
    if (!t && v->role() == ValueRole::kIntermediate) t = OnnxInferredDType(v->name(), index);
    return t;
  };
  req.note_rank = [this](const Value* v, int64_t rank) { known_rank_[v] = rank; };
  req.known_dims = [this, index](const Value* v) { return KnownDims(v, index); };
  int num_outputs = n.output_size();
  while (num_outputs > 0 && n.output(num_outputs - 1).empty()) --num_outputs;
  for (int i = 0; i < num_outputs; ++i) {
    // An absent optional output before a present one (Attention's qk_matmul_output without the
    // present key and value) comes with an empty name: the decomposition skips it.
    // An absent output 0 (RNN's Y when only Y_h is wanted) gets a fresh name: the decomposition
    // makes it, and dead-code elimination drops it.
    if (n.output(i).empty()) {
      req.outputs.emplace_back(i == 0 ? FreshName(fmt::format("{}.out0", req.name)) : "",
                               TensorType{});
      continue;
    }
    auto vi = value_info_.find(n.output(i));
    std::optional<TensorType> t = vi == value_info_.end() ? std::nullopt : StaticType(*vi->second);
    req.outputs.emplace_back(n.output(i), t.value_or(TensorType{}));
  }
  A8_ASSIGN_OR_RETURN(std::vector<DecomposedNode> nodes, Decompose(*g_, std::move(req)));
  return FinishMadeNodes(index, where, nodes);
}

std::optional<std::vector<int64_t>> Importer::KnownDims(const Value* v, int index) {
  std::optional<std::vector<int64_t>> dims;
  if (v->data() != nullptr) {
    dims = v->data()->type.dims;
  } else if (v->role() == ValueRole::kInput || v->role() == ValueRole::kParameter) {
    dims = v->type().dims;
  } else if (auto vi = value_info_.find(v->name()); vi != value_info_.end()) {
    if (std::optional<TensorType> t = StaticType(*vi->second)) dims = t->dims;
  }
  if (!dims && v->role() == ValueRole::kIntermediate) dims = OnnxInferredDims(v->name(), index);
  if (dims && std::any_of(dims->begin(), dims->end(), [](int64_t d) { return d < 0; }))
    return std::nullopt;
  return dims;
}

Status Importer::FinishMadeNodes(int index, const std::string& where,
                                 const std::vector<DecomposedNode>& nodes) {
  for (const DecomposedNode& d : nodes) {
    const OpDef* def = FindOp(d.node->domain(), d.node->op());
    if (def == nullptr) return Internal("{}: decomposed into unknown op {}", where, d.node->op());
    A8_RETURN_IF_ERROR(
        UpgradeNode(d.node, d.since_version, def->canonical, MakeUpgradeContext(index)));
    A8_RETURN_IF_ERROR(CheckNodeAgainstOpDef(*d.node, *def));
    d.node->set_version(def->canonical);
  }
  return Status::Ok();
}

}  // namespace a8::onnx_import

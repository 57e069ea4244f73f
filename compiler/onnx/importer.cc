// ONNX -> IR: the model checks and the graph (see importer.h); import_file.cc reads the bytes.
#include "compiler/onnx/importer.h"

#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string_view>

#include "compiler/ir/op_table.h"
#include "compiler/onnx/import_training.h"
#include "compiler/onnx/import_upgrade.h"
#include "compiler/onnx/onnx_util.h"

namespace a8 {
namespace {

// Newest IR version a800c reads (onnx 1.23). Newer fields would be silently dropped by the
// protobuf classes of Debian's libonnx, so a newer model is refused instead.
constexpr int64_t kMaxIrVersion = 14;
constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";

std::string DomainName(std::string_view domain) {
  return domain.empty() ? "ai.onnx" : std::string(domain);
}

std::string NormalizeDomain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

std::string NodeWhere(const std::string& name, const std::string& domain, const std::string& op) {
  return fmt::format("node '{}' ({})", name, domain.empty() ? op : domain + "." + op);
}

// Ops that onnx defines (its full history, onnx_versions.inc): an op there but not in a800c's
// table is "not supported", anything else is "unknown".
bool OnnxKnowsOp(std::string_view domain, std::string_view name) {
  struct Known {
    std::string_view domain, name;
  };
#define A8_ONNX_OP(domain, name, ...) Known{domain, name},
#define A8_ONNX_NEWEST(domain, opset)
  static const Known kKnown[] = {
#include "compiler/ir/onnx_versions.inc"
  };
#undef A8_ONNX_OP
#undef A8_ONNX_NEWEST
  for (const Known& k : kKnown) {
    if (k.domain == domain && k.name == name) return true;
  }
  return false;
}

// Operands that carry what older opsets had as attributes (shapes, axes, bounds, rates). A float
// initializer used only there is a constant, not a trainable parameter.
bool IsAttributeLikeOperand(const std::string& domain, const std::string& op, int index) {
  if (domain == kTrainingDomain) {
    return (op == "Adam" || op == "Adagrad" || op == "Momentum") && (index == 0 || index == 1);
  }
  if (!domain.empty()) return false;
  if (op.rfind("Reduce", 0) == 0) return index == 1;
  if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "Unsqueeze" || op == "Squeeze" ||
      op == "Split" || op == "Upsample" || op == "TopK" || op == "CumSum" || op == "Trilu") {
    return index == 1;
  }
  if (op == "Slice") return index >= 1 && index <= 4;
  if (op == "Pad" || op == "Resize") return index >= 1 && index <= 3;
  if (op == "Clip" || op == "Dropout" || op == "OneHot") return index == 1 || index == 2;
  if (op == "ConstantOfShape") return index == 0;
  if (op == "Range") return index <= 2;
  return false;
}

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string source, std::string model_dir,
           const ImportOptions& opts)
      : model_(model),
        graph_(model.graph()),
        source_(std::move(source)),
        model_dir_(std::move(model_dir)),
        opts_(opts) {}

  // Float initializers' bytes are freed from `graph` (the graph being imported) as soon as the IR
  // holds them, so that a model with its weights inside the protobuf is not held twice.
  void ReleaseFloatDataFrom(onnx::GraphProto* graph) { release_float_data_ = graph; }

  StatusOr<std::unique_ptr<Graph>> Run() {
    g_ = std::make_unique<Graph>();
    g_->source = source_;
    A8_RETURN_IF_ERROR(CheckModel());
    g_->name = graph_.name();
    A8_RETURN_IF_ERROR(CollectNames());
    A8_RETURN_IF_ERROR(ImportInputs());
    A8_RETURN_IF_ERROR(ImportInitializers());
    for (int i = 0; i < graph_.node_size(); ++i) A8_RETURN_IF_ERROR(ImportNode(i));
    A8_RETURN_IF_ERROR(ImportOutputs());
    return std::move(g_);
  }

 private:
  Status CheckModel();
  Status CollectNames();
  StatusOr<TensorType> BindInputType(const onnx::ValueInfoProto& vi);
  Status ImportInputs();
  Status ImportInitializers();
  Status ImportNode(int index);
  Status ImportConstantNode(const onnx::NodeProto& n, const std::string& where);
  Status ImportOutputs();

  void RecordDeclaredType(const Value* v, const onnx::TypeProto& type) {
    if (!type.has_tensor_type()) return;
    const auto& tt = type.tensor_type();
    if (tt.has_shape()) known_rank_[v] = tt.shape().dim_size();
    auto dtype = DTypeFromOnnx(tt.elem_type());
    if (dtype.ok()) known_dtype_[v] = *dtype;
  }
  void RecordGraphValue(const Value* v) {
    known_rank_[v] = v->type().rank();
    known_dtype_[v] = v->dtype();
  }
  // The fully static type `type` declares, if it does.
  static std::optional<TensorType> StaticType(const onnx::TypeProto& type) {
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
    auto dtype = DTypeFromOnnx(type.tensor_type().elem_type());
    if (!dtype.ok()) return std::nullopt;
    TensorType t{*dtype, {}};
    for (const auto& d : type.tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
      t.dims.push_back(d.dim_value());
    }
    if (!t.NumElements().ok()) return std::nullopt;
    return t;
  }
  // The rank onnx's own shape inference gives a value, for the few upgrades that need a rank the
  // model does not declare (Softmax-11). Runs on demand on the nodes before `upto`, on a copy
  // without float weights.
  std::optional<int64_t> OnnxInferredRank(const std::string& name, int upto);

  // A value name unused by the model and the graph: `base`, `base.1`, ...
  std::string FreshName(const std::string& base) {
    std::string n = base;
    for (int i = 1; onnx_names_.count(n) || g_->FindValue(n); ++i)
      n = fmt::format("{}.{}", base, i);
    return n;
  }

  const onnx::ModelProto& model_;
  const onnx::GraphProto& graph_;
  onnx::GraphProto* release_float_data_ = nullptr;
  const std::string source_;
  const std::string model_dir_;
  const ImportOptions& opts_;
  std::unique_ptr<Graph> g_;

  std::set<std::string> onnx_names_;     // every value name in the model
  std::map<std::string, int> producer_;  // node output -> node index
  std::set<std::string> initializers_;
  std::map<std::string, const onnx::ValueInfoProto*> input_decls_;
  std::map<std::string, const onnx::TypeProto*> value_info_;  // intermediates' declared types
  std::vector<std::string> node_names_;
  std::map<const Value*, int64_t> known_rank_;
  std::map<const Value*, DType> known_dtype_;
  std::map<std::string, int64_t> onnx_ranks_;  // from onnx's inference over nodes [0, upto)
  int onnx_ranks_upto_ = 0;
};

std::optional<int64_t> Importer::OnnxInferredRank(const std::string& name, int upto) {
  if (upto > onnx_ranks_upto_) {
    // Only the nodes before `upto`: they already passed a800c's checks (known ops, arity,
    // defined inputs), so onnx's inference never sees a node the importer would reject.
    onnx::ModelProto copy;
    copy.set_ir_version(model_.ir_version());
    *copy.mutable_opset_import() = model_.opset_import();
    onnx::GraphProto* g = copy.mutable_graph();
    *g->mutable_input() = graph_.input();
    *g->mutable_value_info() = graph_.value_info();
    for (const onnx::TensorProto& t : graph_.initializer()) {
      onnx::TensorProto* c = g->add_initializer();
      auto dtype = DTypeFromOnnx(t.data_type());
      if (dtype.ok() && IsFloat(*dtype)) {
        // Shapes need only the dims of float weights; skip copying their data.
        c->set_name(t.name());
        c->set_data_type(t.data_type());
        *c->mutable_dims() = t.dims();
        c->set_raw_data(std::string());
      } else {
        *c = t;
      }
    }
    for (int i = 0; i < upto; ++i) *g->add_node() = graph_.node(i);
    try {
      onnx::shape_inference::InferShapes(copy);
    } catch (const std::exception&) {
      // What it inferred before failing is still usable; a rank it did not find stays unknown
      // and the caller reports that.
    }
    onnx_ranks_.clear();
    for (const onnx::ValueInfoProto& vi : g->value_info()) {
      if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) {
        onnx_ranks_[vi.name()] = vi.type().tensor_type().shape().dim_size();
      }
    }
    onnx_ranks_upto_ = upto;
  }
  auto it = onnx_ranks_.find(name);
  if (it == onnx_ranks_.end()) return std::nullopt;
  return it->second;
}

Status Importer::CheckModel() {
  if (!model_.has_ir_version() || model_.ir_version() <= 0) {
    return InvalidInput("ir_version is missing or invalid ({}); is this an ONNX model?",
                        model_.ir_version());
  }
  if (model_.ir_version() > kMaxIrVersion) {
    return Unsupported("ir_version {} is newer than a800c reads (at most {})", model_.ir_version(),
                       kMaxIrVersion);
  }
  if (!model_.has_graph()) return InvalidInput("the model has no graph");
  for (const onnx::OperatorSetIdProto& o : model_.opset_import()) {
    const std::string domain = NormalizeDomain(o.domain());
    // Exporters often list domains no node uses (ai.onnx.ml); only a node of another domain is
    // an error (ImportNode).
    if (domain != "" && domain != kTrainingDomain) continue;
    if (g_->opsets.count(domain)) {
      return InvalidInput("opset_import: domain {} is listed twice", DomainName(domain));
    }
    if (o.version() < 1) {
      return InvalidInput("opset_import: version {} of {} is not a valid opset", o.version(),
                          DomainName(domain));
    }
    if (o.version() > NewestKnownOpset(domain)) {
      return Unsupported("opset_import: opset {} of {} is newer than the newest a800c knows ({})",
                         o.version(), DomainName(domain), NewestKnownOpset(domain));
    }
    g_->opsets[domain] = o.version();
  }
  // The default domain needs a version only when a node uses it (ONNX's optimizer tests import
  // ai.onnx.preview.training alone).
  bool uses_default_domain = false;
  for (const onnx::NodeProto& n : graph_.node()) {
    uses_default_domain |= NormalizeDomain(n.domain()).empty();
  }
  if (!g_->opsets.count("") && uses_default_domain) {
    return InvalidInput("opset_import: no version for the default domain ai.onnx");
  }
  if (graph_.sparse_initializer_size() > 0) {
    return Unsupported("initializer '{}': sparse initializers are not supported",
                       graph_.sparse_initializer(0).values().name());
  }
  if (opts_.batch && *opts_.batch < 1) {
    return InvalidInput("--batch must be at least 1, got {}", *opts_.batch);
  }
  return Status::Ok();
}

Status Importer::CollectNames() {
  for (const onnx::ValueInfoProto& vi : graph_.input()) {
    if (vi.name().empty()) return InvalidInput("a graph input has an empty name");
    if (!input_decls_.emplace(vi.name(), &vi).second) {
      return InvalidInput("graph input '{}' is declared twice", vi.name());
    }
    onnx_names_.insert(vi.name());
  }
  for (const onnx::TensorProto& t : graph_.initializer()) {
    if (t.name().empty()) return InvalidInput("an initializer has an empty name");
    if (!initializers_.insert(t.name()).second) {
      return InvalidInput("initializer '{}' is declared twice", t.name());
    }
    onnx_names_.insert(t.name());
  }
  std::set<std::string> explicit_names;
  for (const onnx::NodeProto& n : graph_.node()) {
    if (!n.name().empty()) explicit_names.insert(n.name());
  }
  for (int i = 0; i < graph_.node_size(); ++i) {
    const onnx::NodeProto& n = graph_.node(i);
    std::string name = n.name();
    if (name.empty()) {
      const std::string base = fmt::format("{}_{}", n.op_type(), i);
      name = base;
      for (int k = 1; explicit_names.count(name); ++k) name = fmt::format("{}.{}", base, k);
      explicit_names.insert(name);
    }
    node_names_.push_back(name);
    const std::string where = NodeWhere(name, NormalizeDomain(n.domain()), n.op_type());
    for (const std::string& in : n.input()) onnx_names_.insert(in);
    for (const std::string& out : n.output()) {
      if (out.empty()) continue;
      onnx_names_.insert(out);
      if (input_decls_.count(out) || initializers_.count(out)) {
        return InvalidInput("{}: output '{}' is already a graph {}", where, out,
                            input_decls_.count(out) ? "input" : "initializer");
      }
      auto [it, inserted] = producer_.emplace(out, i);
      if (!inserted) {
        const onnx::NodeProto& other = graph_.node(it->second);
        return InvalidInput(
            "{}: output '{}' is already produced by {}", where, out,
            NodeWhere(node_names_[it->second], NormalizeDomain(other.domain()), other.op_type()));
      }
    }
  }
  for (const onnx::ValueInfoProto& vi : graph_.output()) onnx_names_.insert(vi.name());
  for (const onnx::ValueInfoProto& vi : graph_.value_info()) {
    onnx_names_.insert(vi.name());
    if (vi.has_type()) value_info_.emplace(vi.name(), &vi.type());
  }
  return Status::Ok();
}

// The element type of a graph input's or output's declared type, which must be a tensor of a
// dtype a800c supports; errors start with `what` ("graph input 'x'").
StatusOr<DType> TensorElemType(const onnx::ValueInfoProto& vi, const std::string& what) {
  if (!vi.has_type()) return InvalidInput("{}: has no type", what);
  if (!vi.type().has_tensor_type()) {
    return Unsupported("{}: has a {} type; a800c supports tensors only", what,
                       OnnxTypeCaseName(vi.type()));
  }
  auto dtype = DTypeFromOnnx(vi.type().tensor_type().elem_type());
  if (!dtype.ok()) return dtype.status().WithContext(what);
  return *dtype;
}

StatusOr<TensorType> Importer::BindInputType(const onnx::ValueInfoProto& vi) {
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
      if (d.has_dim_value() && d.dim_value() >= 0) {
        type.dims.push_back(d.dim_value());
      } else if (i == 0 && opts_.batch) {
        type.dims.push_back(*opts_.batch);
      } else {
        type.dims.push_back(1);
        if (opts_.warnings) {
          opts_.warnings->push_back(fmt::format(
              "input '{}' dim {} ('{}') is dynamic; bound to 1 (use --batch or --shape)", vi.name(),
              i, d.dim_param().empty() ? "?" : d.dim_param()));
        }
      }
    }
  }
  auto n = type.NumElements();
  if (!n.ok()) return n.status().WithContext(what);
  return type;
}

Status Importer::ImportInputs() {
  for (const auto& [name, dims] : opts_.shapes) {
    if (!input_decls_.count(name) || initializers_.count(name)) {
      std::vector<std::string> names;
      for (const onnx::ValueInfoProto& vi : graph_.input()) {
        if (!initializers_.count(vi.name())) names.push_back(vi.name());
      }
      return InvalidInput("--shape {}: the model has no input '{}' (inputs: {})", name, name,
                          fmt::join(names, ", "));
    }
  }
  for (const onnx::ValueInfoProto& vi : graph_.input()) {
    // An input that also has an initializer is a weight with a default (ONNX IR < 4 lists every
    // initializer as an input): it becomes a parameter in ImportInitializers.
    if (initializers_.count(vi.name())) continue;
    A8_ASSIGN_OR_RETURN(TensorType type, BindInputType(vi));
    RecordGraphValue(g_->AddInput(vi.name(), std::move(type)));
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
    A8_ASSIGN_OR_RETURN(auto data, TensorFromOnnx(t, what, model_dir_));
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
    const bool constant =
        !IsFloat(data->type.dtype) || (use != only_attribute_like.end() && use->second);
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

Status Importer::ImportNode(int index) {
  const onnx::NodeProto& n = graph_.node(index);
  const std::string domain = NormalizeDomain(n.domain());
  const std::string& name = node_names_[index];
  const std::string where = NodeWhere(name, domain, n.op_type());
  if (domain != "" && domain != kTrainingDomain) {
    return Unsupported("{}: ops of domain '{}' are not supported (a800c supports ai.onnx and {})",
                       where, n.domain(), kTrainingDomain);
  }
  if (!g_->opsets.count(domain)) {
    return InvalidInput("{}: domain '{}' is not in the model's opset_import", where, n.domain());
  }
  std::vector<Value*> inputs;
  for (int i = 0; i < n.input_size(); ++i) {
    const std::string& in = n.input(i);
    if (in.empty()) {
      inputs.push_back(nullptr);
      continue;
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
    A8_ASSIGN_OR_RETURN(Attribute attr, AttributeFromOnnx(a, where, model_dir_));
    if (!attrs.emplace(a.name(), std::move(attr)).second) {
      return InvalidInput("{}: attribute '{}' is given twice", where, a.name());
    }
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
  A8_RETURN_IF_ERROR(UpgradeNode(node, *version, def->canonical, ctx));
  A8_RETURN_IF_ERROR(CheckNodeAgainstOpDef(*node, *def));
  node->set_version(def->canonical);
  return Status::Ok();
}

Status Importer::ImportOutputs() {
  if (graph_.output_size() == 0) return InvalidInput("the graph has no outputs");
  for (const onnx::ValueInfoProto& vi : graph_.output()) {
    const std::string what = fmt::format("graph output '{}'", vi.name());
    Value* v = vi.name().empty() ? nullptr : g_->FindValue(vi.name());
    if (!v || !onnx_names_.count(vi.name()) ||
        (!producer_.count(vi.name()) && !input_decls_.count(vi.name()) &&
         !initializers_.count(vi.name()) && v->role() != ValueRole::kConstant)) {
      return InvalidInput("{}: is not produced by any node, graph input or initializer", what);
    }
    A8_ASSIGN_OR_RETURN(const DType dtype, TensorElemType(vi, what));
    const onnx::TypeProto::Tensor& tt = vi.type().tensor_type();
    if (tt.has_shape()) {
      TensorType declared{dtype, {}};
      for (const auto& d : tt.shape().dim()) {
        declared.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
      }
      g_->declared_output_types[vi.name()] = declared;
    }
    if (v->role() == ValueRole::kIntermediate && !value_info_.count(vi.name())) {
      if (std::optional<TensorType> t = StaticType(vi.type())) v->set_type(*t);
    }
    g_->AddOutput(v);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Graph>> ImportOnnxModel(const onnx::ModelProto& model,
                                                 const std::string& source_name,
                                                 const std::string& model_dir,
                                                 const ImportOptions& opts) {
  std::optional<OnnxTraining> training;
  if (model.training_info_size() > 0) {
    auto merged = MergeTrainingInfo(model);
    if (!merged.ok()) {
      return source_name.empty() ? merged.status() : merged.status().WithContext(source_name);
    }
    training = std::move(merged).value();
  }
  Importer importer(training ? training->merged : model, source_name, model_dir, opts);
  auto g = importer.Run();
  if (g.ok() && training) {
    Status bound = ApplyTrainingBindings(*training, **g);
    if (!bound.ok()) return source_name.empty() ? bound : bound.WithContext(source_name);
  }
  if (!g.ok() && !source_name.empty()) return g.status().WithContext(source_name);
  return g;
}

StatusOr<std::unique_ptr<Graph>> ImportOnnxModelConsuming(onnx::ModelProto&& model,
                                                          const std::string& source_name,
                                                          const std::string& model_dir,
                                                          const ImportOptions& opts) {
  if (model.training_info_size() > 0) return ImportOnnxModel(model, source_name, model_dir, opts);
  Importer importer(model, source_name, model_dir, opts);
  importer.ReleaseFloatDataFrom(model.mutable_graph());
  auto g = importer.Run();
  if (!g.ok() && !source_name.empty()) return g.status().WithContext(source_name);
  return g;
}

}  // namespace a8

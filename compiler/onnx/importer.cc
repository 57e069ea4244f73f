// ONNX -> IR: the model checks, names and outputs, and the entry points (see importer.h);
// importer_nodes.cc imports inputs, initializers and nodes; import_file.cc reads the bytes.
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
#include "compiler/onnx/importer_internal.h"
#include "compiler/onnx/onnx_util.h"

namespace a8 {
namespace onnx_import {

std::string DomainName(std::string_view domain) {
  return domain.empty() ? "ai.onnx" : std::string(domain);
}

std::string NormalizeDomain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

std::string NodeWhere(const std::string& name, const std::string& domain, const std::string& op) {
  return fmt::format("node '{}' ({})", name, domain.empty() ? op : domain + "." + op);
}

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

std::optional<int> OnnxSinceVersion(std::string_view domain, std::string_view name, int64_t opset) {
  struct History {
    std::string_view domain, name;
    std::vector<int> versions;
  };
#define A8_ONNX_OP(domain, name, ...) History{domain, name, __VA_ARGS__},
#define A8_ONNX_NEWEST(domain, opset)
  static const std::vector<History> kHistories = {
#include "compiler/ir/onnx_versions.inc"
  };
#undef A8_ONNX_OP
#undef A8_ONNX_NEWEST
  for (const History& h : kHistories) {
    if (h.domain != domain || h.name != name) continue;
    std::optional<int> since;
    for (int v : h.versions) {
      if (v <= opset) since = v;
    }
    return since;
  }
  return std::nullopt;
}

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
  // Value-shaped ops are folded at compile time from their constant inputs
  // (compiler/ir/op_table_value_shaped.h): every input decides the output shape.
  if (op == "NonZero" || op == "Unique" || op == "NonMaxSuppression") return true;
  return false;
}

std::optional<int64_t> Importer::OnnxInferredRank(const std::string& name, int upto) {
  if (upto > onnx_ranks_upto_) {
    // Only the nodes before `upto`: they already passed a800c's checks (known ops, arity,
    // defined inputs), so onnx's inference never sees a node the importer would reject.
    onnx::ModelProto copy;
    copy.set_ir_version(model_.ir_version());
    *copy.mutable_opset_import() = model_.opset_import();
    onnx::GraphProto* g = copy.mutable_graph();
    *g->mutable_input() = graph_.input();
    // The graph inputs' dims as a800c bound them (--batch, --dim, --shape).
    for (onnx::ValueInfoProto& in : *g->mutable_input()) {
      const Value* v = g_->FindValue(in.name());
      if (v == nullptr || v->role() != ValueRole::kInput || !in.type().has_tensor_type() ||
          !in.type().tensor_type().has_shape() ||
          in.type().tensor_type().shape().dim_size() != static_cast<int>(v->type().dims.size())) {
        continue;
      }
      auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
      for (int d = 0; d < shape->dim_size(); ++d) {
        const int64_t dim = v->type().dims[static_cast<size_t>(d)];
        if (dim >= 0) shape->mutable_dim(d)->set_dim_value(dim);
      }
    }
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
    for (int i = 0; i < upto; ++i) *g->add_node() = *nodes_[i];
    try {
      onnx::shape_inference::InferShapes(copy);
    } catch (const std::exception&) {
      // What it inferred before failing is still usable; a rank it did not find stays unknown
      // and the caller reports that.
    }
    onnx_ranks_.clear();
    onnx_dims_.clear();
    onnx_dtypes_.clear();
    for (const onnx::ValueInfoProto& vi : g->value_info()) {
      if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) {
        onnx_ranks_[vi.name()] = vi.type().tensor_type().shape().dim_size();
        if (std::optional<TensorType> t = StaticType(vi.type())) onnx_dims_[vi.name()] = t->dims;
      }
      if (vi.type().has_tensor_type()) {
        auto dtype = DTypeFromOnnx(vi.type().tensor_type().elem_type());
        if (dtype.ok()) onnx_dtypes_[vi.name()] = *dtype;
      }
    }
    onnx_ranks_upto_ = upto;
  }
  auto it = onnx_ranks_.find(name);
  if (it == onnx_ranks_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::vector<int64_t>> Importer::OnnxInferredDims(const std::string& name, int upto) {
  OnnxInferredRank(name, upto);
  auto it = onnx_dims_.find(name);
  if (it == onnx_dims_.end()) return std::nullopt;
  return it->second;
}

std::optional<DType> Importer::OnnxInferredDType(const std::string& name, int upto) {
  OnnxInferredRank(name, upto);
  auto it = onnx_dtypes_.find(name);
  if (it == onnx_dtypes_.end()) return std::nullopt;
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
  std::set<std::string>& explicit_names = used_node_names_;
  for (const onnx::NodeProto& n : graph_.node()) {
    if (!n.name().empty()) explicit_names.insert(n.name());
    nodes_.push_back(&n);
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

}  // namespace onnx_import

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
  onnx_import::Importer importer(training ? training->merged : model, source_name, model_dir, opts);
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
  onnx_import::Importer importer(model, source_name, model_dir, opts);
  importer.ReleaseFloatDataFrom(model.mutable_graph());
  auto g = importer.Run();
  if (!g.ok() && !source_name.empty()) return g.status().WithContext(source_name);
  return g;
}

StatusOr<std::unique_ptr<Graph>> ImportOnnxModelWithRawData(
    onnx::ModelProto&& model, const std::vector<std::optional<std::string_view>>& raw_data,
    std::shared_ptr<const void> mapping, const std::string& source_name,
    const std::string& model_dir, const ImportOptions& opts) {
  if (model.training_info_size() > 0) {
    return Internal("{}: a model with training_info is imported whole", source_name);
  }
  onnx_import::Importer importer(model, source_name, model_dir, opts);
  importer.ReleaseFloatDataFrom(model.mutable_graph());
  importer.UseRawDataOutside(&raw_data, std::move(mapping));
  auto g = importer.Run();
  if (!g.ok() && !source_name.empty()) return g.status().WithContext(source_name);
  return g;
}

}  // namespace a8

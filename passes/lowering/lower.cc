// lower: graph + memory plan -> plan (see lower.h).
#include "passes/lowering/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "compiler/ir/op_table.h"
#include "compiler/ir/op_table_value_shaped.h"
#include "compiler/plan/kernel_catalog.h"
#include "kernels/common/float16.h"

#ifndef A800C_VERSION
#error "A800C_VERSION must be defined by the build (CMakeLists.txt)"
#endif

namespace a8 {
namespace {

constexpr uint64_t kAlign = kPlanAlignment;
uint64_t AlignUp(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

void SetType(const TensorType& t, plan::TensorType* out) {
  out->set_dtype(static_cast<plan::DType>(static_cast<int>(t.dtype)));
  for (int64_t d : t.dims) out->add_dims(d);
}

// Resolves the window attributes of a convolution or pooling node into explicit ones.
Status ExplicitWindow(const Node& node, std::map<std::string, Attribute>* attrs) {
  const std::string& op = node.op();
  // a8.FusedConv (the fuse pass's Conv with an epilogue) has Conv's attributes.
  const bool fused_conv = node.domain() == "a8" && op == "FusedConv";
  if (!node.domain().empty() && !fused_conv) return Status::Ok();
  const bool conv = op == "Conv" || op == "ConvTranspose" || fused_conv;
  const bool transpose = op == "ConvTranspose";
  if (!conv && op != "MaxPool" && op != "AveragePool") return Status::Ok();
  const std::vector<int64_t>& xdims = node.input(0)->dims();
  if (xdims.size() < 3) {
    return Unsupported("{}: input X has rank {}, expected at least 3", node.Where(), xdims.size());
  }
  const size_t n = xdims.size() - 2;
  std::vector<int64_t> spatial(xdims.begin() + 2, xdims.end());
  std::vector<int64_t> kernel = node.GetInts("kernel_shape");
  if (conv && kernel.empty()) {
    const std::vector<int64_t>& w = node.input(1)->dims();
    kernel.assign(w.begin() + std::min<size_t>(2, w.size()), w.end());
  }
  auto spatial_attr = [&](const char* name, int64_t dflt, size_t count) {
    std::vector<int64_t> v = node.GetInts(name);
    if (v.empty()) v.assign(count, dflt);
    return v;
  };
  std::vector<int64_t> strides = spatial_attr("strides", 1, n);
  std::vector<int64_t> dilations = spatial_attr("dilations", 1, n);
  if (kernel.size() != n || strides.size() != n || dilations.size() != n) {
    return Unsupported("{}: kernel_shape, strides and dilations must have {} values", node.Where(),
                       n);
  }
  const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<int64_t> pads = node.GetInts("pads");
  auto split = [&](size_t i, int64_t total) {
    const int64_t small = total / 2, big = total - small;
    pads[i] = auto_pad == "SAME_UPPER" ? small : big;
    pads[i + n] = auto_pad == "SAME_UPPER" ? big : small;
  };
  if (transpose) {
    std::vector<int64_t> output_padding = spatial_attr("output_padding", 0, n);
    if (output_padding.size() != n) {
      return Unsupported("{}: output_padding must have {} values", node.Where(), n);
    }
    if (node.has_attr("output_shape") || (same && !node.has_attr("pads"))) {
      const std::vector<int64_t>& ydims = node.output(0)->dims();
      if (ydims.size() != xdims.size()) {
        return Internal("{}: output Y has rank {}, X has {}", node.Where(), ydims.size(),
                        xdims.size());
      }
      pads.assign(2 * n, 0);
      for (size_t i = 0; i < n; ++i) {
        const int64_t total = strides[i] * (spatial[i] - 1) + output_padding[i] +
                              (kernel[i] - 1) * dilations[i] + 1 - ydims[i + 2];
        // onnx splits the total with floor division; a negative end pad (the output reaches
        // past the last input window) is zeros at the end, i.e. more output_padding.
        const int64_t floor_half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        int64_t begin = auto_pad == "SAME_UPPER" ? floor_half : total - floor_half;
        int64_t end = total - begin;
        if (begin < 0) {
          return Unsupported(
              "{}: output_shape needs negative padding ({}) at the start of "
              "spatial dim {}",
              node.Where(), begin, i);
        }
        if (end < 0) {
          output_padding[i] -= end;
          end = 0;
        }
        pads[i] = begin;
        pads[i + n] = end;
      }
    }
    attrs->erase("output_shape");
    (*attrs)["output_padding"] = Attribute(output_padding);
  } else if (pads.empty() && same) {
    pads.assign(2 * n, 0);
    for (size_t i = 0; i < n; ++i) {
      const int64_t effective = (kernel[i] - 1) * dilations[i] + 1;
      const int64_t residual = spatial[i] % strides[i];
      split(i, std::max<int64_t>(0, effective - (residual == 0 ? strides[i] : residual)));
    }
  }
  if (pads.empty()) pads.assign(2 * n, 0);
  if (pads.size() != 2 * n) {
    return Unsupported("{}: pads must have {} values", node.Where(), 2 * n);
  }
  (*attrs)["auto_pad"] = Attribute("NOTSET");
  (*attrs)["pads"] = Attribute(pads);
  (*attrs)["strides"] = Attribute(strides);
  (*attrs)["dilations"] = Attribute(dilations);
  (*attrs)["kernel_shape"] = Attribute(kernel);
  return Status::Ok();
}

class Lowering {
 public:
  Lowering(const Graph& g, const LowerOptions& o) : graph_(g), options_(o) {}

  StatusOr<PlanFile> Run() {
    if (!graph_.memory_plan) {
      return Internal("lower: the graph has no memory plan; run plan-memory first");
    }
    const MemoryPlan& mp = *graph_.memory_plan;
    if (mp.alignment != static_cast<int64_t>(kAlign)) {
      return Internal("lower: the memory plan's alignment is {}, expected {}", mp.alignment,
                      kAlign);
    }
    plan::Plan& p = out_.plan;
    p.set_format_version(kPlanFormatVersion);
    p.set_compiler_version(A800C_VERSION);
    p.set_model_name(options_.model_name);
    p.set_model_hash(options_.model_hash);
    p.set_target(options_.target);
    p.set_precision(std::string(PrecisionModeName(Config().mode())));
    p.set_training(false);
    p.set_alignment(kAlign);
    p.set_arena_bytes(AlignUp(static_cast<uint64_t>(mp.arena_bytes)));
    p.set_arena_lower_bound(static_cast<uint64_t>(mp.lower_bound));
    p.mutable_scaler()->set_mode("none");
    num_kernels_ = static_cast<int>(graph_.num_nodes());

    if (!options_.blob_in_pieces) {
      // The blob is sized once: growing it would copy the weights again and again.
      uint64_t blob_bound = 0;
      for (Value* v : graph_.graph_values()) {
        if (v->data()) blob_bound += AlignUp(v->data()->bytes.size());
      }
      out_.blob.reserve(blob_bound);
    }
    FindWorkingCopies();
    if (options_.release_weights) {  // made at load: their bytes are not needed from here on
      for (Value* v : graph_.graph_values()) {
        if (cast_of_.count(v) != 0) v->set_data(nullptr);
      }
    }
    for (Value* v : graph_.graph_values()) {
      A8_RETURN_IF_ERROR(AddValue(v));
      if (v->role() == ValueRole::kState) checked_.push_back(v->data());  // IsAllZero's keys
      if (options_.release_weights &&
          (v->role() == ValueRole::kParameter || v->role() == ValueRole::kState)) {
        v->set_data(nullptr);
      }
    }
    for (const auto& [copy, master] : cast_of_) {
      p.mutable_buffers(ids_.at(copy->name()))->set_init_cast_of(ids_.at(master->name()));
    }
    for (Node* node : graph_.nodes()) {
      for (Value* v : node->outputs()) A8_RETURN_IF_ERROR(AddValue(v));
    }
    for (const auto& [name, id] : ids_) {
      const auto it = mp.values.find(name);
      if (it == mp.values.end() || it->second.alias_of.empty()) continue;
      auto target = ids_.find(it->second.alias_of);
      if (target == ids_.end()) {
        return Internal("lower: value '{}' aliases '{}', which is not a value", name,
                        it->second.alias_of);
      }
      p.mutable_buffers(id)->set_alias_of(target->second);
    }
    int index = 0;
    for (Node* node : graph_.nodes()) A8_RETURN_IF_ERROR(AddKernel(*node, index++));
    p.set_persistent_bytes(AlignUp(persistent_));
    if (options_.blob_in_pieces) out_.pieces_size = blob_end_;
    p.set_blob_bytes(out_.BlobSize());
    for (Value* v : graph_.inputs()) AddBinding(p.add_inputs(), v);
    for (Value* v : graph_.outputs()) AddBinding(p.add_outputs(), v);
    A8_RETURN_IF_ERROR(AddTraining());
    Status valid = ValidatePlan(out_, "lower");
    if (!valid.ok()) return Internal("lower: the plan is invalid: {}", valid.message());
    return std::move(out_);
  }

 private:
  // The compile configuration, or an fp32 one without training flags.
  const CompileConfig& Config() const {
    static const CompileConfig kNone;
    return options_.config != nullptr ? *options_.config : kNone;
  }

  // State updates, and for a built training graph the Training message with its eval kernels:
  // the nodes the graph outputs (loss, model outputs) depend on.
  Status AddTraining() {
    plan::Plan& p = out_.plan;
    for (const Graph::StateUpdate& u : graph_.updates()) {
      plan::Update* pu = p.add_updates();
      pu->set_target(ids_.at(u.target->name()));
      pu->set_source(ids_.at(u.value->name()));
    }
    // A TrainingInfoProto graph without a Gradient node has no loss to report: its updates
    // still apply, but it is run as a plain step.
    if (!graph_.train_step || graph_.train_step->loss_output.empty()) return Status::Ok();
    const TrainingStep& step = *graph_.train_step;
    // The flags' settings; a model's own TrainingInfoProto step has none: the defaults, with
    // loss and optimizer "onnx".
    TrainingConfig c = Config().training_or_defaults();
    if (step.from_model) c.loss = c.optimizer = "onnx";
    p.set_training(true);
    plan::Training* t = p.mutable_train();
    t->set_loss(step.loss_output);
    t->set_logits(step.logits_output);
    t->set_labels(step.labels_input);
    t->set_loss_kind(c.loss.rfind("output:", 0) == 0 ? "output" : c.loss);
    t->set_optimizer(c.optimizer);
    t->set_lr(c.lr);
    t->set_momentum(c.optimizer == "momentum" || c.optimizer == "nesterov" ? c.momentum : 0.0f);
    t->set_beta1(c.beta1);
    t->set_beta2(c.beta2);
    t->set_eps(c.eps);
    t->set_weight_decay(c.EffectiveWeightDecay());
    t->set_clip_grad_norm(c.clip_grad_norm);
    t->set_accumulate(static_cast<int32_t>(c.accumulate));
    t->set_lr_schedule(c.lr_schedule);
    t->set_warmup_steps(c.warmup_steps);
    t->set_total_steps(c.total_steps);
    auto id_of = [&](const std::string& name) {
      auto it = ids_.find(name);
      return it == ids_.end() ? -1 : it->second;
    };
    t->set_step_buffer(step.step_state.empty() ? -1 : id_of(step.step_state));
    t->set_control_buffer(step.control_state.empty() ? -1 : id_of(step.control_state));
    t->set_scale_buffer(step.scale_value.empty() ? -1 : id_of(step.scale_value));
    // The scaler's mode; its settings are stored once, where the step reads them: the scale
    // buffer's initial value (static: the scale) and the a8.UpdateScale kernel's attributes.
    if (!step.scale_mode.empty()) p.mutable_scaler()->set_mode(step.scale_mode);
    for (const std::string& n : step.trainable) t->add_trainable(n);
    for (const std::string& n : step.frozen) t->add_frozen(n);
    // Eval kernels: backwards from the graph outputs.
    std::set<const Value*> needed(graph_.outputs().begin(), graph_.outputs().end());
    std::vector<Node*> nodes = graph_.NodeList();
    std::vector<bool> in_eval(nodes.size(), false);
    for (size_t i = nodes.size(); i-- > 0;) {
      for (const Value* v : nodes[i]->outputs()) in_eval[i] = in_eval[i] || needed.count(v) > 0;
      if (!in_eval[i]) continue;
      for (const Value* v : nodes[i]->inputs()) {
        if (v != nullptr) needed.insert(v);
      }
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (in_eval[i]) t->add_eval_kernels(static_cast<int32_t>(i));
    }
    return Status::Ok();
  }

  void AddBinding(plan::Binding* b, const Value* v) {
    b->set_name(v->name());
    b->set_buffer(ids_.at(v->name()));
  }

  plan::Buffer* NewBuffer(const std::string& name, const TensorType& type) {
    plan::Plan& p = out_.plan;
    plan::Buffer* b = p.add_buffers();
    b->set_id(p.buffers_size() - 1);
    b->set_name(name);
    SetType(type, b->mutable_type());
    b->set_bytes(static_cast<uint64_t>(type.CheckedNumElements()) * DTypeSize(type.dtype));
    b->set_alias_of(-1);
    ids_[name] = b->id();
    return b;
  }

  // Whether every byte of `data` is zero (remembered per tensor: build-training shares one zero
  // tensor among the states of a type).
  bool IsAllZero(const TensorData* data) {
    auto [it, added] = all_zero_.emplace(data, false);
    if (added) {
      // Every byte equals the first and the first is 0: memcmp against itself, one byte on.
      const TensorBytes& b = data->bytes;
      it->second =
          b.empty() || (b[0] == 0 && std::memcmp(b.data(), b.data() + 1, b.size() - 1) == 0);
    }
    return it->second;
  }

  // A PERSISTENT buffer with (optional) initial bytes.
  Status AddPersistent(const std::string& name, const TensorType& type, plan::Buffer::Role role,
                       const TensorDataPtr& data) {
    plan::Buffer* b = NewBuffer(name, type);
    b->set_region(plan::Buffer::PERSISTENT);
    b->set_role(role);
    b->set_offset(persistent_);
    persistent_ = AlignUp(persistent_ + b->bytes());
    b->set_first(-1);
    b->set_last(num_kernels_);
    if (data != nullptr) {
      if (data->bytes.size() != b->bytes() || data->type != type) {
        return Internal("lower: value '{}': its data ({}, {} bytes) does not match its type {}",
                        name, data->type.ToString(), data->bytes.size(), type.ToString());
      }
      // State that starts at zero (optimizer moments, counters) is zeros at load: no bytes.
      if (role == plan::Buffer::STATE && IsAllZero(data.get())) return Status::Ok();
      const size_t at = AlignUp(blob_end_);
      if (options_.blob_in_pieces) {  // the plan keeps the tensor, not a copy of it
        out_.pieces.push_back(PlanBlobPiece{at, data->bytes, data});
      } else {
        out_.blob.resize(at, 0);
        out_.blob.insert(out_.blob.end(), data->bytes.begin(), data->bytes.end());
      }
      blob_end_ = at + data->bytes.size();
      b->set_has_init(true);
      b->set_blob_offset(at);
    }
    return Status::Ok();
  }

  // The low-precision working copies of FP32 master weights (insert-casts keeps them as state:
  // each step's update is the Cast of the master's update) whose initial value is the master's
  // rounded as the Cast kernel rounds: the runtime makes them at load (Buffer.init_cast_of),
  // so the plan stores the weights once. The values are compared, never assumed.
  void FindWorkingCopies() {
    std::map<const Value*, const Value*> next, master_of_next;
    for (const Graph::StateUpdate& u : graph_.updates()) next[u.target] = u.value;
    for (const Graph::StateUpdate& u : graph_.updates()) {
      if (u.target->dtype() == DType::kF32) master_of_next[u.value] = u.target;
    }
    for (const auto& [copy, value] : next) {
      const DType t = copy->dtype();
      if ((t != DType::kF16 && t != DType::kBF16) || copy->role() != ValueRole::kState ||
          !copy->data() || value->producer() == nullptr || value->producer()->op() != "Cast" ||
          value->producer()->num_inputs() != 1) {
        continue;
      }
      auto m = master_of_next.find(value->producer()->input(0));
      if (m == master_of_next.end()) continue;
      const Value* master = m->second;
      if (!master->data() || master->type().dims != copy->type().dims) continue;
      const float* src = master->data()->data<float>();
      const uint16_t* dst = copy->data()->data<uint16_t>();
      const int64_t n = copy->data()->num_elements();
      bool same = true;
      for (int64_t i = 0; i < n && same; ++i) {
        same = dst[i] == (t == DType::kF16 ? FloatToHalfBits(src[i]) : FloatToBFloat16Bits(src[i]));
      }
      if (same) cast_of_[copy] = master;
    }
  }

  Status AddValue(const Value* v) {
    if (cast_of_.count(v) != 0) {  // filled at load from its master (init_cast_of)
      return AddPersistent(v->name(), v->type(), plan::Buffer::STATE, nullptr);
    }
    switch (v->role()) {
      case ValueRole::kParameter:
        return AddPersistent(v->name(), v->type(), plan::Buffer::PARAMETER, v->data());
      case ValueRole::kState:
        return AddPersistent(v->name(), v->type(), plan::Buffer::STATE, v->data());
      case ValueRole::kConstant:
        return AddPersistent(v->name(), v->type(), plan::Buffer::CONSTANT, v->data());
      case ValueRole::kInput:
      case ValueRole::kIntermediate:
        break;
    }
    const auto it = graph_.memory_plan->values.find(v->name());
    if (it == graph_.memory_plan->values.end()) {
      return Internal("lower: value '{}' has no entry in the memory plan", v->name());
    }
    const BufferAssignment& a = it->second;
    plan::Buffer* b = NewBuffer(v->name(), v->type());
    if (a.bytes != static_cast<int64_t>(b->bytes()) || a.offset < 0) {
      return Internal(
          "lower: value '{}': the memory plan gives {} bytes at {}, its type {} has "
          "{}",
          v->name(), a.bytes, a.offset, v->type().ToString(), b->bytes());
    }
    b->set_region(plan::Buffer::ARENA);
    // An update's new value counts as a graph output in the IR (kept to the end of the step)
    // but is not bound as one.
    const bool output =
        std::find(graph_.outputs().begin(), graph_.outputs().end(), v) != graph_.outputs().end();
    b->set_role(v->role() == ValueRole::kInput ? plan::Buffer::INPUT
                : output                       ? plan::Buffer::OUTPUT
                                               : plan::Buffer::INTERMEDIATE);
    b->set_offset(static_cast<uint64_t>(a.offset));
    // A state update written in place (plan_memory.h): the new value lives in the bytes of the
    // parameter or state it replaces.
    if (const Value* target = graph_.FindValue(a.alias_of);
        target != nullptr && target->producer() == nullptr && target->role() != ValueRole::kInput) {
      const plan::Buffer& t = out_.plan.buffers(ids_.at(target->name()));
      b->set_region(plan::Buffer::PERSISTENT);
      b->set_offset(t.offset());
    }
    b->set_first(a.first);
    b->set_last(a.last);
    return Status::Ok();
  }

  Status AddKernel(const Node& node, int index) {
    if (FindFoldRule(node.domain(), node.op()) != nullptr) {
      // A value-shaped op left unfolded: an input has initial data but is no constant.
      for (int i = 0; i < node.num_inputs(); ++i) {
        const Value* v = node.input(i);
        if (v != nullptr && !v->is_constant()) {
          return Unsupported(
              "{}: its output shape depends on input '{}', which must be a constant: a800c "
              "computes this op at compile time (a weight is not constant; an initializer that "
              "only such ops read is)",
              node.Where(), v->name());
        }
      }
    }
    const std::string name = KernelName(node);
    Status known = CheckKernel(*ParseKernelName(name));
    if (!known.ok()) {
      return Unsupported("{}: no kernel for it: {}", node.Where(), known.message());
    }
    A8_ASSIGN_OR_RETURN(const AttributeMap attrs, KernelAttributes(node));

    plan::Kernel* k = out_.plan.add_kernels();
    k->set_name(name);
    k->set_op(node.qualified_op());
    k->set_version(node.version());
    k->set_why(node.GetString("a8.why", ""));
    int n = node.num_inputs();
    while (n > 0 && !node.has_input(n - 1)) --n;
    for (int i = 0; i < n; ++i)
      k->add_inputs(node.has_input(i) ? ids_.at(node.input(i)->name()) : -1);
    for (const Value* v : node.outputs()) k->add_outputs(ids_.at(v->name()));
    // --precision=tf32: the f32 operands of its GEMMs/convolutions may be read as TF32.
    if (Config().tf32()) {
      if (const OpDef* def = FindOp(node.domain(), node.op())) {
        for (int i : def->tf32_inputs) {
          if (i < n && node.has_input(i) && node.input(i)->dtype() == DType::kF32)
            k->add_tf32_inputs(i);
        }
      }
    }
    for (const auto& [attr_name, a] : attrs) {
      plan::Attribute* pa = k->add_attrs();
      if (a.kind() != AttrKind::kTensor) {
        A8_RETURN_IF_ERROR(SetPlanAttribute(attr_name, a, pa));
        continue;
      }
      pa->set_name(attr_name);
      std::string base = node.name() + "." + attr_name;
      std::string buffer_name = graph_.UniqueName(base);
      for (int s = 1; ids_.count(buffer_name) > 0; ++s) {
        buffer_name = graph_.UniqueName(fmt::format("{}.{}", base, s));
      }
      A8_RETURN_IF_ERROR(
          AddPersistent(buffer_name, a.tensor()->type, plan::Buffer::CONSTANT, a.tensor()));
      pa->set_tensor_buffer(ids_.at(buffer_name));
    }
    k->set_node(node.name());
    // A fused node lists the nodes it came from (passes/fusion/fuse.h).
    if (const Attribute* fused = node.attr("a8.onnx_nodes");
        fused != nullptr && fused->kind() == AttrKind::kStrings) {
      for (const std::string& n : fused->strings()) k->add_onnx_nodes(n);
    } else {
      k->add_onnx_nodes(node.name());
    }
    (void)index;
    return Status::Ok();
  }

  const Graph& graph_;
  const LowerOptions& options_;
  PlanFile out_;
  std::map<std::string, int> ids_;
  std::map<const Value*, const Value*> cast_of_;  // working copy -> its FP32 master
  uint64_t blob_end_ = 0;                         // the blob's size so far
  std::map<const TensorData*, bool> all_zero_;
  std::vector<TensorDataPtr> checked_;  // keeps all_zero_'s keys alive (release_weights)
  uint64_t persistent_ = 0;
  int num_kernels_ = 0;
};

}  // namespace

StatusOr<AttributeMap> KernelAttributes(const Node& node) {
  AttributeMap attrs;
  for (const auto& [k, a] : node.attrs()) {
    // a800c's annotations stay in the IR, but for `a8.edge`: a mixed-type normalization's shape
    // rule reads it when the plan is validated.
    if (k.rfind("a8.", 0) != 0 || k == "a8.edge") attrs[k] = a;
  }
  if (const OpDef* def = FindOp(node.domain(), node.op())) {
    for (const AttrSpec& spec : def->attrs) {
      if (spec.default_value && attrs.count(spec.name) == 0) attrs[spec.name] = *spec.default_value;
    }
  }
  A8_RETURN_IF_ERROR(ExplicitWindow(node, &attrs));
  return attrs;
}

Status SetPlanAttribute(const std::string& name, const Attribute& a, plan::Attribute* out) {
  out->set_name(name);
  switch (a.kind()) {
    case AttrKind::kInt:
      out->set_i(a.i());
      return Status::Ok();
    case AttrKind::kFloat:
      out->set_f(a.f());
      return Status::Ok();
    case AttrKind::kString:
      out->set_s(a.s());
      return Status::Ok();
    case AttrKind::kInts:
      for (int64_t x : a.ints()) out->mutable_ints()->add_values(x);
      return Status::Ok();
    case AttrKind::kFloats:
      for (float x : a.floats()) out->mutable_floats()->add_values(x);
      return Status::Ok();
    case AttrKind::kStrings:
      for (const std::string& x : a.strings()) out->mutable_strings()->add_values(x);
      return Status::Ok();
    case AttrKind::kTensor:
      break;
  }
  return Internal("attribute '{}': a tensor attribute is stored as a CONSTANT buffer by lower",
                  name);
}

StatusOr<PlanFile> LowerToPlan(const Graph& graph, const LowerOptions& options) {
  return Lowering(graph, options).Run();
}

}  // namespace a8

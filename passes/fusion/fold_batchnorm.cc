// fold-batchnorm: Conv -> BatchNormalization becomes one Conv in inference (see fold_batchnorm.h).
#include "passes/fusion/fold_batchnorm.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "passes/fusion/fuse_internal.h"

namespace a8 {
namespace {

// `v` when it is an f32 initializer holding `elements` values (any count when negative).
const TensorData* F32Data(const Value* v, int64_t elements) {
  if (v == nullptr || v->data() == nullptr) return nullptr;
  if (v->role() != ValueRole::kParameter && v->role() != ValueRole::kConstant) return nullptr;
  const TensorData& d = *v->data();
  if (d.type.dtype != DType::kF32) return nullptr;
  if (elements >= 0 && d.num_elements() != elements) return nullptr;
  return &d;
}

// The Conv whose only use is `bn`'s X, when the pair can fold; else null.
Node* FoldableConv(const Node& bn) {
  if (!fusion::IsOnnxOp(&bn, "BatchNormalization") || bn.num_outputs() != 1 ||
      bn.num_inputs() != 5 || bn.GetInt("training_mode", 0) != 0 || bn.GetInt("spatial", 1) != 1) {
    return nullptr;
  }
  const Value* x = bn.input(0);
  Node* conv = x == nullptr ? nullptr : x->producer();
  if (!fusion::IsOnnxOp(conv, "Conv") || conv->num_outputs() != 1 || x->uses().size() != 1 ||
      x->is_graph_output()) {
    return nullptr;
  }
  const TensorData* w = F32Data(conv->input(1), -1);
  if (w == nullptr || w->type.dims.size() < 3) return nullptr;
  const int64_t channels = w->type.dims[0];
  if (conv->num_inputs() > 2 && conv->input(2) != nullptr &&
      F32Data(conv->input(2), channels) == nullptr) {
    return nullptr;
  }
  for (int i = 1; i < 5; ++i) {
    if (F32Data(bn.input(i), channels) == nullptr) return nullptr;
  }
  return conv;
}

// Erases graph values nothing reads any more (each once: a BN may read one initializer twice).
void EraseUnread(Graph& graph, std::vector<Value*> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  for (Value* v : values) {
    if (v != nullptr && v->uses().empty() && !v->is_graph_output()) {
      graph.EraseGraphValue(v);
    }
  }
}

}  // namespace

StatusOr<bool> FoldBatchNorm::Run(Graph& graph) {
  if (config().training || graph.train_step) return false;
  int64_t folded = 0;
  for (Node* bn : graph.NodeList()) {
    Node* conv = FoldableConv(*bn);
    if (conv == nullptr) continue;
    Value* w = conv->input(1);
    Value* conv_bias = conv->num_inputs() > 2 ? conv->input(2) : nullptr;
    const TensorData& wd = *w->data();
    const int64_t channels = wd.type.dims[0];
    const int64_t per_channel = wd.num_elements() / std::max<int64_t>(channels, 1);
    const float* scale = bn->input(1)->data()->data<float>();
    const float* beta = bn->input(2)->data()->data<float>();
    const float* mean = bn->input(3)->data()->data<float>();
    const float* var = bn->input(4)->data()->data<float>();
    const double eps = bn->GetFloat("epsilon", 1e-5f);

    auto new_w = TensorData::Make(wd.type);
    auto new_b = TensorData::Make(TensorType{DType::kF32, {channels}});
    const float* w_in = wd.data<float>();
    float* w_out = new_w->mutable_data<float>();
    float* b_out = new_b->mutable_data<float>();
    for (int64_t c = 0; c < channels; ++c) {
      const double s = static_cast<double>(scale[c]) / std::sqrt(static_cast<double>(var[c]) + eps);
      for (int64_t k = c * per_channel; k < (c + 1) * per_channel; ++k) {
        w_out[k] = static_cast<float>(static_cast<double>(w_in[k]) * s);
      }
      const double b = conv_bias != nullptr ? conv_bias->data()->data<float>()[c] : 0.0;
      b_out[c] = static_cast<float>((b - mean[c]) * s + beta[c]);
    }
    auto add = [&](const std::string& name, TensorDataPtr data) {
      return w->role() == ValueRole::kParameter ? graph.AddParameter(name, std::move(data))
                                                : graph.AddConstant(name, std::move(data));
    };
    Value* folded_w = add(w->name() + ".bn_folded", std::move(new_w));
    Value* folded_b = add(w->name() + ".bn_folded_bias", std::move(new_b));

    Value* y = bn->output(0);
    const std::string name = fusion::FreeNames(graph, {y})[0];
    std::map<std::string, Attribute> attrs = conv->attrs();
    fusion::AddFusedAnnotations({conv, bn}, conv, &attrs);
    Node* fused = graph.AddNode("Conv", "", {conv->input(0), folded_w, folded_b},
                                {{name, y->type()}}, std::move(attrs), conv->name(), conv);
    fused->set_version(conv->version());
    graph.ReplaceAllUsesWith(y, fused->output(0));
    // (Not X: the Conv's output goes with the Conv.)
    std::vector<Value*> read = {bn->input(1), bn->input(2), bn->input(3), bn->input(4), w,
                                conv_bias};
    graph.EraseNode(bn);
    graph.EraseNode(conv);
    EraseUnread(graph, std::move(read));
    ++folded;
  }
  if (folded == 0) return false;
  stats_["folded"] = folded;
  graph.memory_plan.reset();
  return true;
}

}  // namespace a8

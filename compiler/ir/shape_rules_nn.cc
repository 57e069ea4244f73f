// Shape rules of linear algebra and neural-network ops: MatMul, Gemm, Conv, pooling,
// normalization, Softmax, Dropout and the losses.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

// Reads an ints attribute of `count` values (`dflt` each when absent) that must be >= `min`.
StatusOr<std::vector<int64_t>> SpatialAttr(const OpNode& node, const std::string& name,
                                           size_t count, int64_t dflt, int64_t min) {
  const Attribute* a = node.attr(name);
  if (a == nullptr) return std::vector<int64_t>(count, dflt);
  if (a->kind() != AttrKind::kInts) {
    return InvalidInput("{}: attribute '{}' must be ints", node.Where(), name);
  }
  if (a->ints().size() != count) {
    return InvalidInput("{}: attribute '{}' has {} values, expected {}", node.Where(), name,
                        a->ints().size(), count);
  }
  for (int64_t v : a->ints()) {
    if (v < min || v > kMaxAttrDim) {
      return InvalidInput("{}: attribute '{}' value {} is out of range (expected {} to {})",
                          node.Where(), name, v, min, kMaxAttrDim);
    }
  }
  return a->ints();
}

// Input 0, `name`, of an op over [N, C, spatial...] must have rank >= 3.
Status RequireSpatialRank(const OpNode& node, std::string_view name) {
  const TensorType& x = node.input(0)->type();
  if (x.rank() < 3) {
    return InvalidInput("{}: input '{}' must have rank >= 3 (N, C, spatial...), got {}",
                        node.Where(), name, x.ToString());
  }
  return Status::Ok();
}

// Input 0, `name`, must be a float tensor [N, C, spatial...] (rank checked first).
Status RequireFloatSpatial(const OpNode& node, std::string_view name) {
  A8_RETURN_IF_ERROR(RequireSpatialRank(node, name));
  return RequireFloat(node, 0, name);
}

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
};

StatusOr<Window> ReadWindow(const OpNode& node, const std::vector<int64_t>& spatial,
                            std::vector<int64_t> kernel, bool transpose) {
  const size_t n = spatial.size();
  Window w;
  w.kernel = std::move(kernel);
  for (int64_t k : w.kernel) {
    if (k <= 0 || k > kMaxAttrDim) {
      return InvalidInput("{}: kernel shape {} must be positive", node.Where(),
                          DimsString(w.kernel));
    }
  }
  A8_ASSIGN_OR_RETURN(w.strides, SpatialAttr(node, "strides", n, 1, 1));
  A8_ASSIGN_OR_RETURN(w.dilations, SpatialAttr(node, "dilations", n, 1, 1));
  const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID") {
    return InvalidInput(
        "{}: attribute 'auto_pad' is '{}' (expected NOTSET, SAME_UPPER, "
        "SAME_LOWER or VALID)",
        node.Where(), auto_pad);
  }
  if (node.has_attr("pads")) {
    if (auto_pad != "NOTSET") {
      return InvalidInput("{}: attributes 'pads' and 'auto_pad' ({}) cannot be used together",
                          node.Where(), auto_pad);
    }
    A8_ASSIGN_OR_RETURN(w.pads, SpatialAttr(node, "pads", 2 * n, 0, 0));
    return w;
  }
  w.pads.assign(2 * n, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") return w;
  SameAutoPads(auto_pad == "SAME_UPPER", transpose, spatial, w.kernel, w.strides, w.dilations,
               &w.pads);
  return w;
}

// Output spatial dims of a convolution or pooling window (floor, or ceil without windows that
// start in the right padding, as PyTorch and onnx do).
StatusOr<std::vector<int64_t>> WindowOutput(const OpNode& node, const std::vector<int64_t>& spatial,
                                            const Window& w, bool ceil_mode) {
  const size_t n = spatial.size();
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const __int128 effective_kernel = (__int128{w.kernel[i]} - 1) * w.dilations[i] + 1;
    const __int128 padded = __int128{spatial[i]} + w.pads[i] + w.pads[i + n];
    // Ceil mode keeps a last window that hangs over the padded end.
    const __int128 span = padded - effective_kernel + (ceil_mode ? w.strides[i] - 1 : 0);
    __int128 size = span < 0 ? 0 : span / w.strides[i] + 1;
    if (ceil_mode && size > 0 && (size - 1) * w.strides[i] >= __int128{spatial[i]} + w.pads[i]) {
      --size;
    }
    if (size < 1) {
      return InvalidInput(
          "{}: the window ({} with dilation {}) is larger than spatial dim {} "
          "({} with pads {} and {})",
          node.Where(), w.kernel[i], w.dilations[i], i, spatial[i], w.pads[i], w.pads[i + n]);
    }
    out[i] = static_cast<int64_t>(size);
  }
  return out;
}

}  // namespace

Status InferMatMul(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "A", 1, "B"));
  std::vector<int64_t> a = node.input(0)->dims(), b = node.input(1)->dims();
  if (a.empty() || b.empty()) {
    return InvalidInput("{}: inputs must have rank >= 1, got '{}' {} and '{}' {}", node.Where(),
                        "A", node.input(0)->type().ToString(), "B",
                        node.input(1)->type().ToString());
  }
  // numpy: a 1-D A is a row [1,K], a 1-D B is a column [K,1]; the added dim is dropped again.
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), kb = b[b.size() - 2], n = b.back();
  if (k != kb) {
    return InvalidInput("{}: inner dimensions of 'A' {} and 'B' {} differ ({} vs {})", node.Where(),
                        node.input(0)->type().ToString(), node.input(1)->type().ToString(), k, kb);
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      BroadcastShapes(std::vector<int64_t>(a.begin(), a.end() - 2),
                                      std::vector<int64_t>(b.begin(), b.end() - 2),
                                      node.Where() + ": batch dimensions of 'A' and 'B'"));
  if (!a_vector) dims.push_back(m);
  if (!b_vector) dims.push_back(n);
  return SetOutputs(node, out, {{node.input(0)->dtype(), dims}});
}

Status InferGemm(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireRank(node, 0, "A", 2));
  A8_RETURN_IF_ERROR(RequireRank(node, 1, "B", 2));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "A", 1, "B"));
  const std::vector<int64_t>& a = node.input(0)->dims();
  const std::vector<int64_t>& b = node.input(1)->dims();
  const bool ta = node.GetInt("transA", 0) != 0, tb = node.GetInt("transB", 0) != 0;
  const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (k != kb) {
    return InvalidInput(
        "{}: inner dimensions of 'A' {} (transA={}) and 'B' {} (transB={}) differ "
        "({} vs {})",
        node.Where(), node.input(0)->type().ToString(), ta ? 1 : 0,
        node.input(1)->type().ToString(), tb ? 1 : 0, k, kb);
  }
  if (node.has_input(2)) {
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "A", 2, "C"));
    if (!BroadcastsTo(node.input(2)->dims(), {m, n})) {
      return InvalidInput("{}: input 'C' {} does not broadcast to [{},{}]", node.Where(),
                          node.input(2)->type().ToString(), m, n);
    }
  }
  return SetOutputs(node, out, {{node.input(0)->dtype(), {m, n}}});
}

// Conv and ConvTranspose: X [N, C, spatial...] float, W of X's rank and dtype.
Status CheckConvOperands(const OpNode& node) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  const TensorType& x = node.input(0)->type();
  A8_RETURN_IF_ERROR(RequireFloatSpatial(node, "X"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "X", 1, "W"));
  A8_RETURN_IF_ERROR(RequireRank(node, 1, "W", x.rank()));
  return Status::Ok();
}

// The optional bias B of Conv/ConvTranspose: [M], X's dtype.
Status CheckConvBias(const OpNode& node, int64_t m) {
  if (node.has_input(2)) {
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "X", 2, "B"));
    if (node.input(2)->dims() != std::vector<int64_t>{m}) {
      return InvalidInput("{}: input 'B' must be [{}], got {}", node.Where(), m,
                          node.input(2)->type().ToString());
    }
  }
  return Status::Ok();
}

// The window of a Conv or ConvTranspose over `spatial`: its kernel is W's trailing dims, which
// attribute 'kernel_shape' (when given) must match.
StatusOr<Window> ReadConvWindow(const OpNode& node, const TensorType& w,
                                const std::vector<int64_t>& spatial, bool transpose) {
  const std::vector<int64_t> kernel(w.dims.begin() + 2, w.dims.end());
  if (node.has_attr("kernel_shape") && node.GetInts("kernel_shape") != kernel) {
    return InvalidInput("{}: attribute 'kernel_shape' {} does not match 'W' {}", node.Where(),
                        DimsString(node.GetInts("kernel_shape")), w.ToString());
  }
  return ReadWindow(node, spatial, kernel, transpose);
}

Status InferConv(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(CheckConvOperands(node));
  const TensorType& x = node.input(0)->type();
  const TensorType& w = node.input(1)->type();
  const int64_t group = node.GetInt("group", 1);
  const int64_t m = w.dims[0];
  int64_t channels = 0;
  if (group < 1 || __builtin_mul_overflow(w.dims[1], group, &channels) || x.dims[1] != channels ||
      m % group != 0) {
    return InvalidInput(
        "{}: channels do not match: 'X' {} has {} channels, 'W' {} with group={} "
        "expects W[1] * group (and M={} divisible by group)",
        node.Where(), x.ToString(), x.dims[1], w.ToString(), group, m);
  }
  A8_RETURN_IF_ERROR(CheckConvBias(node, m));
  const std::vector<int64_t> spatial(x.dims.begin() + 2, x.dims.end());
  A8_ASSIGN_OR_RETURN(Window window, ReadConvWindow(node, w, spatial, /*transpose=*/false));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      WindowOutput(node, spatial, window, /*ceil_mode=*/false));
  dims.insert(dims.begin(), {x.dims[0], m});
  return SetOutputs(node, out, {{x.dtype, dims}});
}

Status InferConvTranspose(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(CheckConvOperands(node));
  const TensorType& x = node.input(0)->type();
  const TensorType& w = node.input(1)->type();
  const int64_t group = node.GetInt("group", 1);
  int64_t m = 0;
  if (group < 1 || x.dims[1] != w.dims[0] || w.dims[0] % group != 0 ||
      __builtin_mul_overflow(w.dims[1], group, &m)) {
    return InvalidInput(
        "{}: channels do not match: 'X' {} has {} channels, 'W' {} (C x M/group "
        "x k...) with group={}",
        node.Where(), x.ToString(), x.dims[1], w.ToString(), group);
  }
  A8_RETURN_IF_ERROR(CheckConvBias(node, m));
  const size_t n = static_cast<size_t>(x.rank() - 2);
  const std::vector<int64_t> spatial(x.dims.begin() + 2, x.dims.end());
  A8_ASSIGN_OR_RETURN(Window window, ReadConvWindow(node, w, spatial, /*transpose=*/true));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> output_padding,
                      SpatialAttr(node, "output_padding", n, 0, 0));
  std::vector<int64_t> dims = {x.dims[0], m};
  if (node.has_attr("output_shape")) {
    A8_ASSIGN_OR_RETURN(std::vector<int64_t> shape, SpatialAttr(node, "output_shape", n, 0, 0));
    dims.insert(dims.end(), shape.begin(), shape.end());
    return SetOutputs(node, out, {{x.dtype, dims}});
  }
  for (size_t i = 0; i < n; ++i) {
    const __int128 effective_kernel = (__int128{window.kernel[i]} - 1) * window.dilations[i] + 1;
    const __int128 size = __int128{window.strides[i]} * (spatial[i] - 1) + output_padding[i] +
                          effective_kernel - window.pads[i] - window.pads[i + n];
    if (size < 1 || size > std::numeric_limits<int64_t>::max()) {
      return InvalidInput("{}: spatial dim {} of the output would be {}", node.Where(), i,
                          static_cast<int64_t>(size));
    }
    dims.push_back(static_cast<int64_t>(size));
  }
  return SetOutputs(node, out, {{x.dtype, dims}});
}

Status InferPool(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  A8_RETURN_IF_ERROR(RequireSpatialRank(node, "X"));
  if (x.dtype == DType::kBool) {
    return InvalidInput("{}: input 'X' must be numeric, got {}", node.Where(), x.ToString());
  }
  const size_t n = static_cast<size_t>(x.rank() - 2);
  if (!node.has_attr("kernel_shape")) {
    return InvalidInput("{}: required attribute 'kernel_shape' is missing", node.Where());
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, SpatialAttr(node, "kernel_shape", n, 1, 1));
  const std::vector<int64_t> spatial(x.dims.begin() + 2, x.dims.end());
  A8_ASSIGN_OR_RETURN(Window window, ReadWindow(node, spatial, kernel, /*transpose=*/false));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      WindowOutput(node, spatial, window, node.GetInt("ceil_mode", 0) != 0));
  dims.insert(dims.begin(), {x.dims[0], x.dims[1]});
  std::vector<TensorType> types = {{x.dtype, dims}};
  if (node.num_outputs() > 1) types.push_back({DType::kI64, dims});  // MaxPool's Indices
  return SetOutputs(node, out, std::move(types));
}

Status InferGlobalPool(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  const TensorType& x = node.input(0)->type();
  A8_RETURN_IF_ERROR(RequireFloatSpatial(node, "X"));
  std::vector<int64_t> dims(x.dims.size(), 1);
  dims[0] = x.dims[0];
  dims[1] = x.dims[1];
  return SetOutputs(node, out, {{x.dtype, dims}});
}

Status InferBatchNormalization(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 5));
  const TensorType& x = node.input(0)->type();
  if (x.rank() < 1) {
    return InvalidInput("{}: input 'X' must have rank >= 1, got {}", node.Where(), x.ToString());
  }
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "X"));
  const int64_t channels = x.rank() > 1 ? x.dims[1] : 1;
  static constexpr const char* kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i < 5; ++i) {
    A8_RETURN_IF_ERROR(RequireFloat(node, i, kNames[i]));
    if (node.input(i)->dims() != std::vector<int64_t>{channels}) {
      return InvalidInput("{}: input '{}' must be [{}] (the channels of 'X' {}), got {}",
                          node.Where(), kNames[i], channels, x.ToString(),
                          node.input(i)->type().ToString());
    }
  }
  const bool legacy = node.version() != 0 && node.version() < 14;
  const bool training = node.GetInt("training_mode", 0) != 0;
  if (legacy && node.num_outputs() > 1) {
    return Unsupported(
        "{}: BatchNormalization-{} in training mode ({} outputs) is not supported; "
        "use opset 14 or newer (training_mode=1)",
        node.Where(), node.version(), node.num_outputs());
  }
  if (!legacy && node.num_outputs() != (training ? 3 : 1)) {
    return InvalidInput("{}: has {} outputs; expected {} with training_mode={}", node.Where(),
                        node.num_outputs(), training ? 3 : 1, training ? 1 : 0);
  }
  std::vector<TensorType> types = {x};
  if (node.num_outputs() == 3) {
    types.push_back({node.input(3)->dtype(), {channels}});
    types.push_back({node.input(4)->dtype(), {channels}});
  }
  return SetOutputs(node, out, std::move(types));
}

Status InferLayerNormalization(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  const TensorType& x = node.input(0)->type();
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "X"));
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", -1), x.rank()));
  const std::vector<int64_t> normalized(x.dims.begin() + axis, x.dims.end());
  static constexpr const char* kNames[] = {"X", "Scale", "B"};
  // ONNX types X, Scale and B alike; a800c's pin-fp32 keeps Scale and B in FP32 under an FP16 X
  // and says so with `a8.edge` (the exporter writes such a node back as FP32 between Casts).
  const bool edged = node.attr("a8.edge") != nullptr;
  for (int i = 1; i < 3; ++i) {
    if (!node.has_input(i)) continue;
    if (edged) {
      A8_RETURN_IF_ERROR(RequireFloat(node, i, kNames[i]));
    } else {
      A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "X", i, kNames[i]));
    }
    if (!BroadcastsTo(node.input(i)->dims(), normalized)) {
      return InvalidInput("{}: input '{}' {} does not broadcast to the normalized shape {}",
                          node.Where(), kNames[i], node.input(i)->type().ToString(),
                          DimsString(normalized));
    }
  }
  StatusOr<DType> stash = DTypeFromOnnx(static_cast<int>(node.GetInt("stash_type", 1)));
  if (!stash.ok() || !IsFloat(*stash)) {
    return InvalidInput("{}: attribute 'stash_type' must be a floating-point type, got {}",
                        node.Where(), node.GetInt("stash_type", 1));
  }
  std::vector<int64_t> stat_dims = x.dims;
  std::fill(stat_dims.begin() + axis, stat_dims.end(), 1);
  std::vector<TensorType> types = {x};
  for (int i = 1; i < node.num_outputs(); ++i) types.push_back({*stash, stat_dims});
  return SetOutputs(node, out, std::move(types));
}

Status InferInstanceNormalization(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  const TensorType& x = node.input(0)->type();
  A8_RETURN_IF_ERROR(RequireFloatSpatial(node, "input"));
  static constexpr const char* kNames[] = {"input", "scale", "B"};
  for (int i = 1; i < 3; ++i) {
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "input", i, kNames[i]));
    if (node.input(i)->dims() != std::vector<int64_t>{x.dims[1]}) {
      return InvalidInput("{}: input '{}' must be [{}], got {}", node.Where(), kNames[i], x.dims[1],
                          node.input(i)->type().ToString());
    }
  }
  return SetOutputs(node, out, {x});
}

Status InferSoftmax(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "input"));
  const TensorType& x = node.input(0)->type();
  const int64_t dflt = node.version() != 0 && node.version() < 13 ? 1 : -1;
  A8_RETURN_IF_ERROR(
      NormalizeAxis(node, "attribute 'axis'", node.GetInt("axis", dflt), x.rank()).status());
  return SetOutputs(node, out, {x});
}

Status CheckDropoutControls(const OpNode& node, int ratio) {
  if (node.has_input(ratio)) {
    A8_RETURN_IF_ERROR(RequireRank(node, ratio, "ratio", 0));
    A8_RETURN_IF_ERROR(RequireFloat(node, ratio, "ratio"));
  }
  const int training_mode = ratio + 1;
  if (node.has_input(training_mode)) {
    A8_RETURN_IF_ERROR(RequireRank(node, training_mode, "training_mode", 0));
    if (node.input(training_mode)->dtype() != DType::kBool) {
      return InvalidInput("{}: input 'training_mode' must be bool, got {}", node.Where(),
                          node.input(training_mode)->type().ToString());
    }
  }
  return Status::Ok();
}

Status InferDropout(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "data"));
  const TensorType& x = node.input(0)->type();
  A8_RETURN_IF_ERROR(CheckDropoutControls(node, 1));
  std::vector<TensorType> types = {x};
  // Dropout-7's mask has the data's type; since 10 it is bool.
  const bool legacy_mask = node.version() != 0 && node.version() < 10;
  if (node.num_outputs() > 1) types.push_back({legacy_mask ? x.dtype : DType::kBool, x.dims});
  return SetOutputs(node, out, std::move(types));
}

namespace {

StatusOr<std::vector<int64_t>> LossOutputDims(const OpNode& node, const char* input_name,
                                              const char* target_name, const char* weight_name) {
  const TensorType& scores = node.input(0)->type();
  const TensorType& target = node.input(1)->type();
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, input_name));
  if (scores.rank() < 2) {
    return InvalidInput("{}: input '{}' must have rank >= 2 (N, C, ...), got {}", node.Where(),
                        input_name, scores.ToString());
  }
  if (target.dtype != DType::kI64 && target.dtype != DType::kI32) {
    return InvalidInput("{}: input '{}' must be i32 or i64, got {}", node.Where(), target_name,
                        target.ToString());
  }
  std::vector<int64_t> expected = scores.dims;
  expected.erase(expected.begin() + 1);
  if (target.dims != expected) {
    return InvalidInput("{}: input '{}' must be {} (input '{}' {} without the class dim), got {}",
                        node.Where(), target_name, DimsString(expected), input_name,
                        scores.ToString(), target.ToString());
  }
  if (node.has_input(2)) {
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, input_name, 2, weight_name));
    if (node.input(2)->dims() != std::vector<int64_t>{scores.dims[1]}) {
      return InvalidInput("{}: input '{}' must be [{}], got {}", node.Where(), weight_name,
                          scores.dims[1], node.input(2)->type().ToString());
    }
  }
  const std::string reduction = node.GetString("reduction", "mean");
  if (reduction == "none") return expected;
  if (reduction == "mean" || reduction == "sum") return std::vector<int64_t>{};
  return InvalidInput("{}: attribute 'reduction' is '{}' (expected none, mean or sum)",
                      node.Where(), reduction);
}

}  // namespace

Status InferSoftmaxCrossEntropyLoss(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      LossOutputDims(node, "scores", "labels", "weights"));
  const TensorType& scores = node.input(0)->type();
  std::vector<TensorType> types = {{scores.dtype, dims}};
  if (node.num_outputs() > 1) types.push_back(scores);  // log_prob
  return SetOutputs(node, out, std::move(types));
}

Status InferNegativeLogLikelihoodLoss(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, LossOutputDims(node, "input", "target", "weight"));
  return SetOutputs(node, out, {{node.input(0)->dtype(), dims}});
}

}  // namespace a8

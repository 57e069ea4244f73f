#include "compiler/onnx/import_decompose.h"

#include <fmt/format.h>

#include <cmath>

#include "compiler/onnx/import_decompose_internal.h"
#include "compiler/onnx/import_decompose_resize.h"

namespace a8 {
namespace decompose_internal {

Status CheckArity(const DecomposeRequest& req, size_t inputs) {
  if (req.inputs.size() != inputs || req.outputs.size() != 1) {
    return InvalidInput("{}: {} takes {} inputs and 1 output, got {} and {}", req.where, req.op,
                        inputs, req.inputs.size(), req.outputs.size());
  }
  for (size_t i = 0; i < inputs; ++i) {
    if (req.inputs[i] == nullptr) return InvalidInput("{}: input {} is missing", req.where, i);
  }
  return Status::Ok();
}

}  // namespace decompose_internal

namespace {

using decompose_internal::CheckArity;
using decompose_internal::Emitter;

StatusOr<std::vector<DecomposedNode>> DecomposePRelu(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 2));
  // PRelu-1/6 define a one-element slope (shared by every channel) and, implicitly, one of X's
  // shape; both mean the same under PRelu-7's broadcasting. Other slopes (Caffe2's per-channel
  // [C]) are not defined there.
  const Value* slope_in = req.inputs[1];
  if (req.version < 7 && !(slope_in->data() && slope_in->data()->num_elements() == 1)) {
    return Unsupported(
        "{}: PRelu-{} defines only a one-element constant slope (others broadcast in a legacy "
        "way); a800c supports other slopes from PRelu-7 (opset 7) on",
        req.where, req.version);
  }
  if (!req.attrs.empty()) {
    return InvalidInput("{}: unknown attribute '{}'", req.where, req.attrs.begin()->first);
  }
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* slope = req.inputs[1];
  Value* pos = e.Emit("Relu", 14, {x}, {}, "pos", false);
  Value* neg_x = e.Emit("Neg", 13, {x}, {}, "neg_x", false);
  Value* neg = e.Emit("Relu", 14, {neg_x}, {}, "neg", false);
  Value* scaled = e.Emit("Mul", 14, {slope, neg}, {}, "scaled", false);
  e.Emit("Sub", 14, {pos, scaled}, {}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeReduceLogSum(Graph& g, const DecomposeRequest& req) {
  // Before 18 the axes are an attribute (ReduceSum's form before 13); from 18 on an input (and
  // noop_with_empty_axes, as ReduceSum-13).
  const bool axes_input = req.version >= 18;
  if (req.inputs.empty() || req.inputs.size() > (axes_input ? 2u : 1u) || req.outputs.size() != 1 ||
      req.inputs[0] == nullptr) {
    return InvalidInput("{}: ReduceLogSum-{} takes data{} and one output", req.where, req.version,
                        axes_input ? " and optional axes" : "");
  }
  for (const auto& [key, value] : req.attrs) {
    if (key != "keepdims" && !(key == "axes" && !axes_input) &&
        !(key == "noop_with_empty_axes" && axes_input)) {
      return InvalidInput("{}: unknown attribute '{}'", req.where, key);
    }
  }
  Emitter e(g, req);
  Value* sum = e.Emit("ReduceSum", axes_input ? 13 : 11, req.inputs, req.attrs, "sum", false);
  e.Emit("Log", 13, {sum}, {}, "", true);
  return e.nodes();
}

// The scales of Upsample-1 (height_scale, width_scale of a 4-D input), -7 (`scales`) or -9 (a
// constant `scales` input).
StatusOr<std::vector<double>> UpsampleScales(const DecomposeRequest& req) {
  std::vector<double> scales;
  auto attr = [&](const std::string& name) -> const Attribute* {
    auto it = req.attrs.find(name);
    return it == req.attrs.end() ? nullptr : &it->second;
  };
  if (req.version < 7) {
    const Attribute* h = attr("height_scale");
    const Attribute* w = attr("width_scale");
    if (!h || !w || h->kind() != AttrKind::kFloat || w->kind() != AttrKind::kFloat) {
      return InvalidInput("{}: Upsample-1 needs float attributes height_scale and width_scale",
                          req.where);
    }
    scales = {1.0, 1.0, h->f(), w->f()};
  } else if (req.version < 9) {
    const Attribute* a = attr("scales");
    if (!a || a->kind() != AttrKind::kFloats) {
      return InvalidInput("{}: Upsample-7 needs the floats attribute 'scales'", req.where);
    }
    scales.assign(a->floats().begin(), a->floats().end());
  } else {
    const Value* v = req.inputs.size() == 2 ? req.inputs[1] : nullptr;
    if (v == nullptr || v->data() == nullptr) {
      // A graph input can be frozen from the command line; say how.
      const std::string hint =
          v != nullptr && v->role() == ValueRole::kInput
              ? fmt::format("; freeze graph input '{}' with --bind={}=FILE.npy", v->name(),
                            v->name())
              : std::string();
      return Unsupported(
          "{}: Upsample-{}'s input 'scales' must be a constant (a800c needs static shapes){}",
          req.where, req.version, hint);
    }
    for (int64_t i = 0; i < v->data()->num_elements(); ++i)
      scales.push_back(v->data()->GetDouble(i));
  }
  for (double s : scales) {
    if (!(s >= 1)) {
      return InvalidInput("{}: Upsample-{} has scale {} (Upsample's scales are >= 1)", req.where,
                          req.version, s);
    }
  }
  return scales;
}

// Upsample in mode 'nearest' with integer scales s: y[.., i, ..] = x[.., i / s, ..], that is each
// element repeated s times along its dim: Unsqueeze a size-1 dim after each dim, Expand it to s,
// Reshape to Shape(x) * s. Other modes and scales: as Resize (import_decompose_resize.cc).
StatusOr<std::vector<DecomposedNode>> DecomposeUpsample(Graph& g, const DecomposeRequest& req) {
  if (req.version >= 10) {
    return InvalidInput("{}: Upsample is deprecated from opset 10 on (ONNX replaced it by Resize)",
                        req.where);
  }
  const size_t inputs = req.version == 9 ? 2 : 1;
  A8_RETURN_IF_ERROR(CheckArity(req, inputs));
  for (const auto& [key, value] : req.attrs) {
    const bool known = key == "mode" ||
                       (req.version < 7 && (key == "height_scale" || key == "width_scale")) ||
                       (req.version >= 7 && req.version < 9 && key == "scales");
    if (!known) return InvalidInput("{}: unknown attribute '{}'", req.where, key);
  }
  A8_ASSIGN_OR_RETURN(std::string mode, decompose_internal::StringAttr(req, "mode", "nearest"));
  A8_ASSIGN_OR_RETURN(std::vector<double> scale_values, UpsampleScales(req));
  bool integers = mode == "nearest";
  for (double s : scale_values) integers = integers && s == std::floor(s);
  if (!integers) {
    return decompose_internal::DecomposeUpsampleByResize(g, req, scale_values, mode);
  }
  std::vector<int64_t> scales;
  for (double s : scale_values) scales.push_back(static_cast<int64_t>(s));
  const int64_t rank = static_cast<int64_t>(scales.size());
  std::vector<int64_t> axes, expand;
  for (int64_t i = 0; i < rank; ++i) {
    axes.push_back(2 * i + 1);
    expand.push_back(1);
    expand.push_back(scales[static_cast<size_t>(i)]);
  }
  auto ints = [&](const std::string& what, const std::vector<int64_t>& v) {
    return g.AddConstant(req.fresh_name(req.name + "." + what),
                         TensorData::FromInt64s(v, {static_cast<int64_t>(v.size())}));
  };
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* spread = e.Emit("Unsqueeze", 13, {x, ints("spread_axes", axes)}, {}, "spread", false);
  Value* copies = e.Emit("Expand", 13, {spread, ints("copies_shape", expand)}, {}, "copies", false);
  Value* shape = e.Emit("Shape", 13, {x}, {}, "shape", false);
  Value* out_shape = e.Emit("Mul", 14, {shape, ints("scales", scales)}, {}, "out_shape", false);
  e.Emit("Reshape", 14, {copies, out_shape}, {}, "", true);
  return e.nodes();
}

// BitwiseNot-18 (x) -> BitwiseXor(x, all ones), all ones being 0 - 1 in x's type (wrapping).
StatusOr<std::vector<DecomposedNode>> DecomposeBitwiseNot(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  if (!req.attrs.empty()) {
    return InvalidInput("{}: unknown attribute '{}'", req.where, req.attrs.begin()->first);
  }
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* zero = e.Emit("CastLike", 15, {e.Int64s("zero", {0}, {}), x}, {}, "zero", false);
  Value* one = e.Emit("CastLike", 15, {e.Int64s("one", {1}, {}), x}, {}, "one", false);
  Value* ones = e.Emit("Sub", 14, {zero, one}, {}, "all_ones", false);
  e.Emit("BitwiseXor", 18, {x, ones}, {}, "", true);
  return e.nodes();
}

// Scatter-9/11 (deprecated in 11) is ScatterElements-11 under another name.
StatusOr<std::vector<DecomposedNode>> DecomposeScatter(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 3));
  for (const auto& [key, value] : req.attrs) {
    if (key != "axis") return InvalidInput("{}: unknown attribute '{}'", req.where, key);
  }
  Emitter e(g, req);
  e.Emit("ScatterElements", 11, req.inputs, req.attrs, "", true);
  return e.nodes();
}

// TensorScatter-24 (past_cache, update, write_indices?) {axis=-2, mode}: the KV-cache write
//   present[p.., w[b] + i (mod max_seq when circular), ..] = update[p.., i, ..]
// as ScatterElements along `axis` with the index (w[b] + i) broadcast to update's shape; an index
// past the cache in mode 'linear' is the scatter's run error.
StatusOr<std::vector<DecomposedNode>> DecomposeTensorScatter(Graph& g,
                                                             const DecomposeRequest& req) {
  const bool has_w = req.inputs.size() == 3 && req.inputs[2] != nullptr;
  if (req.inputs.size() < 2 || req.inputs.size() > 3 || req.inputs[0] == nullptr ||
      req.inputs[1] == nullptr || req.outputs.size() != 1) {
    return InvalidInput(
        "{}: TensorScatter takes past_cache, update, optional write_indices and one output",
        req.where);
  }
  A8_RETURN_IF_ERROR(decompose_internal::CheckAttrs(req, {"axis", "mode"}));
  A8_ASSIGN_OR_RETURN(int64_t rank, decompose_internal::RankOf(req, "TensorScatter"));
  A8_ASSIGN_OR_RETURN(int64_t axis_attr, decompose_internal::IntAttr(req, "axis", -2));
  A8_ASSIGN_OR_RETURN(int64_t axis, decompose_internal::NormalizedAxis(req, axis_attr, rank));
  if (axis == 0) {
    return InvalidInput("{}: attribute 'axis' must not be the batch axis 0", req.where);
  }
  A8_ASSIGN_OR_RETURN(std::string mode, decompose_internal::StringAttr(req, "mode", "linear"));
  if (mode != "linear" && mode != "circular") {
    return InvalidInput("{}: attribute 'mode' '{}' must be linear or circular", req.where, mode);
  }
  Emitter e(g, req);
  Value* past = req.inputs[0];
  Value* update = req.inputs[1];
  // i along `axis` of a tensor of update's rank (ones elsewhere).
  std::vector<int64_t> other_axes;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) other_axes.push_back(d);
  }
  Value* pos = e.Emit("Unsqueeze", 13,
                      {decompose_internal::Iota(e, update, axis, "seq"),
                       e.Int64s("seq_axes", other_axes, {static_cast<int64_t>(other_axes.size())})},
                      {}, "seq_nd", false);
  if (has_w) {
    std::vector<int64_t> trailing;
    for (int64_t d = 1; d < rank; ++d) trailing.push_back(d);
    Value* w = e.Emit(
        "Unsqueeze", 13,
        {req.inputs[2], e.Int64s("w_axes", trailing, {static_cast<int64_t>(trailing.size())})}, {},
        "write_nd", false);
    pos = e.Emit("Add", 14, {w, pos}, {}, "pos", false);
  }
  if (mode == "circular") {
    Value* max_seq =
        e.Emit("Shape", 15, {past}, {{"start", axis}, {"end", axis + 1}}, "max_seq", false);
    pos = e.Emit("Mod", 13, {pos, max_seq}, {}, "pos_mod", false);
  }
  Value* shape = e.Emit("Shape", 15, {update}, {}, "update_shape", false);
  Value* index = e.Emit("Expand", 13, {pos, shape}, {}, "index", false);
  e.Emit("ScatterElements", 18, {past, index, update}, {{"axis", Attribute(axis)}}, "", true);
  return e.nodes();
}

// Every decomposed op of the default domain and its function.
const decompose_internal::DecomposeTable& Decompositions() {
  static const decompose_internal::DecomposeTable table = [] {
    decompose_internal::DecomposeTable t = {
        {"PRelu", DecomposePRelu},       {"ReduceLogSum", DecomposeReduceLogSum},
        {"Upsample", DecomposeUpsample}, {"BitwiseNot", DecomposeBitwiseNot},
        {"Scatter", DecomposeScatter},   {"TensorScatter", DecomposeTensorScatter}};
    decompose_internal::AddNnDecompositions(&t);
    decompose_internal::AddMoreDecompositions(&t);
    decompose_internal::AddAttentionDecompositions(&t);
    decompose_internal::AddSignalDecompositions(&t);
    decompose_internal::AddResizeDecompositions(&t);
    decompose_internal::AddRnnDecompositions(&t);
    decompose_internal::AddLinearAttentionDecompositions(&t);
    decompose_internal::AddFlexAttentionDecompositions(&t);
    decompose_internal::AddQuantDecompositions(&t);
    decompose_internal::AddQuantIntegerDecompositions(&t);
    return t;
  }();
  return table;
}

}  // namespace

bool IsDecomposedOp(std::string_view op) { return Decompositions().count(op) != 0; }

StatusOr<std::vector<DecomposedNode>> Decompose(Graph& g, DecomposeRequest req) {
  auto it = Decompositions().find(req.op);
  if (it == Decompositions().end())
    return Internal("{}: {} is not a decomposed op", req.where, req.op);
  return it->second(g, req);
}

}  // namespace a8

// Resize-10/11/13/18/19, and Upsample-7/9 in the forms the nearest-by-integers decomposition
// does not cover, as per-axis linear maps (import_decompose_resize.h):
//   for each resized axis d (in -> out): y = MatMul(x, W^T) on the last axis, else
//   Reshape(MatMul(W, Reshape(x, [pre, in, post])), dims with out at d); tf_crop_and_resize adds
//   extrapolation_value * mask (mask[i] = 1 where the source position is outside the input).
// W is computed here at import from the static dims, so scales / sizes / roi must be constants.
#include "compiler/onnx/import_decompose_resize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "compiler/onnx/import_decompose_internal.h"

namespace a8::decompose_internal {
namespace {

// onnx's _nearest_coeffs, _linear_coeffs(_antialias), _cubic_coeffs(_antialias).
std::vector<double> Coeffs(double ratio, double scale, const ResizeAxisOptions& o) {
  if (o.mode == "nearest") {
    if (ratio == std::floor(ratio)) return {0, 1};
    bool right = false;
    if (o.nearest_mode == "round_prefer_floor") right = ratio > 0.5;
    if (o.nearest_mode == "round_prefer_ceil") right = ratio >= 0.5;
    if (o.nearest_mode == "ceil") right = true;
    return {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
  }
  if (o.mode == "linear") {
    if (!o.antialias) return {1 - ratio, ratio};
    const double s = std::min(scale, 1.0);
    const int64_t start = static_cast<int64_t>(std::floor(-1 / s) + 1);
    const int64_t footprint = 2 - 2 * start;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = start; i < start + footprint; ++i) {
      c.push_back(std::clamp(1 - std::abs((static_cast<double>(i) - ratio) * s), 0.0, 1.0));
      sum += c.back();
    }
    for (double& v : c) v /= sum;
    return c;
  }
  const double a = o.cubic_coeff_a;
  if (!o.antialias) {
    const double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
    return {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a,
            ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1, ((a + 2) * q - (a + 3)) * q * q + 1,
            ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a};
  }
  const double s = std::min(scale, 1.0);
  auto coeff = [a](double x) {
    x = std::abs(x);
    if (x <= 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
    if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
    return 0.0;
  };
  const int64_t i_start = static_cast<int64_t>(std::floor(-2 / s) + 1);
  const int64_t i_end = 2 - i_start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = i_start; i < i_end; ++i) {
    c.push_back(coeff(s * (static_cast<double>(i) - ratio)));
    sum += c.back();
  }
  for (double& v : c) v /= sum;
  return c;
}

}  // namespace

StatusOr<ResizeAxisMap> ResizeAxisWeights(int64_t in, int64_t out, double scale,
                                          const ResizeAxisOptions& o) {
  if (in <= 0 || out < 0) return InvalidInput("resize from {} to {} elements", in, out);
  ResizeAxisMap m;
  m.weights.assign(static_cast<size_t>(out * in), 0.0);
  m.extrapolated.assign(static_cast<size_t>(out), 0);
  const double in_w = static_cast<double>(in);
  const double out_w = scale * in_w;  // the reference's (float) output_width
  const std::string& cm = o.coordinate_mode;
  for (int64_t i = 0; i < out; ++i) {
    const double y = static_cast<double>(i);
    double x = 0;
    if (cm == "align_corners") {
      x = out_w == 1 ? 0.0 : y * (in_w - 1) / (out_w - 1);
    } else if (cm == "asymmetric") {
      x = y / scale;
    } else if (cm == "tf_crop_and_resize") {
      x = out_w == 1 ? (o.roi_end - o.roi_start) * (in_w - 1) / 2
                     : y * (o.roi_end - o.roi_start) * (in_w - 1) / (out_w - 1);
      x = x + o.roi_start * (in_w - 1);
      if (x < 0 || x > in_w - 1) {
        m.extrapolated[static_cast<size_t>(i)] = 1;
        continue;
      }
    } else if (cm == "pytorch_half_pixel") {
      x = out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    } else if (cm == "half_pixel") {
      x = (y + 0.5) / scale - 0.5;
    } else if (cm == "half_pixel_symmetric") {
      const double adjustment = static_cast<double>(out) / out_w;
      const double center = in_w / 2;
      x = center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
    } else if (cm == "tf_half_pixel_for_nn") {  // Resize-11 only
      x = (y + 0.5) / scale;
    } else {
      return InvalidInput("unknown coordinate_transformation_mode '{}'", cm);
    }
    const double x_int = std::floor(x);
    const double ratio = x == x_int ? 1.0 : x - x_int;
    std::vector<double> c = Coeffs(ratio, scale, o);
    const int64_t n = static_cast<int64_t>(c.size());
    // The n nearest indices to x (ties to the smaller), as the reference's vectorised
    // _get_neighbor_idxes over the edge-padded input.
    const int64_t pad = (n + 1) / 2;
    const double xp = x + static_cast<double>(pad);
    const int64_t p = static_cast<int64_t>(std::floor(xp));
    const double frac = xp - static_cast<double>(p);
    int64_t offset;
    if (n % 2 == 0) {
      offset = frac == 0 ? -(n / 2) : -(n / 2) + 1;
    } else {
      offset = frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1;
    }
    const int64_t start = p + offset - pad;
    if (o.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t idx = start + k;
        if (idx < 0 || idx >= in) c[static_cast<size_t>(k)] = 0;
        sum += c[static_cast<size_t>(k)];
      }
      if (sum == 0) sum = 1;
      for (double& v : c) v /= sum;
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t idx = std::clamp<int64_t>(start + k, 0, in - 1);
      m.weights[static_cast<size_t>(i * in + idx)] += c[static_cast<size_t>(k)];
    }
  }
  return m;
}

namespace {

// The static dims of X, which `op` (Resize, Upsample) needs: a800c builds its interpolation
// matrices at import.
StatusOr<std::vector<int64_t>> StaticDimsOfX(const DecomposeRequest& req, std::string_view op) {
  std::optional<std::vector<int64_t>> dims =
      req.known_dims ? req.known_dims(req.inputs[0]) : std::nullopt;
  if (!dims) {
    return Unsupported(
        "{}: {} needs the static shape of input '{}', which the model does "
        "not declare (a800c builds its interpolation matrices at import)",
        req.where, op, req.inputs[0]->name());
  }
  return *std::move(dims);
}

struct ResizePlan {
  ResizeAxisOptions options;
  double extrapolation_value = 0;
  std::vector<int64_t> in_dims, out_dims;
  std::vector<double> scales;              // per dim
  std::vector<double> roi_start, roi_end;  // per dim
  std::vector<int64_t> axes;               // the resized dims, in order
};

StatusOr<std::vector<double>> ConstantDoubles(const DecomposeRequest& req, int i,
                                              std::string_view field) {
  A8_RETURN_IF_ERROR(RequireConstant(req, i, field));
  std::vector<double> v;
  const TensorData& d = *req.inputs[static_cast<size_t>(i)]->data();
  for (int64_t k = 0; k < d.num_elements(); ++k) v.push_back(d.GetDouble(k));
  return v;
}

// Reads the attributes and constant inputs of Resize-10..19 into `plan`.
Status PlanResize(const DecomposeRequest& req, ResizePlan& plan) {
  const int v = req.version;
  if (req.inputs.empty() || req.inputs[0] == nullptr || req.outputs.size() != 1 ||
      req.inputs.size() > (v == 10 ? 2u : 4u)) {
    return InvalidInput("{}: Resize-{} takes X, {} and one output", req.where, v,
                        v == 10 ? "scales" : "roi, scales, sizes");
  }
  if (v == 10) {
    A8_RETURN_IF_ERROR(CheckAttrs(req, {"mode"}));
  } else if (v < 18) {
    A8_RETURN_IF_ERROR(CheckAttrs(req, {"mode", "coordinate_transformation_mode", "cubic_coeff_a",
                                        "exclude_outside", "extrapolation_value", "nearest_mode"}));
  } else {
    A8_RETURN_IF_ERROR(CheckAttrs(req, {"mode", "coordinate_transformation_mode", "cubic_coeff_a",
                                        "exclude_outside", "extrapolation_value", "nearest_mode",
                                        "antialias", "axes", "keep_aspect_ratio_policy"}));
  }
  ResizeAxisOptions& o = plan.options;
  A8_ASSIGN_OR_RETURN(o.mode, StringAttr(req, "mode", "nearest"));
  if (o.mode != "nearest" && o.mode != "linear" && !(o.mode == "cubic" && v >= 11)) {
    return InvalidInput("{}: attribute 'mode' '{}' must be nearest, linear{}", req.where, o.mode,
                        v >= 11 ? " or cubic" : "");
  }
  if (v == 10) {
    // Resize-10 samples at x / scale (onnx's 10 -> 11 adapter: asymmetric), and onnxruntime
    // picks the nearest as floor upward, ceil downward.
    o.coordinate_mode = "asymmetric";
  } else {
    A8_ASSIGN_OR_RETURN(o.coordinate_mode,
                        StringAttr(req, "coordinate_transformation_mode", "half_pixel"));
    static const std::set<std::string> kModes = {
        "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"};
    const bool known = kModes.count(o.coordinate_mode) ||
                       (o.coordinate_mode == "tf_half_pixel_for_nn" && v == 11) ||
                       (o.coordinate_mode == "half_pixel_symmetric" && v >= 19);
    if (!known) {
      return InvalidInput(
          "{}: attribute 'coordinate_transformation_mode' '{}' is not defined "
          "in Resize-{}",
          req.where, o.coordinate_mode, v);
    }
    A8_ASSIGN_OR_RETURN(o.nearest_mode, StringAttr(req, "nearest_mode", "round_prefer_floor"));
    if (o.nearest_mode != "round_prefer_floor" && o.nearest_mode != "round_prefer_ceil" &&
        o.nearest_mode != "floor" && o.nearest_mode != "ceil") {
      return InvalidInput("{}: attribute 'nearest_mode' '{}' is not defined", req.where,
                          o.nearest_mode);
    }
    A8_ASSIGN_OR_RETURN(float a, FloatAttr(req, "cubic_coeff_a", -0.75f));
    o.cubic_coeff_a = a;
    A8_ASSIGN_OR_RETURN(int64_t exclude, IntAttr(req, "exclude_outside", 0));
    o.exclude_outside = exclude != 0;
    A8_ASSIGN_OR_RETURN(float extrapolation, FloatAttr(req, "extrapolation_value", 0.0f));
    plan.extrapolation_value = extrapolation;
  }
  A8_ASSIGN_OR_RETURN(int64_t antialias, IntAttr(req, "antialias", 0));
  o.antialias = antialias != 0;
  if (o.antialias && o.mode == "nearest") {
    return Unsupported("{}: attribute 'antialias' applies to modes linear and cubic, not nearest",
                       req.where);
  }
  A8_ASSIGN_OR_RETURN(std::string policy, StringAttr(req, "keep_aspect_ratio_policy", "stretch"));
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
    return InvalidInput(
        "{}: attribute 'keep_aspect_ratio_policy' '{}' must be stretch, "
        "not_larger or not_smaller",
        req.where, policy);
  }

  A8_ASSIGN_OR_RETURN(plan.in_dims, StaticDimsOfX(req, "Resize"));
  const int64_t rank = static_cast<int64_t>(plan.in_dims.size());
  std::vector<int64_t> axes;
  auto it = req.attrs.find("axes");
  if (it != req.attrs.end()) {
    if (it->second.kind() != AttrKind::kInts) {
      return InvalidInput("{}: attribute 'axes' must be ints", req.where);
    }
    std::set<int64_t> seen;
    for (int64_t a : it->second.ints()) {
      A8_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(req, a, rank));
      if (!seen.insert(axis).second) {
        return InvalidInput("{}: attribute 'axes' repeats axis {}", req.where, a);
      }
      axes.push_back(axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const size_t na = axes.size();

  // roi, scales, sizes (an input with no elements counts as absent).
  const size_t scales_i = v == 10 ? 1 : 2;
  std::vector<double> roi, scales, sizes;
  if (v >= 11 && Present(req, 1) && o.coordinate_mode == "tf_crop_and_resize") {
    A8_ASSIGN_OR_RETURN(roi, ConstantDoubles(req, 1, "roi"));
  }
  if (Present(req, scales_i)) {
    A8_ASSIGN_OR_RETURN(scales, ConstantDoubles(req, static_cast<int>(scales_i), "scales"));
  }
  if (v >= 11 && Present(req, 3)) {
    A8_ASSIGN_OR_RETURN(sizes, ConstantDoubles(req, 3, "sizes"));
  }
  if (scales.empty() == sizes.empty()) {
    return InvalidInput("{}: exactly one of the inputs 'scales' and 'sizes' must be given",
                        req.where);
  }
  if (!scales.empty() && scales.size() != na) {
    return InvalidInput("{}: input 'scales' has {} elements for {} axes", req.where, scales.size(),
                        na);
  }
  if (!sizes.empty() && sizes.size() != na) {
    return InvalidInput("{}: input 'sizes' has {} elements for {} axes", req.where, sizes.size(),
                        na);
  }
  plan.roi_start.assign(static_cast<size_t>(rank), 0.0);
  plan.roi_end.assign(static_cast<size_t>(rank), 1.0);
  if (o.coordinate_mode == "tf_crop_and_resize") {
    if (roi.size() != 2 * na) {
      return InvalidInput(
          "{}: coordinate_transformation_mode tf_crop_and_resize needs input "
          "'roi' with {} elements, got {}",
          req.where, 2 * na, roi.size());
    }
    for (size_t k = 0; k < na; ++k) {
      plan.roi_start[static_cast<size_t>(axes[k])] = roi[k];
      plan.roi_end[static_cast<size_t>(axes[k])] = roi[na + k];
    }
  }
  plan.scales.assign(static_cast<size_t>(rank), 1.0);
  plan.out_dims = plan.in_dims;
  if (!scales.empty()) {
    for (size_t k = 0; k < na; ++k) {
      const size_t d = static_cast<size_t>(axes[k]);
      if (!(scales[k] > 0)) {
        return InvalidInput("{}: input 'scales' has {} (scales must be positive)", req.where,
                            scales[k]);
      }
      plan.scales[d] = scales[k];
      plan.out_dims[d] = static_cast<int64_t>(scales[k] * static_cast<double>(plan.in_dims[d]));
    }
  } else {
    for (size_t k = 0; k < na; ++k) {
      const size_t d = static_cast<size_t>(axes[k]);
      if (sizes[k] < 0) {
        return InvalidInput("{}: input 'sizes' has {} (sizes must be >= 0)", req.where, sizes[k]);
      }
      plan.out_dims[d] = static_cast<int64_t>(sizes[k]);
      plan.scales[d] = sizes[k] / static_cast<double>(plan.in_dims[d]);
    }
    if (policy != "stretch") {
      double s = plan.scales[static_cast<size_t>(axes[0])];
      for (int64_t a : axes) {
        const double sa = plan.scales[static_cast<size_t>(a)];
        s = policy == "not_larger" ? std::min(s, sa) : std::max(s, sa);
      }
      for (int64_t a : axes) {
        const size_t d = static_cast<size_t>(a);
        plan.scales[d] = s;
        plan.out_dims[d] = static_cast<int64_t>(s * static_cast<double>(plan.in_dims[d]) + 0.5);
      }
    }
  }
  for (int64_t d : plan.in_dims) {
    if (d <= 0) {
      return Unsupported("{}: Resize of input '{}' with an empty dim", req.where,
                         req.inputs[0]->name());
    }
  }
  plan.axes = axes;
  return Status::Ok();
}

// Emits the per-axis maps of `plan` on x; the last node gives the request's output.
StatusOr<std::vector<DecomposedNode>> EmitResize(Graph& g, const DecomposeRequest& req,
                                                 const ResizePlan& plan, bool nearest_simple) {
  Emitter e(g, req);
  const DType dtype =
      req.known_dtype ? req.known_dtype(req.inputs[0]).value_or(DType::kF32) : DType::kF32;
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16 &&
      dtype != DType::kF64) {
    return Unsupported("{}: Resize of input '{}' of type {} (a800c resizes float tensors)",
                       req.where, req.inputs[0]->name(), DTypeName(dtype));
  }
  const int64_t rank = static_cast<int64_t>(plan.in_dims.size());
  // The axes that change (onnx's reference skips the identity ones).
  std::vector<int64_t> todo;
  for (int64_t a : plan.axes) {
    const size_t d = static_cast<size_t>(a);
    const bool identity =
        std::abs(plan.scales[d] - 1.0) <= 1e-9 && plan.out_dims[d] == plan.in_dims[d] &&
        std::abs(plan.roi_start[d]) <= 1e-9 && std::abs(plan.roi_end[d] - 1.0) <= 1e-9;
    if (!identity) todo.push_back(a);
  }
  Value* x = req.inputs[0];
  if (todo.empty()) {
    e.Emit("Identity", 16, {x}, {}, "", true);
    return e.nodes();
  }
  auto constant = [&](const std::string& suffix, const std::vector<double>& v,
                      std::vector<int64_t> shape) -> Value* {
    TensorType t{dtype == DType::kF64 ? DType::kF64 : DType::kF32, shape};
    std::shared_ptr<TensorData> data = TensorData::Make(t);
    for (size_t k = 0; k < v.size(); ++k) {
      if (t.dtype == DType::kF64) {
        data->mutable_data<double>()[k] = v[k];
      } else {
        data->mutable_data<float>()[k] = static_cast<float>(v[k]);
      }
    }
    Value* c = e.Constant(suffix, data);
    if (dtype == DType::kF32 || dtype == DType::kF64) return c;
    return e.Emit("CastLike", 15, {c, req.inputs[0]}, {}, suffix + "_cast", false);
  };
  std::vector<int64_t> dims = plan.in_dims;
  for (size_t t = 0; t < todo.size(); ++t) {
    const int64_t a = todo[t];
    const size_t d = static_cast<size_t>(a);
    const bool last = t + 1 == todo.size();
    const std::string tag = fmt::format("axis{}", a);
    const int64_t in = dims[d], out = plan.out_dims[d];
    ResizeAxisOptions o = plan.options;
    o.roi_start = plan.roi_start[d];
    o.roi_end = plan.roi_end[d];
    if (nearest_simple) o.nearest_mode = plan.scales[d] < 1 ? "ceil" : "floor";
    auto map = ResizeAxisWeights(in, out, plan.scales[d], o);
    if (!map.ok()) return InvalidInput("{}: {}", req.where, map.status().message());
    const bool extrapolate = std::any_of(map->extrapolated.begin(), map->extrapolated.end(),
                                         [](uint8_t b) { return b != 0; });
    const bool matmul_last = !extrapolate && last;
    std::vector<int64_t> new_dims = dims;
    new_dims[d] = out;
    Value* y;
    if (a == rank - 1) {
      std::vector<double> wt(static_cast<size_t>(in * out));
      for (int64_t i = 0; i < out; ++i) {
        for (int64_t j = 0; j < in; ++j) {
          wt[static_cast<size_t>(j * out + i)] = map->weights[static_cast<size_t>(i * in + j)];
        }
      }
      y = e.Emit("MatMul", 13, {x, constant(tag + "_wt", wt, {in, out})}, {}, tag, matmul_last);
    } else {
      int64_t pre = 1, post = 1;
      for (int64_t k = 0; k < a; ++k) pre *= dims[static_cast<size_t>(k)];
      for (int64_t k = a + 1; k < rank; ++k) post *= dims[static_cast<size_t>(k)];
      Value* x3 = e.Emit("Reshape", 14, {x, e.Int64s(tag + "_3d", {pre, in, post}, {3})}, {},
                         tag + "_3d", false);
      Value* y3 = e.Emit("MatMul", 13, {constant(tag + "_w", map->weights, {out, in}), x3}, {},
                         tag + "_mm", false);
      y = e.Emit("Reshape", 14, {y3, e.Int64s(tag + "_shape", new_dims, {rank})}, {}, tag,
                 matmul_last);
    }
    if (extrapolate) {
      std::vector<int64_t> mask_shape(static_cast<size_t>(rank - a), 1);
      mask_shape[0] = out;
      std::vector<double> mask(static_cast<size_t>(out));
      for (int64_t i = 0; i < out; ++i) {
        mask[static_cast<size_t>(i)] =
            map->extrapolated[static_cast<size_t>(i)] ? plan.extrapolation_value : 0.0;
      }
      y = e.Emit("Add", 14, {y, constant(tag + "_extrapolated", mask, mask_shape)}, {}, tag + "_ex",
                 last);
    }
    x = y;
    dims = new_dims;
  }
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeResize(Graph& g, const DecomposeRequest& req) {
  ResizePlan plan;
  A8_RETURN_IF_ERROR(PlanResize(req, plan));
  return EmitResize(g, req, plan, req.version == 10 && plan.options.mode == "nearest");
}

}  // namespace

// Upsample-7/9 (x, scales) {mode}: Resize-10 with the same scales (asymmetric coordinates,
// nearest as onnxruntime picks it); Upsample-1's 'bilinear' is 'linear' on a 4-D input.
StatusOr<std::vector<DecomposedNode>> DecomposeUpsampleByResize(Graph& g,
                                                                const DecomposeRequest& req,
                                                                const std::vector<double>& scales,
                                                                const std::string& mode) {
  ResizePlan plan;
  plan.options.mode = mode == "bilinear" ? "linear" : mode;
  if (plan.options.mode != "nearest" && plan.options.mode != "linear") {
    return InvalidInput("{}: attribute 'mode' '{}' must be nearest or linear", req.where, mode);
  }
  plan.options.coordinate_mode = "asymmetric";
  A8_ASSIGN_OR_RETURN(plan.in_dims, StaticDimsOfX(req, "Upsample"));
  if (plan.in_dims.size() != scales.size()) {
    return InvalidInput("{}: {} scales for an input of rank {}", req.where, scales.size(),
                        plan.in_dims.size());
  }
  plan.out_dims = plan.in_dims;
  plan.scales = scales;
  plan.roi_start.assign(scales.size(), 0.0);
  plan.roi_end.assign(scales.size(), 1.0);
  for (size_t d = 0; d < scales.size(); ++d) {
    if (!(scales[d] > 0) || plan.in_dims[d] <= 0) {
      return InvalidInput("{}: scale {} for dim {} of size {}", req.where, scales[d], d,
                          plan.in_dims[d]);
    }
    plan.out_dims[d] = static_cast<int64_t>(scales[d] * static_cast<double>(plan.in_dims[d]));
    plan.axes.push_back(static_cast<int64_t>(d));
  }
  return EmitResize(g, req, plan, plan.options.mode == "nearest");
}

void AddResizeDecompositions(DecomposeTable* t) { (*t)["Resize"] = DecomposeResize; }

}  // namespace a8::decompose_internal

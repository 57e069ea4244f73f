// ONNX ops imported as a few nodes of ops a800c has (see import_decompose.h):
//
//   RMSNormalization-23 (x, scale; axis, epsilon, stash_type=1)
//       -> xf = Cast<float>(x); Mul(CastLike(Div(xf, Sqrt(Add(ReduceMean(Mul(xf, xf), axes
//          [axis, rank)), epsilon))), x), scale): ONNX's definition, the statistics in fp32 as
//          stash_type 1 asks (the pinned-fp32 Reduce/Sqrt carry them under amp, LayerNorm's
//          precision class). A non-negative axis needs x's rank at import.
//   LpNormalization-1/22 (x; axis, p in {1, 2}) -> Div(x, ReduceL<p>(x, [axis], keepdims=1)),
//       0 where the norm is 0 (Where on Equal(norm, 0), the divisor there 1).
//   Hardmax-13 (x; axis) -> CastLike(Equal(iota along axis, ArgMax(x, axis, keepdims=1)), x),
//       the first maximum winning as ONNX says; the iota is ConstantOfShape + exclusive CumSum of
//       x's dim, folded to a constant. Hardmax-1/11 (the 2-D coercion) flattens at `axis` first
//       and reshapes back. Not differentiable (ArgMax).
//   EyeLike-9/22 (x; dtype, k) -> Cast(Equal(row iota + k, column iota)): a constant once x's
//       static shape is known.
//   DepthToSpace-1/11/13/28, SpaceToDepth-1/13/28 (x; blocksize, mode DCR/CRD) -> Reshape,
//       Transpose, Reshape, the shapes computed from Shape(x) (folded): the numpy definitions of
//       the ONNX documentation.
//   Compress-9/11 (x, condition; axis) with a constant condition (a graph input frozen with
//       --bind) -> Gather(x, the indices where condition holds, axis); without an axis, of
//       Reshape(x, [-1]).
//   CenterCropPad-18 (x, shape; axes) with a constant shape -> Pad(Slice(x, crop window), pads,
//       axes), the window and the pads computed from Shape(x) (folded): crop start
//       max(d - t, 0) / 2, pad before max(t - d, 0) / 2, the odd pixel after.
//   GroupNormalization-21 (x, scale, bias; num_groups, epsilon, stash_type=1) -> in float:
//       Reshape(x, [N, G, -1]), mean and variance over the last axis (ReduceMean), normalized,
//       reshaped back, then * scale + bias per channel. Needs x's rank.
//   LRN-1/13 (x; size, alpha, beta, bias) -> x / (bias + alpha * AveragePool(x^2))^beta, the
//       pool over channels of Reshape(x^2, [N, 1, C, -1]) with kernel [size, 1], count_include_pad
//       and pads floor((size-1)/2) before, ceil after: ONNX's window sum divided by size.
#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/onnx/import_decompose.h"
#include "compiler/onnx/import_decompose_internal.h"

namespace a8 {
namespace {

using namespace decompose_internal;  // Emitter, Input, the attribute readers

StatusOr<std::vector<DecomposedNode>> DecomposeRmsNorm(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 2));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"axis", "epsilon", "stash_type"}));
  A8_ASSIGN_OR_RETURN(int64_t axis, IntAttr(req, "axis", -1));
  A8_ASSIGN_OR_RETURN(float epsilon, FloatAttr(req, "epsilon", 1e-5f));
  A8_ASSIGN_OR_RETURN(int64_t stash, IntAttr(req, "stash_type", 1));
  if (stash != kOnnxFloat) {
    return Unsupported("{}: stash_type {} is not supported (a800c computes in float: 1)", req.where,
                       stash);
  }
  // axes [axis, rank): with a negative axis they are [axis, -1] whatever the rank.
  std::vector<int64_t> axes;
  if (axis < 0) {
    for (int64_t a = axis; a < 0; ++a) axes.push_back(a);
  } else {
    A8_ASSIGN_OR_RETURN(int64_t rank, RankOf(req, "a non-negative axis"));
    A8_ASSIGN_OR_RETURN(int64_t a0, NormalizedAxis(req, axis, rank));
    for (int64_t a = a0; a < rank; ++a) axes.push_back(a);
  }
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* xf = e.Emit("Cast", 13, {x}, {{"to", Attribute(kOnnxFloat)}}, "xf", false);
  Value* sq = e.Emit("Mul", 14, {xf, xf}, {}, "sq", false);
  Value* ms = e.Emit("ReduceMean", 13, {sq}, {{"axes", Attribute(axes)}, {"keepdims", 1}},
                     "mean_sq", false);
  Value* eps = e.Constant("epsilon", TensorData::FromFloats({epsilon}, {}));
  Value* mse = e.Emit("Add", 14, {ms, eps}, {}, "mean_sq_eps", false);
  Value* rms = e.Emit("Sqrt", 13, {mse}, {}, "rms", false);
  Value* nf = e.Emit("Div", 14, {xf, rms}, {}, "normalized_f", false);
  Value* n = e.Emit("CastLike", 15, {nf, x}, {}, "normalized", false);
  e.Emit("Mul", 14, {n, req.inputs[1]}, {}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeLpNorm(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"axis", "p"}));
  A8_ASSIGN_OR_RETURN(int64_t axis, IntAttr(req, "axis", -1));
  A8_ASSIGN_OR_RETURN(int64_t p, IntAttr(req, "p", 2));
  if (p != 1 && p != 2) return InvalidInput("{}: p must be 1 or 2, got {}", req.where, p);
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* norm =
      e.Emit(p == 1 ? "ReduceL1" : "ReduceL2", 13, {x},
             {{"axes", Attribute(std::vector<int64_t>{axis})}, {"keepdims", 1}}, "norm", false);
  // A zero norm (an all-zero line) gives zeros, as onnxruntime and the ONNX reference do, not
  // 0/0: the divisor there is 1 (so no NaN reaches a gradient) and the quotient is replaced by 0.
  auto scalar = [&](const char* suffix, float v) {
    return e.Emit("CastLike", 15, {e.Constant(suffix, TensorData::FromFloats({v}, {})), x}, {},
                  std::string(suffix) + "_x", false);
  };
  Value* zero = scalar("zero", 0.0f);
  Value* is_zero = e.Emit("Equal", 13, {norm, zero}, {}, "is_zero", false);
  Value* divisor = e.Emit("Where", 16, {is_zero, scalar("one", 1.0f), norm}, {}, "divisor", false);
  Value* quotient = e.Emit("Div", 14, {x, divisor}, {}, "quotient", false);
  e.Emit("Where", 16, {is_zero, zero, quotient}, {}, "", true);
  return e.nodes();
}

// [0, 1, ..., d-1] as i64 where d = dims [start, start+1) of `x` (folded once x's shape is known).

StatusOr<std::vector<DecomposedNode>> DecomposeHardmax(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"axis"}));
  const bool coerce_2d = req.version < 13;
  A8_ASSIGN_OR_RETURN(int64_t axis_attr, IntAttr(req, "axis", coerce_2d ? 1 : -1));
  A8_ASSIGN_OR_RETURN(int64_t rank, RankOf(req, "Hardmax"));
  A8_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(req, axis_attr, rank));
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* in = x;
  if (coerce_2d && axis != rank - 1) {
    // Hardmax-1/11: over the flattened dims [axis, rank) of the 2-D [prod(<axis), prod(>=axis)].
    in = e.Emit("Flatten", 13, {x}, {{"axis", axis}}, "flat", false);
    rank = 2;
    axis = 1;
  }
  Value* iota = Iota(e, in, axis, "iota");
  if (axis + 1 < rank) {
    std::vector<int64_t> shape(static_cast<size_t>(rank - axis), 1);
    shape[0] = -1;
    iota = e.Emit("Reshape", 14,
                  {iota, e.Int64s("iota_shape", shape, {static_cast<int64_t>(shape.size())})}, {},
                  "iota_along_axis", false);
  }
  Value* arg = e.Emit("ArgMax", 13, {in}, {{"axis", axis}, {"keepdims", 1}}, "argmax", false);
  Value* hot = e.Emit("Equal", 13, {iota, arg}, {}, "is_max", false);
  if (in == x) {
    e.Emit("CastLike", 15, {hot, x}, {}, "", true);
  } else {
    Value* hot_x = e.Emit("CastLike", 15, {hot, x}, {}, "flat_out", false);
    Value* shape = e.Emit("Shape", 15, {x}, {}, "shape", false);
    e.Emit("Reshape", 14, {hot_x, shape}, {}, "", true);
  }
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeEyeLike(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"dtype", "k"}));
  A8_ASSIGN_OR_RETURN(int64_t k, IntAttr(req, "k", 0));
  std::optional<int64_t> rank = req.known_rank ? req.known_rank(req.inputs[0]) : std::nullopt;
  if (rank && *rank != 2) {
    return InvalidInput("{}: EyeLike takes a 2-D input, got rank {}", req.where, *rank);
  }
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* rows = Iota(e, x, 0, "rows");
  Value* cols = Iota(e, x, 1, "cols");
  Value* column =
      e.Emit("Reshape", 14, {rows, e.Int64s("rows_shape", {-1, 1}, {2})}, {}, "rows_column", false);
  Value* shifted = e.Emit("Add", 14, {column, e.Int64s("k", {k}, {})}, {}, "rows_plus_k", false);
  Value* eye = e.Emit("Equal", 13, {shifted, cols}, {}, "is_diagonal", false);
  if (auto it = req.attrs.find("dtype"); it != req.attrs.end()) {
    A8_ASSIGN_OR_RETURN(int64_t dtype, IntAttr(req, "dtype", std::nullopt));
    e.Emit("Cast", 13, {eye}, {{"to", dtype}}, "", true);
  } else {
    e.Emit("CastLike", 15, {eye, x}, {}, "", true);
  }
  return e.nodes();
}

// DepthToSpace and SpaceToDepth, from the numpy definitions in the ONNX documentation.
StatusOr<std::vector<DecomposedNode>> DecomposeSpaceDepth(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  const bool has_mode = req.op == "DepthToSpace" ? req.version >= 11 : req.version >= 28;
  if (has_mode) {
    A8_RETURN_IF_ERROR(CheckAttrs(req, {"blocksize", "mode"}));
  } else {
    A8_RETURN_IF_ERROR(CheckAttrs(req, {"blocksize"}));
  }
  A8_ASSIGN_OR_RETURN(int64_t b, IntAttr(req, "blocksize", std::nullopt));
  if (b <= 0) return InvalidInput("{}: blocksize must be positive, got {}", req.where, b);
  A8_ASSIGN_OR_RETURN(std::string mode, StringAttr(req, "mode", "DCR"));
  if (mode != "DCR" && mode != "CRD") {
    return InvalidInput("{}: mode must be DCR or CRD, got '{}'", req.where, mode);
  }
  std::optional<int64_t> rank = req.known_rank ? req.known_rank(req.inputs[0]) : std::nullopt;
  if (rank && *rank != 4) {
    return InvalidInput("{}: {} takes a 4-D input [N, C, H, W], got rank {}", req.where, req.op,
                        *rank);
  }
  const bool dcr = mode == "DCR";
  Emitter e(g, req);
  Value* x = req.inputs[0];
  auto dims = [&](int64_t start, int64_t end, const std::string& suffix) {
    return e.Emit("Shape", 15, {x}, {{"start", start}, {"end", end}}, suffix, false);
  };
  auto concat = [&](std::vector<Value*> parts, const std::string& suffix) {
    return e.Emit("Concat", 13, std::move(parts), {{"axis", 0}}, suffix, false);
  };
  Value* n = dims(0, 1, "n");
  Value* block = e.Int64s("blocksize", {b}, {1});
  Value* minus1 = e.Int64s("minus1", {-1}, {1});
  Value* shape6;
  Value* shape4;
  std::vector<int64_t> perm;
  if (req.op == "DepthToSpace") {
    Value* hw = dims(2, 4, "hw");
    shape6 = dcr ? concat({n, block, block, minus1, hw}, "shape6")
                 : concat({n, minus1, block, block, hw}, "shape6");
    perm = dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
    Value* hw_out = e.Emit("Mul", 14, {hw, block}, {}, "hw_out", false);
    shape4 = concat({n, minus1, hw_out}, "shape4");
  } else {
    Value* nc = dims(0, 2, "nc");
    Value* h = e.Emit("Div", 14, {dims(2, 3, "h"), block}, {}, "h_out", false);
    Value* w = e.Emit("Div", 14, {dims(3, 4, "w"), block}, {}, "w_out", false);
    shape6 = concat({nc, h, block, w, block}, "shape6");
    perm = dcr ? std::vector<int64_t>{0, 3, 5, 1, 2, 4} : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
    shape4 = concat({n, minus1, h, w}, "shape4");
  }
  Value* blocks = e.Emit("Reshape", 14, {x, shape6}, {}, "blocks", false);
  Value* moved = e.Emit("Transpose", 13, {blocks}, {{"perm", Attribute(perm)}}, "moved", false);
  e.Emit("Reshape", 14, {moved, shape4}, {}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeCompress(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 2));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"axis"}));
  const Value* cond = req.inputs[1];
  if (cond->data() == nullptr) {
    const std::string hint = cond->role() == ValueRole::kInput
                                 ? fmt::format("; freeze graph input '{}' with --bind={}=FILE.npy",
                                               cond->name(), cond->name())
                                 : std::string();
    return Unsupported("{}: input 'condition' must be a constant (a800c needs static shapes){}",
                       req.where, hint);
  }
  if (cond->data()->type.dims.size() != 1) {
    return InvalidInput("{}: input 'condition' must be 1-D, got {}", req.where,
                        cond->data()->type.ToString());
  }
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < cond->data()->num_elements(); ++i) {
    if (cond->data()->GetInt64(i) != 0) indices.push_back(i);
  }
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* index = e.Int64s("indices", indices, {static_cast<int64_t>(indices.size())});
  int64_t axis = 0;
  if (auto it = req.attrs.find("axis"); it != req.attrs.end()) {
    A8_ASSIGN_OR_RETURN(axis, IntAttr(req, "axis", std::nullopt));
  } else {
    x = e.Emit("Reshape", 14, {x, e.Int64s("flat_shape", {-1}, {1})}, {}, "flat", false);
  }
  e.Emit("Gather", 13, {x, index}, {{"axis", axis}}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeCenterCropPad(Graph& g,
                                                             const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 2));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"axes"}));
  A8_RETURN_IF_ERROR(RequireConstant(req, 1, "shape"));
  const TensorData& shape_data = *req.inputs[1]->data();
  if (shape_data.type.dims.size() != 1 ||
      (shape_data.type.dtype != DType::kI64 && shape_data.type.dtype != DType::kI32)) {
    return InvalidInput("{}: input 'shape' must be a 1-D integer tensor, got {}", req.where,
                        shape_data.type.ToString());
  }
  const std::vector<int64_t> target = shape_data.ToInt64Vector();
  std::vector<int64_t> axes;
  if (auto it = req.attrs.find("axes"); it != req.attrs.end()) {
    if (it->second.kind() != AttrKind::kInts) {
      return InvalidInput("{}: attribute 'axes' must be ints", req.where);
    }
    axes = it->second.ints();
  } else {
    for (size_t i = 0; i < target.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.size() != target.size()) {
    return InvalidInput("{}: 'shape' has {} values for {} axes", req.where, target.size(),
                        axes.size());
  }
  for (int64_t t : target) {
    if (t < 0) return InvalidInput("{}: 'shape' has a negative dim {}", req.where, t);
  }
  const int64_t k = static_cast<int64_t>(axes.size());
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* t = e.Int64s("target", target, {k});
  Value* ax = e.Int64s("axes", axes, {k});
  Value* zero = e.Int64s("zero", {0}, {1});
  Value* two = e.Int64s("two", {2}, {1});
  Value* shape = e.Emit("Shape", 15, {x}, {}, "shape", false);
  Value* d = e.Emit("Gather", 13, {shape, ax}, {{"axis", 0}}, "dims", false);
  Value* over = e.Emit("Max", 13, {e.Emit("Sub", 14, {d, t}, {}, "d_minus_t", false), zero}, {},
                       "crop", false);
  Value* start = e.Emit("Div", 14, {over, two}, {}, "crop_start", false);
  Value* kept = e.Emit("Min", 13, {d, t}, {}, "kept", false);
  Value* end = e.Emit("Add", 14, {start, kept}, {}, "crop_end", false);
  Value* cropped = e.Emit("Slice", 13, {x, start, end, ax}, {}, "cropped", false);
  Value* grow = e.Emit("Max", 13, {e.Emit("Sub", 14, {t, d}, {}, "t_minus_d", false), zero}, {},
                       "pad", false);
  Value* before = e.Emit("Div", 14, {grow, two}, {}, "pad_before", false);
  Value* after = e.Emit("Sub", 14, {grow, before}, {}, "pad_after", false);
  Value* pads = e.Emit("Concat", 13, {before, after}, {{"axis", 0}}, "pads", false);
  e.Emit("Pad", 18, {cropped, pads, nullptr, ax}, {}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeGroupNorm(Graph& g, const DecomposeRequest& req) {
  if (req.version < 21) {
    return Unsupported(
        "{}: GroupNormalization-{} scales per group; a800c supports version 21 (per channel)",
        req.where, req.version);
  }
  A8_RETURN_IF_ERROR(CheckArity(req, 3));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"num_groups", "epsilon", "stash_type"}));
  A8_ASSIGN_OR_RETURN(int64_t groups, IntAttr(req, "num_groups", std::nullopt));
  A8_ASSIGN_OR_RETURN(float epsilon, FloatAttr(req, "epsilon", 1e-5f));
  A8_ASSIGN_OR_RETURN(int64_t stash, IntAttr(req, "stash_type", 1));
  if (stash != kOnnxFloat) {
    return Unsupported("{}: stash_type {} is not supported (a800c computes in float: 1)", req.where,
                       stash);
  }
  if (groups <= 0)
    return InvalidInput("{}: num_groups must be positive, got {}", req.where, groups);
  A8_ASSIGN_OR_RETURN(int64_t rank, RankOf(req, "GroupNormalization"));
  if (rank < 2) return InvalidInput("{}: input 'X' must have rank 2 or more", req.where);
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* xf = e.Emit("Cast", 13, {x}, {{"to", Attribute(kOnnxFloat)}}, "xf", false);
  Value* grouped = e.Emit("Reshape", 14, {xf, e.Int64s("group_shape", {0, groups, -1}, {3})}, {},
                          "grouped", false);
  const std::map<std::string, Attribute> last_axis = {{"axes", Attribute(std::vector<int64_t>{2})},
                                                      {"keepdims", 1}};
  Value* mean = e.Emit("ReduceMean", 13, {grouped}, last_axis, "mean", false);
  Value* centered = e.Emit("Sub", 14, {grouped, mean}, {}, "centered", false);
  Value* sq = e.Emit("Mul", 14, {centered, centered}, {}, "sq", false);
  Value* var = e.Emit("ReduceMean", 13, {sq}, last_axis, "var", false);
  Value* eps = e.Constant("epsilon", TensorData::FromFloats({epsilon}, {}));
  Value* stddev =
      e.Emit("Sqrt", 13, {e.Emit("Add", 14, {var, eps}, {}, "var_eps", false)}, {}, "std", false);
  Value* nf = e.Emit("Div", 14, {centered, stddev}, {}, "normalized_f", false);
  Value* shape = e.Emit("Shape", 15, {x}, {}, "shape", false);
  Value* n = e.Emit("CastLike", 15, {e.Emit("Reshape", 14, {nf, shape}, {}, "ungrouped", false), x},
                    {}, "normalized", false);
  std::vector<int64_t> channel_shape(static_cast<size_t>(rank - 1), 1);
  channel_shape[0] = -1;
  Value* cs = e.Int64s("channel_shape", channel_shape, {rank - 1});
  Value* scale = e.Emit("Reshape", 14, {req.inputs[1], cs}, {}, "scale", false);
  Value* bias = e.Emit("Reshape", 14, {req.inputs[2], cs}, {}, "bias", false);
  Value* scaled = e.Emit("Mul", 14, {n, scale}, {}, "scaled", false);
  e.Emit("Add", 14, {scaled, bias}, {}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeLrn(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"size", "alpha", "beta", "bias"}));
  A8_ASSIGN_OR_RETURN(int64_t size, IntAttr(req, "size", std::nullopt));
  A8_ASSIGN_OR_RETURN(float alpha, FloatAttr(req, "alpha", 1e-4f));
  A8_ASSIGN_OR_RETURN(float beta, FloatAttr(req, "beta", 0.75f));
  A8_ASSIGN_OR_RETURN(float bias, FloatAttr(req, "bias", 1.0f));
  if (size <= 0) return InvalidInput("{}: size must be positive, got {}", req.where, size);
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* sq = e.Emit("Mul", 14, {x, x}, {}, "sq", false);
  Value* planes = e.Emit(
      "Concat", 13,
      {e.Emit("Shape", 15, {x}, {{"start", 0}, {"end", 1}}, "n", false), e.Int64s("one", {1}, {1}),
       e.Emit("Shape", 15, {x}, {{"start", 1}, {"end", 2}}, "c", false),
       e.Int64s("minus1", {-1}, {1})},
      {{"axis", 0}}, "planes", false);
  Value* sq4 = e.Emit("Reshape", 14, {sq, planes}, {}, "sq_planes", false);
  Value* avg = e.Emit("AveragePool", 19, {sq4},
                      {{"kernel_shape", Attribute(std::vector<int64_t>{size, 1})},
                       {"pads", Attribute(std::vector<int64_t>{(size - 1) / 2, 0, size / 2, 0})},
                       {"count_include_pad", 1}},
                      "window_mean", false);
  Value* shape = e.Emit("Shape", 15, {x}, {}, "shape", false);
  Value* mean = e.Emit("Reshape", 14, {avg, shape}, {}, "window_mean_x", false);
  auto scalar = [&](const std::string& suffix, float v) {
    return e.Emit("CastLike", 15, {e.Constant(suffix, TensorData::FromFloats({v}, {})), x}, {},
                  suffix + "_x", false);
  };
  Value* scaled = e.Emit("Mul", 14, {mean, scalar("alpha", alpha)}, {}, "scaled", false);
  Value* base = e.Emit("Add", 14, {scaled, scalar("bias", bias)}, {}, "base", false);
  Value* den = e.Emit("Pow", 15, {base, scalar("beta", beta)}, {}, "denominator", false);
  e.Emit("Div", 14, {x, den}, {}, "", true);
  return e.nodes();
}

}  // namespace

void decompose_internal::AddNnDecompositions(decompose_internal::DecomposeTable* t) {
  t->insert({{"RMSNormalization", DecomposeRmsNorm},
             {"LpNormalization", DecomposeLpNorm},
             {"Hardmax", DecomposeHardmax},
             {"EyeLike", DecomposeEyeLike},
             {"Compress", DecomposeCompress},
             {"CenterCropPad", DecomposeCenterCropPad},
             {"GroupNormalization", DecomposeGroupNorm},
             {"LRN", DecomposeLrn},
             {"DepthToSpace", DecomposeSpaceDepth},
             {"SpaceToDepth", DecomposeSpaceDepth}});
}

}  // namespace a8

// ONNX's integer GEMM and convolution ops, imported as nodes of ops a800c has (see
// import_decompose.h). The products accumulate in int32 (MatMul on int32 wraps as int32 does,
// on both backends), never through float; the requantizing ops then scale as onnx's reference
// does (onnx/reference/ops/op_qlinear_*.py), so the results are the reference's bit for bit:
//
//   MatMulInteger-10 (A, B, a_zero_point?, b_zero_point?) -> MatMul(int32 A - a_zero_point,
//       int32 B - b_zero_point): a per-row a_zero_point [M] is reshaped to [M, 1]; a per-column
//       b_zero_point [N] broadcasts as it is.
//   ConvInteger-10 (x, w, x_zero_point?, w_zero_point?; group, pads, strides, dilations,
//       kernel_shape, auto_pad) -> with X = int32 x - x_zero_point padded with zeros (the
//       reference pads the centered input) and W = int32 w - w_zero_point (per output channel
//       when 1-D): one strided Slice of X per kernel offset, the slices stacked to the columns
//       [N, group, K * C/group, L] (K kernel offsets, L output positions), and one int32 MatMul
//       by W reordered to [group, M/group, K * C/group]: im2col written with Slice and Concat.
//       Needs the static dims of x and w.
//   QLinearMatMul-10/21 (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
//       y_zero_point) and QLinearConv-10 (x, x_scale, x_zero_point, w, w_scale, w_zero_point,
//       y_scale, y_zero_point, B?) -> the int32 accumulator above (plus the int32 bias B per
//       output channel), then Cast<T>(Clip(Round(acc * m) + y_zero_point, lo, hi)) with
//       m = a_scale * b_scale / y_scale in the scales' type, the product, the rounding (half to
//       even) and the clip in double: numpy's int32 * float32 is float64 in the reference.
//       T is y_zero_point's type (int8 or uint8).
// Not differentiable (integer operands), as ONNX says.
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/shape_rules.h"
#include "compiler/ir/types.h"
#include "compiler/onnx/import_decompose.h"
#include "compiler/onnx/import_decompose_internal.h"

namespace a8::decompose_internal {
namespace {

std::vector<int64_t> Dims1(size_t n) { return {static_cast<int64_t>(n)}; }

StatusOr<std::vector<int64_t>> StaticDims(const DecomposeRequest& req, const Value* v,
                                          std::string_view field) {
  std::optional<std::vector<int64_t>> d = req.known_dims ? req.known_dims(v) : std::nullopt;
  if (!d) {
    return Unsupported("{}: input '{}' needs static dims (a800c's shapes are static)", req.where,
                       field);
  }
  return *d;
}

// The operand must be int8 or uint8 where its type is known.
Status RequireInt8(const DecomposeRequest& req, const Value* v, std::string_view field) {
  std::optional<DType> t = KnownDType(req, v);
  if (t && *t != DType::kI8 && *t != DType::kU8) {
    return InvalidInput("{}: input '{}' must be int8 or uint8, got {}", req.where, field,
                        DTypeName(*t));
  }
  return Status::Ok();
}

// The zero point must have its operand's type where both are known.
Status RequireZeroPointType(const DecomposeRequest& req, const Value* v, const Value* zp,
                            std::string_view field, std::string_view zp_field) {
  if (zp == nullptr) return Status::Ok();
  std::optional<DType> t = KnownDType(req, v), z = KnownDType(req, zp);
  if (t && z && *t != *z) {
    return InvalidInput("{}: input '{}' is {} but '{}' is {}; they must have one type", req.where,
                        zp_field, DTypeName(*z), field, DTypeName(*t));
  }
  return Status::Ok();
}

// A per-row parameter of A [.., M, K] (a 1-D zero point or scale of M > 1 elements) as [M, 1];
// a scalar or one element as it is.
StatusOr<Value*> PerRow(Emitter& e, const DecomposeRequest& req, Value* p, std::string_view field,
                        const Value* dims_of = nullptr) {
  if (p == nullptr) return p;
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> d, StaticDims(req, dims_of ? dims_of : p, field));
  if (d.size() != 1 || d[0] == 1) return p;
  std::optional<std::vector<int64_t>> a =
      req.known_dims ? req.known_dims(req.inputs[0]) : std::nullopt;
  if (a && (a->size() < 2 || (*a)[a->size() - 2] != d[0])) {
    return InvalidInput("{}: input '{}' has {} elements; per row it needs A's rows ({}), got A {}",
                        req.where, field, d[0], a->size() < 2 ? 1 : (*a)[a->size() - 2],
                        DimsString(*a));
  }
  return e.Emit("Unsqueeze", 13, {p, e.Int64s(std::string(field) + "_row_axis", {1}, {1})}, {},
                std::string(field) + "_rows", false);
}

// A per-output-channel parameter [M] of a convolution as [M, 1, .., 1] (rank `rank`).
StatusOr<Value*> PerChannel(Emitter& e, const DecomposeRequest& req, Value* p,
                            std::string_view field, int64_t channels, int64_t rank,
                            const Value* dims_of = nullptr) {
  if (p == nullptr) return p;
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> d, StaticDims(req, dims_of ? dims_of : p, field));
  int64_t count = 1;
  for (int64_t v : d) count *= v;
  if (count == 1 && d.size() <= 1) return p;
  if (d.size() != 1 || d[0] != channels) {
    return InvalidInput(
        "{}: input '{}' must have one element or be 1-D of {} (the output "
        "channels), got shape {}",
        req.where, field, channels, DimsString(d));
  }
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[0] = -1;
  return e.Emit("Reshape", 14,
                {p, e.Int64s(std::string(field) + "_channel_shape", shape, Dims1(shape.size()))},
                {}, std::string(field) + "_channels", false);
}

// Conv geometry from the attributes and the static dims of x and w.
struct ConvGeometry {
  std::vector<int64_t> x, w, kernel, strides, dilations, pads, out;
  int64_t group = 1;
};

StatusOr<std::vector<int64_t>> IntsAttr(const DecomposeRequest& req, const std::string& name,
                                        std::vector<int64_t> def) {
  auto it = req.attrs.find(name);
  if (it == req.attrs.end()) return def;
  if (it->second.kind() != AttrKind::kInts) {
    return InvalidInput("{}: attribute '{}' must be ints", req.where, name);
  }
  return it->second.ints();
}

StatusOr<ConvGeometry> GeometryOf(const DecomposeRequest& req, const Value* x, const Value* w) {
  ConvGeometry c;
  A8_ASSIGN_OR_RETURN(c.x, StaticDims(req, x, "x"));
  A8_ASSIGN_OR_RETURN(c.w, StaticDims(req, w, "w"));
  if (c.x.size() < 3 || c.w.size() != c.x.size()) {
    return InvalidInput("{}: x {} and w {} must have one rank of at least 3", req.where,
                        DimsString(c.x), DimsString(c.w));
  }
  const size_t n = c.x.size() - 2;
  A8_ASSIGN_OR_RETURN(c.group, IntAttr(req, "group", 1));
  if (c.group <= 0 || c.x[1] % c.group != 0 || c.w[0] % c.group != 0 ||
      c.w[1] * c.group != c.x[1]) {
    return InvalidInput("{}: group {} does not fit x's {} channels and w {}", req.where, c.group,
                        c.x[1], DimsString(c.w));
  }
  std::vector<int64_t> wk(c.w.begin() + 2, c.w.end());
  A8_ASSIGN_OR_RETURN(c.kernel, IntsAttr(req, "kernel_shape", wk));
  A8_ASSIGN_OR_RETURN(c.strides, IntsAttr(req, "strides", std::vector<int64_t>(n, 1)));
  A8_ASSIGN_OR_RETURN(c.dilations, IntsAttr(req, "dilations", std::vector<int64_t>(n, 1)));
  A8_ASSIGN_OR_RETURN(c.pads, IntsAttr(req, "pads", std::vector<int64_t>(2 * n, 0)));
  A8_ASSIGN_OR_RETURN(std::string auto_pad, StringAttr(req, "auto_pad", "NOTSET"));
  if (c.kernel != wk || c.strides.size() != n || c.dilations.size() != n ||
      c.pads.size() != 2 * n) {
    return InvalidInput("{}: kernel_shape, strides, dilations or pads do not fit w {}", req.where,
                        DimsString(c.w));
  }
  for (size_t i = 0; i < n; ++i) {
    if (c.strides[i] <= 0 || c.dilations[i] <= 0 || c.pads[i] < 0 || c.pads[i + n] < 0) {
      return InvalidInput("{}: strides and dilations must be positive, pads non-negative",
                          req.where);
    }
  }
  std::vector<int64_t> spatial(c.x.begin() + 2, c.x.end());
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    SameAutoPads(auto_pad == "SAME_UPPER", false, spatial, c.kernel, c.strides, c.dilations,
                 &c.pads);
  } else if (auto_pad == "VALID") {
    c.pads.assign(2 * n, 0);
  } else if (auto_pad != "NOTSET") {
    return InvalidInput("{}: auto_pad '{}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                        req.where, auto_pad);
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t span = (c.kernel[i] - 1) * c.dilations[i] + 1;
    const int64_t padded = spatial[i] + c.pads[i] + c.pads[i + n];
    if (padded < span) {
      return InvalidInput("{}: the kernel {} does not fit the padded input {}", req.where,
                          DimsString(c.kernel), DimsString(c.x));
    }
    c.out.push_back((padded - span) / c.strides[i] + 1);
  }
  return c;
}

// The int32 convolution of the centered x and w: [N, M, out...]; the ONNX output when `last`.
Value* ConvInt32(Emitter& e, const ConvGeometry& c, Value* x, Value* w, bool last) {
  const size_t n = c.kernel.size();
  const int64_t N = c.x[0], C = c.x[1], M = c.w[0], G = c.group, Cg = C / G;
  int64_t L = 1, K = 1;
  for (int64_t o : c.out) L *= o;
  for (int64_t k : c.kernel) K *= k;
  bool padded = false;
  for (int64_t p : c.pads) padded = padded || p != 0;
  if (padded) {
    std::vector<int64_t> pads(2 * (n + 2), 0);
    for (size_t i = 0; i < n; ++i) {
      pads[2 + i] = c.pads[i];
      pads[n + 4 + i] = c.pads[n + i];
    }
    x = e.Emit("Pad", 13, {x, e.Int64s("pads", pads, Dims1(pads.size()))}, {}, "x_padded", false);
  }
  std::vector<int64_t> axes;
  for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i + 2));
  Value* axes_v = e.Int64s("slice_axes", axes, Dims1(n));
  Value* steps_v = e.Int64s("slice_steps", c.strides, Dims1(n));
  Value* col_shape = e.Int64s("col_shape", {N, G, 1, Cg, L}, {5});
  std::vector<Value*> cols;
  std::vector<int64_t> offset(n, 0);
  for (int64_t k = 0; k < K; ++k) {
    std::vector<int64_t> starts, ends;
    for (size_t i = 0; i < n; ++i) {
      starts.push_back(offset[i] * c.dilations[i]);
      ends.push_back(starts.back() + (c.out[i] - 1) * c.strides[i] + 1);
    }
    const std::string tag = fmt::format("k{}", k);
    Value* s = e.Emit("Slice", 13,
                      {x, e.Int64s(tag + "_starts", starts, Dims1(n)),
                       e.Int64s(tag + "_ends", ends, Dims1(n)), axes_v, steps_v},
                      {}, tag + "_window", false);
    cols.push_back(e.Emit("Reshape", 14, {s, col_shape}, {}, tag + "_col", false));
    for (size_t i = n; i-- > 0;) {  // the next offset, the last axis fastest (w's order)
      if (++offset[i] < c.kernel[i]) break;
      offset[i] = 0;
    }
  }
  Value* stacked =
      cols.size() == 1 ? cols[0] : e.Emit("Concat", 13, cols, {{"axis", 2}}, "cols", false);
  Value* im2col = e.Emit("Reshape", 14, {stacked, e.Int64s("im2col_shape", {N, G, K * Cg, L}, {4})},
                         {}, "im2col", false);
  // w [M, Cg, k...] -> [G, M/G, Cg, K] -> [G, M/G, K, Cg] -> [G, M/G, K * Cg].
  Value* wg = e.Emit("Reshape", 14, {w, e.Int64s("w_group_shape", {G, M / G, Cg, K}, {4})}, {},
                     "w_grouped", false);
  Value* wt = e.Emit("Transpose", 13, {wg}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}},
                     "w_offset_major", false);
  Value* wm = e.Emit("Reshape", 14, {wt, e.Int64s("w_rows_shape", {G, M / G, K * Cg}, {3})}, {},
                     "w_rows", false);
  Value* acc = e.Emit("MatMul", 13, {wm, im2col}, {}, "acc_grouped", false);
  std::vector<int64_t> out = {N, M};
  out.insert(out.end(), c.out.begin(), c.out.end());
  return e.Emit("Reshape", 14, {acc, e.Int64s("out_shape", out, Dims1(out.size()))}, {}, "acc",
                last);
}

// Cast<T>(Clip(Round(acc * multiplier) + y_zero_point, lo, hi)) in double (see the top).
StatusOr<Value*> Requantize(Emitter& e, const DecomposeRequest& req, Value* acc, Value* multiplier,
                            Value* y_zero_point) {
  std::optional<DType> t = KnownDType(req, y_zero_point);
  std::optional<std::pair<int64_t, int64_t>> range = t ? QuantRange(*t) : std::nullopt;
  if (!t || (*t != DType::kI8 && *t != DType::kU8)) {
    return InvalidInput("{}: input 'y_zero_point' must be int8 or uint8{}", req.where,
                        t ? fmt::format(", got {}", DTypeName(*t)) : std::string(" (not known)"));
  }
  const int64_t f64 = DTypeToOnnx(DType::kF64);
  Value* a = e.Emit("Cast", 13, {acc}, {{"to", f64}}, "acc_f64", false);
  Value* q = e.Emit("Round", 11, {e.Emit("Mul", 14, {a, multiplier}, {}, "scaled", false)}, {},
                    "rounded", false);
  Value* z = e.Emit("Cast", 13, {y_zero_point}, {{"to", f64}}, "y_zero_point_f64", false);
  q = e.Emit("Add", 14, {q, z}, {}, "shifted", false);
  auto bound = [&](const std::string& suffix, int64_t v) {
    return e.Emit("Cast", 13,
                  {e.Constant(suffix, TensorData::FromFloats({static_cast<float>(v)}, {}))},
                  {{"to", f64}}, suffix + "_f64", false);
  };
  q = e.Emit("Clip", 13, {q, bound("lo", range->first), bound("hi", range->second)}, {},
             "saturated", false);
  return e.Emit("Cast", 13, {q}, {{"to", int64_t{DTypeToOnnx(*t)}}}, "", true);
}


// a_scale * b_scale / y_scale (doubles) with each step rounded to the scales' type `t`, as the
// reference computes it in that type: a double +, *, / rounded to f32, f16 or bf16 is the
// correctly rounded result in that type (53 >= 2 * 24 + 2 bits). In double and Casts, which the
// precision passes leave alone (fp16 mode would put a float Mul in f16). A double.
Value* Multiplier(Emitter& e, DType t, Value* a_scale, Value* b_scale, Value* y_scale) {
  auto rounded = [&](Value* v, const std::string& suffix) {
    Value* r = e.Emit("Cast", 13, {v}, {{"to", int64_t{DTypeToOnnx(t)}}}, suffix, false);
    return F64(e, r, suffix + "_wide");
  };
  Value* ab = rounded(e.Emit("Mul", 14, {a_scale, b_scale}, {}, "scale_product_f64", false),
                      "scale_product");
  return rounded(e.Emit("Div", 14, {ab, y_scale}, {}, "multiplier_f64", false), "multiplier");
}

Status CheckInputs(const DecomposeRequest& req, size_t min, size_t max, size_t required) {
  bool ok = req.inputs.size() >= min && req.inputs.size() <= max && req.outputs.size() == 1;
  for (size_t i = 0; ok && i < required; ++i) ok = req.inputs[i] != nullptr;
  if (!ok) {
    return InvalidInput("{}: {} takes {} to {} inputs (the first {} present) and one output",
                        req.where, req.op, min, max, required);
  }
  return Status::Ok();
}

StatusOr<std::vector<DecomposedNode>> DecomposeMatMulInteger(Graph& g,
                                                             const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckInputs(req, 2, 4, 2));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {}));
  Value *a = req.inputs[0], *b = req.inputs[1], *az = Input(req, 2), *bz = Input(req, 3);
  A8_RETURN_IF_ERROR(RequireInt8(req, a, "A"));
  A8_RETURN_IF_ERROR(RequireInt8(req, b, "B"));
  A8_RETURN_IF_ERROR(RequireZeroPointType(req, a, az, "A", "a_zero_point"));
  A8_RETURN_IF_ERROR(RequireZeroPointType(req, b, bz, "B", "b_zero_point"));
  Emitter e(g, req);
  A8_ASSIGN_OR_RETURN(az, PerRow(e, req, az, "a_zero_point"));
  Value* a32 = Int32Minus(e, a, az, "a");
  Value* b32 = Int32Minus(e, b, bz, "b");
  e.Emit("MatMul", 13, {a32, b32}, {}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeQLinearMatMul(Graph& g,
                                                             const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckInputs(req, 8, 8, 8));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {}));
  const std::vector<Value*>& in = req.inputs;
  A8_RETURN_IF_ERROR(RequireInt8(req, in[0], "a"));
  A8_RETURN_IF_ERROR(RequireInt8(req, in[3], "b"));
  A8_RETURN_IF_ERROR(RequireZeroPointType(req, in[0], in[2], "a", "a_zero_point"));
  A8_RETURN_IF_ERROR(RequireZeroPointType(req, in[3], in[5], "b", "b_zero_point"));
  Emitter e(g, req);
  A8_ASSIGN_OR_RETURN(Value * az, PerRow(e, req, in[2], "a_zero_point"));
  A8_ASSIGN_OR_RETURN(Value * as, PerRow(e, req, F64(e, in[1], "a_scale_f64"), "a_scale", in[1]));
  Value* acc =
      e.Emit("MatMul", 13, {Int32Minus(e, in[0], az, "a"), Int32Minus(e, in[3], in[5], "b")}, {},
             "acc", false);
  Value* m = Multiplier(e, KnownDType(req, in[1]).value_or(DType::kF32), as,
                        F64(e, in[4], "b_scale_f64"), F64(e, in[6], "y_scale_f64"));
  A8_RETURN_IF_ERROR(Requantize(e, req, acc, m, in[7]).status());
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeConvInteger(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckInputs(req, 2, 4, 2));
  A8_RETURN_IF_ERROR(
      CheckAttrs(req, {"group", "pads", "strides", "dilations", "kernel_shape", "auto_pad"}));
  Value *x = req.inputs[0], *w = req.inputs[1], *xz = Input(req, 2), *wz = Input(req, 3);
  A8_RETURN_IF_ERROR(RequireInt8(req, x, "x"));
  A8_RETURN_IF_ERROR(RequireInt8(req, w, "w"));
  A8_RETURN_IF_ERROR(RequireZeroPointType(req, x, xz, "x", "x_zero_point"));
  A8_RETURN_IF_ERROR(RequireZeroPointType(req, w, wz, "w", "w_zero_point"));
  A8_ASSIGN_OR_RETURN(ConvGeometry c, GeometryOf(req, x, w));
  Emitter e(g, req);
  A8_ASSIGN_OR_RETURN(Value * xzs, PerChannel(e, req, xz, "x_zero_point", 1, 1));
  A8_ASSIGN_OR_RETURN(
      wz, PerChannel(e, req, wz, "w_zero_point", c.w[0], static_cast<int64_t>(c.w.size())));
  ConvInt32(e, c, Int32Minus(e, x, xzs, "x"), Int32Minus(e, w, wz, "w"), true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeQLinearConv(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckInputs(req, 8, 9, 8));
  A8_RETURN_IF_ERROR(
      CheckAttrs(req, {"group", "pads", "strides", "dilations", "kernel_shape", "auto_pad"}));
  const std::vector<Value*>& in = req.inputs;
  A8_RETURN_IF_ERROR(RequireInt8(req, in[0], "x"));
  A8_RETURN_IF_ERROR(RequireInt8(req, in[3], "w"));
  A8_RETURN_IF_ERROR(RequireZeroPointType(req, in[0], in[2], "x", "x_zero_point"));
  A8_RETURN_IF_ERROR(RequireZeroPointType(req, in[3], in[5], "w", "w_zero_point"));
  A8_ASSIGN_OR_RETURN(ConvGeometry c, GeometryOf(req, in[0], in[3]));
  const int64_t rank = static_cast<int64_t>(c.x.size()), m = c.w[0];
  Emitter e(g, req);
  A8_ASSIGN_OR_RETURN(Value * xz, PerChannel(e, req, in[2], "x_zero_point", 1, 1));
  A8_ASSIGN_OR_RETURN(Value * wz, PerChannel(e, req, in[5], "w_zero_point", m, rank));
  A8_ASSIGN_OR_RETURN(
      Value * ws, PerChannel(e, req, F64(e, in[4], "w_scale_f64"), "w_scale", m, rank - 1, in[4]));
  Value* acc = ConvInt32(e, c, Int32Minus(e, in[0], xz, "x"), Int32Minus(e, in[3], wz, "w"), false);
  if (Value* bias = Input(req, 8)) {
    std::optional<DType> bt = KnownDType(req, bias);
    if (bt && *bt != DType::kI32) {
      return InvalidInput("{}: input 'B' must be int32, got {}", req.where, DTypeName(*bt));
    }
    A8_ASSIGN_OR_RETURN(std::vector<int64_t> bd, StaticDims(req, bias, "B"));
    if (bd != std::vector<int64_t>{m}) {
      return InvalidInput("{}: input 'B' must be 1-D of {} (the output channels), got shape {}",
                          req.where, m, DimsString(bd));
    }
    A8_ASSIGN_OR_RETURN(Value * b, PerChannel(e, req, bias, "B", m, rank - 1));
    acc = e.Emit("Add", 14, {acc, b}, {}, "acc_biased", false);
  }
  Value* mult =
      Multiplier(e, DType::kF32, F64(e, in[1], "x_scale_f64"), ws, F64(e, in[6], "y_scale_f64"));
  A8_RETURN_IF_ERROR(Requantize(e, req, acc, mult, in[7]).status());
  return e.nodes();
}

}  // namespace

void AddQuantIntegerDecompositions(DecomposeTable* t) {
  t->insert({{"MatMulInteger", DecomposeMatMulInteger},
             {"ConvInteger", DecomposeConvInteger},
             {"QLinearMatMul", DecomposeQLinearMatMul},
             {"QLinearConv", DecomposeQLinearConv}});
}

}  // namespace a8::decompose_internal

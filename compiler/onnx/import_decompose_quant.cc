// ONNX's linear quantization ops with integer types, imported as nodes of ops a800c has (see
// import_decompose.h). Each is onnx's reference (onnx/reference/ops/op_*quantize_linear.py)
// written out in the same element types, so the results are the reference's bit for bit:
//
//   QuantizeLinear-10..28 (x, y_scale, y_zero_point?; axis=1, block_size=0, output_dtype,
//       saturate, precision) -> Cast<T>(Clip(Round(x / scale) + zero_point, lo, hi)): the
//       quotient rounded to the type numpy's x / y_scale has (x's type when the scale shares it:
//       f16 / f16 is f16; float otherwise; double for an int32 x; the `precision` type, both
//       operands cast to it first, when given); Round is half to even (np.rint); the sum and the
//       clip exact. T is the zero point's type, else output_dtype, else uint8: int8, uint8,
//       int16, uint16 (saturate only matters for float8, which a800c has not).
//   DequantizeLinear-10..28 (x, x_scale, x_zero_point?; axis=1, block_size=0, output_dtype)
//       -> Cast<out>(float32((x - zero_point) * scale)): the difference exact in int32, the
//       product the reference's float32 product; out is output_dtype, else the scale's type.
//   DynamicQuantizeLinear-11 (x f32) -> y uint8, y_scale f32, y_zero_point uint8: the
//       reference's float32 steps: scale = (max(0, max x) - min(0, min x)), 1 where that is 0,
//       / 255; zero point Round(Clip(-min / scale, 0, 255)); y as QuantizeLinear.
//
// The float math is done in double, each step rounded to the reference's type by a Cast where
// the reference rounds (F64, RoundedTo): a double +, -, *, / rounded to f32, f16 or bf16 is the
// correctly rounded result in that type (53 >= 2 * 24 + 2 bits), and the precision passes leave
// double and Cast alone, where fp16 mode would put a float Div or Reshape in f16.
// The scale and zero point are per tensor (one element), per axis (1-D, x's dim along axis) or,
// from version 21, blocked (x's shape but ceil(d / block_size) along axis: each repeated
// block_size times, the last block cut to x's dim). A shape that fits none is an error naming
// the node and the input; so is a zero point whose type is not x's (DequantizeLinear) or
// output_dtype (QuantizeLinear). Not differentiable (Round), as ONNX says.
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

std::optional<DType> KnownDType(const DecomposeRequest& req, const Value* v) {
  if (v->data() != nullptr) return v->data()->type.dtype;
  if (req.known_dtype) return req.known_dtype(v);
  return std::nullopt;
}

std::optional<std::pair<int64_t, int64_t>> QuantRange(DType t) {
  switch (t) {
    case DType::kI8:
      return std::make_pair(int64_t{-128}, int64_t{127});
    case DType::kU8:
      return std::make_pair(int64_t{0}, int64_t{255});
    case DType::kI16:
      return std::make_pair(int64_t{-32768}, int64_t{32767});
    case DType::kU16:
      return std::make_pair(int64_t{0}, int64_t{65535});
    default:
      return std::nullopt;
  }
}

Value* Int32Minus(Emitter& e, Value* v, Value* zero_point, const std::string& suffix) {
  const int64_t to = DTypeToOnnx(DType::kI32);
  Value* v32 = e.Emit("Cast", 13, {v}, {{"to", to}}, suffix + "_i32", false);
  if (zero_point == nullptr) return v32;
  Value* z32 = e.Emit("Cast", 13, {zero_point}, {{"to", to}}, suffix + "_zero_point_i32", false);
  return e.Emit("Sub", 14, {v32, z32}, {}, suffix + "_centered", false);
}

namespace {

// Where a quantization parameter sits against x.
struct QuantLayout {
  int64_t rank = 0;
  int64_t axis = 1;        // as given; normalized where it is used
  int64_t block_size = 0;  // 0: per tensor or per axis
};

// A scale or zero point `p` (input `field`) made broadcastable to x: one element as a scalar,
// per axis reshaped to [d, 1, ..., 1], blocked repeated block_size times along the axis and cut
// to x's dim.
StatusOr<Value*> BroadcastParam(Emitter& e, const DecomposeRequest& req, Value* p,
                                std::string_view field, const QuantLayout& l,
                                const Value* dims_of = nullptr) {
  const std::string name(field);
  std::optional<std::vector<int64_t>> pd =
      req.known_dims ? req.known_dims(dims_of ? dims_of : p) : std::nullopt;
  std::optional<std::vector<int64_t>> xd =
      req.known_dims ? req.known_dims(req.inputs[0]) : std::nullopt;
  if (!pd) {
    return Unsupported("{}: input '{}' needs static dims (a800c's shapes are static)", req.where,
                       field);
  }
  const std::string got = DimsString(*pd);
  int64_t count = 1;
  for (int64_t d : *pd) count *= d;
  if (l.block_size <= 0 && count == 1 && pd->size() <= 1) {
    if (pd->empty()) return p;
    return e.Emit("Reshape", 14, {p, e.Int64s(name + "_scalar_shape", {}, {0})}, {},
                  name + "_scalar", false);
  }
  A8_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(req, l.axis, l.rank));
  if (l.block_size <= 0) {
    if (pd->size() != 1 || (xd && (*pd)[0] != (*xd)[static_cast<size_t>(axis)])) {
      return InvalidInput(
          "{}: input '{}' must have one element or be 1-D with x's dim along axis {} ({}), got "
          "shape {}",
          req.where, field, axis, xd ? fmt::format("{}", (*xd)[static_cast<size_t>(axis)]) : "?",
          got);
    }
    if (axis + 1 == l.rank) return p;
    std::vector<int64_t> shape(static_cast<size_t>(l.rank - axis), 1);
    shape[0] = -1;
    return e.Emit("Reshape", 14,
                  {p, e.Int64s(name + "_axis_shape", shape, {static_cast<int64_t>(shape.size())})},
                  {}, name + "_along_axis", false);
  }
  if (!xd) {
    return Unsupported("{}: blocked quantization needs the static dims of x", req.where);
  }
  std::vector<int64_t> want = *xd;
  const int64_t d = want[static_cast<size_t>(axis)];
  const int64_t blocks = (d + l.block_size - 1) / l.block_size;
  want[static_cast<size_t>(axis)] = blocks;
  if (*pd != want) {
    return InvalidInput(
        "{}: input '{}' has shape {}; blocked quantization of x {} along axis {} with "
        "block_size {} needs {}",
        req.where, field, got, DimsString(*xd), axis, l.block_size, DimsString(want));
  }
  // [.., blocks, 1, ..] expanded to [.., blocks, block_size, ..], merged to [.., blocks * bs, ..].
  Value* u = e.Emit("Unsqueeze", 13, {p, e.Int64s(name + "_block_axis", {axis + 1}, {1})}, {},
                    name + "_unsqueezed", false);
  std::vector<int64_t> rep(static_cast<size_t>(l.rank + 1), 1);
  rep[static_cast<size_t>(axis + 1)] = l.block_size;
  Value* x = e.Emit("Expand", 13,
                    {u, e.Int64s(name + "_block_repeat", rep, {static_cast<int64_t>(rep.size())})},
                    {}, name + "_repeated", false);
  std::vector<int64_t> merged = want;
  merged[static_cast<size_t>(axis)] = blocks * l.block_size;
  Value* r =
      e.Emit("Reshape", 14,
             {x, e.Int64s(name + "_block_shape", merged, {static_cast<int64_t>(merged.size())})},
             {}, name + "_blocks", false);
  if (blocks * l.block_size == d) return r;
  return e.Emit("Slice", 13,
                {r, e.Int64s(name + "_cut_start", {0}, {1}), e.Int64s(name + "_cut_end", {d}, {1}),
                 e.Int64s(name + "_cut_axis", {axis}, {1})},
                {}, name + "_cut", false);
}

StatusOr<QuantLayout> LayoutOf(const DecomposeRequest& req) {
  QuantLayout l;
  A8_ASSIGN_OR_RETURN(l.rank, RankOf(req, req.op));
  A8_ASSIGN_OR_RETURN(l.axis, IntAttr(req, "axis", 1));
  A8_ASSIGN_OR_RETURN(l.block_size, IntAttr(req, "block_size", 0));
  if (l.block_size < 0) {
    return InvalidInput("{}: attribute 'block_size' must not be negative, got {}", req.where,
                        l.block_size);
  }
  return l;
}

// A float constant cast to the type of `like`.
Value* ConstLike(Emitter& e, Value* like, const std::string& suffix, double v) {
  return e.Emit("CastLike", 15,
                {e.Constant(suffix, TensorData::FromFloats({static_cast<float>(v)}, {})), like}, {},
                suffix + "_like", false);
}

// A double `v` rounded to `t` and back to double.
Value* RoundedTo(Emitter& e, Value* v, DType t, const std::string& suffix) {
  Value* r = e.Emit("Cast", 13, {v}, {{"to", int64_t{DTypeToOnnx(t)}}}, suffix, false);
  return F64(e, r, suffix + "_wide");
}

StatusOr<DType> OnnxTypeAttr(const DecomposeRequest& req, const std::string& name) {
  A8_ASSIGN_OR_RETURN(int64_t t, IntAttr(req, name, std::nullopt));
  StatusOr<DType> d = DTypeFromOnnx(static_cast<int>(t));
  if (!d.ok()) {
    return Unsupported("{}: attribute '{}' is {} ({}), a type a800c does not have", req.where, name,
                       t, OnnxElemTypeName(static_cast<int>(t)));
  }
  return *d;
}

// QuantizeLinear's and DequantizeLinear's operands: x, the scale and an optional zero point (named
// `prefix`_scale, `prefix`_zero_point), and one output.
Status CheckQuantOperands(const DecomposeRequest& req, std::string_view op,
                          std::string_view prefix) {
  if (req.inputs.size() < 2 || req.inputs.size() > 3 || req.inputs[0] == nullptr ||
      req.inputs[1] == nullptr || req.outputs.size() != 1) {
    return InvalidInput("{}: {} takes x, {}_scale, an optional {}_zero_point and one output",
                        req.where, op, prefix, prefix);
  }
  return Status::Ok();
}

StatusOr<std::vector<DecomposedNode>> DecomposeQuantizeLinear(Graph& g,
                                                              const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckQuantOperands(req, "QuantizeLinear", "y"));
  A8_RETURN_IF_ERROR(
      CheckAttrs(req, {"axis", "saturate", "block_size", "output_dtype", "precision"}));
  A8_ASSIGN_OR_RETURN(QuantLayout l, LayoutOf(req));
  Value* x = req.inputs[0];
  Value* scale = req.inputs[1];
  Value* zp = Input(req, 2);
  // The output type: the zero point's, which output_dtype must then agree with; uint8 by default.
  std::optional<DType> out = DType::kU8;
  std::optional<DType> given;
  A8_ASSIGN_OR_RETURN(int64_t output_dtype, IntAttr(req, "output_dtype", 0));
  if (output_dtype != 0) {
    A8_ASSIGN_OR_RETURN(given, OnnxTypeAttr(req, "output_dtype"));
    out = given;
  }
  if (zp != nullptr) {
    out = KnownDType(req, zp);
    if (!out) {
      return Unsupported("{}: the element type of input 'y_zero_point' is not known", req.where);
    }
    if (given && *given != *out) {
      return InvalidInput("{}: input 'y_zero_point' is {} but attribute 'output_dtype' says {}",
                          req.where, DTypeName(*out), DTypeName(*given));
    }
  }
  std::optional<std::pair<int64_t, int64_t>> range = QuantRange(*out);
  if (!range) {
    return Unsupported("{}: quantizing to {} is not supported (int8, uint8, int16, uint16)",
                       req.where, DTypeName(*out));
  }
  // The quotient's type, as numpy's promotion of the reference's x / y_scale gives it.
  const std::optional<DType> xt = KnownDType(req, x), st = KnownDType(req, scale);
  DType div = DType::kF32;
  A8_ASSIGN_OR_RETURN(int64_t precision, IntAttr(req, "precision", 0));
  if (precision != 0) {
    A8_ASSIGN_OR_RETURN(div, OnnxTypeAttr(req, "precision"));
  } else if (xt == DType::kI32) {
    div = DType::kF64;
  } else if (xt && st && *xt == *st) {
    div = *xt;
  }
  if (!IsFloatDType(div)) {
    return InvalidInput("{}: attribute 'precision' must be a float type, got {}", req.where,
                        DTypeName(div));
  }
  Emitter e(g, req);
  // `precision` casts both operands to its type first (the reference's x.astype(precision)).
  // The scale is broadcast as a double: a Reshape of a float would go f16 in fp16 mode.
  Value* xd = precision != 0 ? RoundedTo(e, x, div, "x_precision") : F64(e, x, "x_f64");
  Value* s64 =
      precision != 0 ? RoundedTo(e, scale, div, "scale_precision") : F64(e, scale, "scale_f64");
  A8_ASSIGN_OR_RETURN(Value * sd, BroadcastParam(e, req, s64, "y_scale", l, scale));
  Value* q = e.Emit("Div", 14, {xd, sd}, {}, "quotient_f64", false);
  if (div != DType::kF64) q = RoundedTo(e, q, div, "quotient");
  q = e.Emit("Round", 11, {q}, {}, "rounded", false);
  if (zp != nullptr) {
    A8_ASSIGN_OR_RETURN(Value * z, BroadcastParam(e, req, zp, "y_zero_point", l));
    q = e.Emit("Add", 14, {q, F64(e, z, "zero_point_f64")}, {}, "shifted", false);
  }
  q = e.Emit("Clip", 13,
             {q, ConstLike(e, q, "lo", static_cast<double>(range->first)),
              ConstLike(e, q, "hi", static_cast<double>(range->second))},
             {}, "saturated", false);
  e.Emit("Cast", 13, {q}, {{"to", int64_t{DTypeToOnnx(*out)}}}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeDequantizeLinear(Graph& g,
                                                                const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckQuantOperands(req, "DequantizeLinear", "x"));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"axis", "block_size", "output_dtype"}));
  A8_ASSIGN_OR_RETURN(QuantLayout l, LayoutOf(req));
  Value* x = req.inputs[0];
  Value* scale = req.inputs[1];
  Value* zp = Input(req, 2);
  const std::optional<DType> xt = KnownDType(req, x);
  if (xt && !QuantRange(*xt) && *xt != DType::kI32) {
    return Unsupported("{}: dequantizing {} is not supported (int8, uint8, int16, uint16, int32)",
                       req.where, DTypeName(*xt));
  }
  if (zp != nullptr) {
    const std::optional<DType> zt = KnownDType(req, zp);
    if (xt && zt && *xt != *zt) {
      return InvalidInput("{}: input 'x_zero_point' is {} but x is {}; they must have one type",
                          req.where, DTypeName(*zt), DTypeName(*xt));
    }
  }
  std::optional<DType> out = KnownDType(req, scale);
  A8_ASSIGN_OR_RETURN(int64_t output_dtype, IntAttr(req, "output_dtype", 0));
  if (output_dtype != 0) {
    A8_ASSIGN_OR_RETURN(out, OnnxTypeAttr(req, "output_dtype"));
    if (*out != DType::kF32 && *out != DType::kF16 && *out != DType::kBF16) {
      return InvalidInput(
          "{}: attribute 'output_dtype' must be float, float16 or bfloat16, got "
          "{}",
          req.where, DTypeName(*out));
    }
  }
  Emitter e(g, req);
  Value* z = nullptr;
  if (zp != nullptr) {
    A8_ASSIGN_OR_RETURN(z, BroadcastParam(e, req, zp, "x_zero_point", l));
  }
  A8_ASSIGN_OR_RETURN(Value * s,
                      BroadcastParam(e, req, F64(e, scale, "scale_f64"), "x_scale", l, scale));
  Value* centered = Int32Minus(e, x, z, "x");
  Value* y = e.Emit("Mul", 14, {F64(e, centered, "centered_f64"), s}, {}, "product_f64", false);
  // The reference's float32 product, then its cast to the output type.
  const bool to_f32 = out && *out == DType::kF32;
  y = e.Emit("Cast", 13, {y}, {{"to", int64_t{DTypeToOnnx(DType::kF32)}}}, "product", to_f32);
  if (to_f32) return e.nodes();
  if (out) {
    e.Emit("Cast", 13, {y}, {{"to", int64_t{DTypeToOnnx(*out)}}}, "", true);
  } else {
    e.Emit("CastLike", 15, {y, scale}, {}, "", true);
  }
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeDynamicQuantizeLinear(Graph& g,
                                                                     const DecomposeRequest& req) {
  if (req.inputs.size() != 1 || req.inputs[0] == nullptr || req.outputs.empty() ||
      req.outputs.size() > 3) {
    return InvalidInput(
        "{}: DynamicQuantizeLinear takes x and has three outputs (y, y_scale, "
        "y_zero_point)",
        req.where);
  }
  A8_RETURN_IF_ERROR(CheckAttrs(req, {}));
  const std::optional<DType> xt = KnownDType(req, req.inputs[0]);
  if (xt && *xt != DType::kF32) {
    return InvalidInput("{}: input 'x' must be float, got {}", req.where, DTypeName(*xt));
  }
  Emitter e(g, req);
  Value* x = req.inputs[0];
  // The reference's float32 steps, each computed in double and rounded to float (see F64).
  auto scalar = [&](const std::string& suffix, float v) {
    return F64(e, e.Constant(suffix, TensorData::FromFloats({v}, {})), suffix + "_f64");
  };
  auto f32 = [&](Value* v, const std::string& suffix) {
    return RoundedTo(e, v, DType::kF32, suffix);
  };
  Value* zero = scalar("zero", 0.0f);
  Value* levels = scalar("levels", 255.0f);
  Value* x64 = F64(e, x, "x_f64");
  Value* mx = F64(e, e.Emit("ReduceMax", 18, {x}, {{"keepdims", 0}}, "max", false), "max_f64");
  Value* mn = F64(e, e.Emit("ReduceMin", 18, {x}, {{"keepdims", 0}}, "min", false), "min_f64");
  mx = e.Emit("Max", 13, {mx, zero}, {}, "max0", false);
  mn = e.Emit("Min", 13, {mn, zero}, {}, "min0", false);
  Value* span = f32(e.Emit("Sub", 14, {mx, mn}, {}, "span_f64", false), "span");
  Value* empty = e.Emit("Equal", 13, {span, zero}, {}, "span_is_zero", false);
  span = e.Emit("Where", 16, {empty, scalar("one", 1.0f), span}, {}, "span_or_one", false);
  Value* scale64 = e.Emit("Div", 14, {span, levels}, {}, "scale_f64", false);
  const Attribute to_f32(int64_t{DTypeToOnnx(DType::kF32)});
  Value* scale32 = WantsOutput(req, 1)
                       ? e.EmitOutput(1, "Cast", 13, {scale64}, {{"to", to_f32}}, "y_scale")
                       : e.Emit("Cast", 13, {scale64}, {{"to", to_f32}}, "y_scale", false);
  Value* scale = F64(e, scale32, "scale_back_f64");
  Value* zp =
      f32(e.Emit("Div", 14, {mn, scale}, {}, "min_over_scale_f64", false), "min_over_scale");
  zp = e.Emit("Sub", 14, {zero, zp}, {}, "initial_zero_point", false);  // exact: a negation
  zp = e.Emit("Clip", 13, {zp, zero, levels}, {}, "zero_point_clipped", false);
  zp = e.Emit("Round", 11, {zp}, {}, "zero_point_f64", false);
  const int64_t u8 = DTypeToOnnx(DType::kU8);
  if (WantsOutput(req, 2)) e.EmitOutput(2, "Cast", 13, {zp}, {{"to", u8}}, "y_zero_point");
  Value* q = f32(e.Emit("Div", 14, {x64, scale}, {}, "quotient_f64", false), "quotient");
  q = e.Emit("Round", 11, {q}, {}, "rounded", false);
  q = e.Emit("Add", 14, {q, zp}, {}, "shifted", false);
  q = e.Emit("Clip", 13, {q, zero, levels}, {}, "saturated", false);
  e.EmitOutput(0, "Cast", 13, {q}, {{"to", u8}}, "y");
  return e.nodes();
}

}  // namespace

void AddQuantDecompositions(DecomposeTable* t) {
  t->insert({{"QuantizeLinear", DecomposeQuantizeLinear},
             {"DequantizeLinear", DecomposeDequantizeLinear},
             {"DynamicQuantizeLinear", DecomposeDynamicQuantizeLinear}});
}

}  // namespace a8::decompose_internal

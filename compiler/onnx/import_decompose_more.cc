// ONNX ops imported as a few nodes of ops a800c has (see import_decompose.h), continued:
//
//   LpPool-1/2/11/18/22 (x; p, kernel_shape, pads, strides, dilations, auto_pad)
//       -> (AveragePool(|x|^p, count_include_pad=1) * prod(kernel_shape))^(1/p): the window sum
//       of |x|^p (pads count as zeros, as ONNX's window sum has them), then its p-th root;
//       |x|^2 is x * x and the square root Sqrt (p = 2), |x|^1 is Abs (p = 1). ceil_mode 1 is
//       Unsupported (the partial last window would be divided by its clipped size).
//   MeanVarianceNormalization-9/13 (x; axes=[0, 2, 3]) -> ONNX's function body:
//       (x - E[x]) / (Sqrt(E[x^2] - E[x]^2) + 1e-9), the means ReduceMean over axes.
//   ReverseSequence-10 (x, sequence_lens; batch_axis, time_axis) -> Gather(Reshape(x, [-1,
//       dims 2..]), row * d1 + column), the time index t < lens[b] ? lens[b] - 1 - t : t and b
//       the row and column in x's order (from iotas along the axes: folded to a constant when
//       the lengths are).
//   CumProd-26 (x, axis; exclusive, reverse) with a constant axis -> ReduceProd over j of
//       Where(mask[i, j], x[.., j, ..], 1), mask j <= i (j < i exclusive; >= and > reverse):
//       exact (the same products in the same order as a running product, unlike
//       Exp(CumSum(Log x))), and O(n^2) along the axis. ReduceProd has no gradient in a800c,
//       so neither has CumProd.
//   AffineGrid-20 (theta [N, k, k+1], size [N, C, (D,) H, W] constant; align_corners) ->
//       Reshape(MatMul(base, Transpose(theta, [0, 2, 1])), [N, (D,) H, W, k]), base the
//       constant [(D *) H * W, k+1] of the homogeneous positions (x, y, (z,) 1), each coordinate
//       start + i * step as onnx's reference computes it (in double, then cast to theta's type).
//   SwiGLU-28 (a, b; alpha) -> Mul(Swish(a; alpha), b): ONNX's function body (the inputs have one
//       shape: a rank that differs is an error, Mul would broadcast it).
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/onnx/import_decompose_internal.h"

namespace a8::decompose_internal {
namespace {

const Attribute* FindAttr(const DecomposeRequest& req, const std::string& name) {
  auto it = req.attrs.find(name);
  return it == req.attrs.end() ? nullptr : &it->second;
}

// A float scalar constant cast to x's type.
Value* ScalarLike(Emitter& e, Value* x, const std::string& suffix, float v) {
  return e.Emit("CastLike", 15, {e.Constant(suffix, TensorData::FromFloats({v}, {})), x}, {},
                suffix + "_x", false);
}

StatusOr<std::vector<DecomposedNode>> DecomposeLpPool(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  A8_RETURN_IF_ERROR(CheckAttrs(
      req, {"p", "kernel_shape", "pads", "strides", "dilations", "auto_pad", "ceil_mode"}));
  // p: a float before LpPool-2, an int from it on.
  double p = 2;
  if (const Attribute* a = FindAttr(req, "p")) {
    if (a->kind() == AttrKind::kInt) {
      p = static_cast<double>(a->i());
    } else if (a->kind() == AttrKind::kFloat && req.version < 2) {
      p = a->f();
    } else {
      return InvalidInput("{}: attribute 'p' must be an int, got {}", req.where,
                          AttrKindName(a->kind()));
    }
  }
  if (!(p > 0)) return InvalidInput("{}: p must be positive, got {}", req.where, p);
  const Attribute* kernel = FindAttr(req, "kernel_shape");
  if (kernel == nullptr || kernel->kind() != AttrKind::kInts || kernel->ints().empty()) {
    return InvalidInput("{}: attribute 'kernel_shape' (ints) is required", req.where);
  }
  A8_ASSIGN_OR_RETURN(int64_t ceil_mode, IntAttr(req, "ceil_mode", 0));
  if (ceil_mode != 0) {
    return Unsupported(
        "{}: LpPool with ceil_mode 1 is not supported (a800c imports LpPool as an AveragePool "
        "window sum, which the partial last window would not give)",
        req.where);
  }
  int64_t window = 1;
  for (int64_t k : kernel->ints()) {
    if (k <= 0) return InvalidInput("{}: kernel_shape has {}, not positive", req.where, k);
    window *= k;
  }
  std::map<std::string, Attribute> pool = {{"count_include_pad", Attribute(int64_t{1})}};
  for (const char* name : {"kernel_shape", "pads", "strides", "dilations", "auto_pad"}) {
    if (const Attribute* a = FindAttr(req, name)) pool.emplace(name, *a);
  }
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* powered = p == 2   ? e.Emit("Mul", 14, {x, x}, {}, "sq", false)
                   : p == 1 ? e.Emit("Abs", 13, {x}, {}, "abs", false)
                            : e.Emit("Pow", 15,
                                     {e.Emit("Abs", 13, {x}, {}, "abs", false),
                                      ScalarLike(e, x, "p", static_cast<float>(p))},
                                     {}, "pow", false);
  Value* mean = e.Emit("AveragePool", 19, {powered}, pool, "window_mean", false);
  Value* sum = e.Emit("Mul", 14, {mean, ScalarLike(e, x, "window", static_cast<float>(window))}, {},
                      "window_sum", false);
  if (p == 1) {
    e.Emit("Identity", 13, {sum}, {}, "", true);
  } else if (p == 2) {
    e.Emit("Sqrt", 13, {sum}, {}, "", true);
  } else {
    e.Emit("Pow", 15, {sum, ScalarLike(e, x, "inv_p", static_cast<float>(1 / p))}, {}, "", true);
  }
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeMvn(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"axes"}));
  std::vector<int64_t> axes = {0, 2, 3};
  if (const Attribute* a = FindAttr(req, "axes")) {
    if (a->kind() != AttrKind::kInts) {
      return InvalidInput("{}: attribute 'axes' must be ints, got {}", req.where,
                          AttrKindName(a->kind()));
    }
    axes.assign(a->ints().begin(), a->ints().end());
  }
  const std::map<std::string, Attribute> reduce = {{"axes", Attribute(axes)}, {"keepdims", 1}};
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* mean = e.Emit("ReduceMean", 13, {x}, reduce, "mean", false);
  Value* mean_sq = e.Emit("Mul", 14, {mean, mean}, {}, "mean_sq", false);
  Value* sq = e.Emit("Mul", 14, {x, x}, {}, "sq", false);
  Value* sq_mean = e.Emit("ReduceMean", 13, {sq}, reduce, "sq_mean", false);
  Value* var = e.Emit("Sub", 14, {sq_mean, mean_sq}, {}, "var", false);
  Value* stddev = e.Emit("Sqrt", 13, {var}, {}, "std", false);
  Value* den =
      e.Emit("Add", 14, {stddev, ScalarLike(e, x, "epsilon", 1e-9f)}, {}, "std_eps", false);
  Value* centered = e.Emit("Sub", 14, {x, mean}, {}, "centered", false);
  e.Emit("Div", 14, {centered, den}, {}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeReverseSequence(Graph& g,
                                                               const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 2));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"batch_axis", "time_axis"}));
  A8_ASSIGN_OR_RETURN(int64_t batch_axis, IntAttr(req, "batch_axis", 1));
  A8_ASSIGN_OR_RETURN(int64_t time_axis, IntAttr(req, "time_axis", 0));
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0))) {
    return InvalidInput("{}: batch_axis and time_axis must be 0 and 1 in some order, got {} and {}",
                        req.where, batch_axis, time_axis);
  }
  A8_ASSIGN_OR_RETURN(int64_t rank, RankOf(req, "ReverseSequence"));
  if (rank < 2) return InvalidInput("{}: input 'input' must have rank 2 or more", req.where);
  Emitter e(g, req);
  Value* x = req.inputs[0];
  Value* lens = req.inputs[1];
  // t along time_axis and lens along batch_axis of a [d0, d1] index.
  Value* t =
      e.Emit("Unsqueeze", 13, {Iota(e, x, time_axis, "t"), e.Int64s("t_axis", {batch_axis}, {1})},
             {}, "t_2d", false);
  Value* l = e.Emit("Unsqueeze", 13, {lens, e.Int64s("lens_axis", {time_axis}, {1})}, {}, "lens_2d",
                    false);
  Value* inside = e.Emit("Less", 13, {t, l}, {}, "inside", false);
  Value* last = e.Emit("Sub", 14, {l, e.Int64s("one", {1}, {})}, {}, "last", false);
  Value* reversed = e.Emit("Sub", 14, {last, t}, {}, "reversed", false);
  Value* index = e.Emit("Where", 16, {inside, reversed, t}, {}, "time_index", false);
  // Gather rows of x flattened to [d0 * d1, ...] (Gather has a gradient, GatherElements not):
  // row index * d1 + column index, the batch index b from an iota along batch_axis.
  Value* b =
      e.Emit("Unsqueeze", 13, {Iota(e, x, batch_axis, "b"), e.Int64s("b_axis", {time_axis}, {1})},
             {}, "b_2d", false);
  Value* d1 = e.Emit("Shape", 15, {x}, {{"start", 1}, {"end", 2}}, "d1", false);
  Value* row = time_axis == 0 ? index : b;
  Value* column = time_axis == 0 ? b : index;
  Value* flat_index =
      e.Emit("Add", 14, {e.Emit("Mul", 14, {row, d1}, {}, "row_start", false), column}, {},
             "flat_index", false);
  Value* rest = e.Emit("Shape", 15, {x}, {{"start", 2}}, "rest", false);
  Value* rows_shape = e.Emit("Concat", 13, {e.Int64s("minus1", {-1}, {1}), rest}, {{"axis", 0}},
                             "rows_shape", false);
  Value* rows = e.Emit("Reshape", 14, {x, rows_shape}, {}, "rows", false);
  e.Emit("Gather", 13, {rows, flat_index}, {{"axis", 0}}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeCumProd(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 2));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"exclusive", "reverse"}));
  A8_ASSIGN_OR_RETURN(int64_t exclusive, IntAttr(req, "exclusive", 0));
  A8_ASSIGN_OR_RETURN(int64_t reverse, IntAttr(req, "reverse", 0));
  A8_RETURN_IF_ERROR(RequireConstant(req, 1, "axis"));
  const TensorData& axis_data = *req.inputs[1]->data();
  if (axis_data.num_elements() != 1) {
    return InvalidInput("{}: input 'axis' must have one element, got {}", req.where,
                        axis_data.num_elements());
  }
  A8_ASSIGN_OR_RETURN(int64_t rank, RankOf(req, "CumProd"));
  A8_ASSIGN_OR_RETURN(int64_t axis,
                      NormalizedAxis(req, static_cast<int64_t>(axis_data.GetDouble(0)), rank));
  Emitter e(g, req);
  Value* x = req.inputs[0];
  // i (the output's position) as [n, 1], j (the factor's) as [n].
  Value* j = Iota(e, x, axis, "j");
  Value* i = e.Emit("Unsqueeze", 13, {j, e.Int64s("i_axis", {1}, {1})}, {}, "i", false);
  const char* compare =
      reverse ? (exclusive ? "Greater" : "GreaterOrEqual") : (exclusive ? "Less" : "LessOrEqual");
  Value* mask = e.Emit(compare, exclusive ? 13 : 16, {j, i}, {}, "mask", false);
  if (axis + 1 < rank) {
    std::vector<int64_t> trailing;
    for (int64_t a = 2; a < rank - axis + 1; ++a) trailing.push_back(a);
    mask = e.Emit("Unsqueeze", 13,
                  {mask, e.Int64s("mask_axes", trailing, {static_cast<int64_t>(trailing.size())})},
                  {}, "mask_nd", false);
  }
  Value* factors =
      e.Emit("Unsqueeze", 13, {x, e.Int64s("factor_axis", {axis}, {1})}, {}, "factors", false);
  Value* one = e.Emit("CastLike", 15, {e.Int64s("one", {1}, {}), x}, {}, "one", false);
  Value* taken = e.Emit("Where", 16, {mask, factors, one}, {}, "taken", false);
  e.Emit("ReduceProd", 18, {taken, e.Int64s("j_axis", {axis + 1}, {1})}, {{"keepdims", 0}}, "",
         true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeSwiGlu(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 2));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"alpha"}));
  A8_ASSIGN_OR_RETURN(float alpha, FloatAttr(req, "alpha", 1.0f));
  if (req.known_rank) {
    std::optional<int64_t> ra = req.known_rank(req.inputs[0]), rb = req.known_rank(req.inputs[1]);
    if (ra && rb && *ra != *rb) {
      return InvalidInput(
          "{}: inputs 'A' and 'B' must have one shape (SwiGLU does not "
          "broadcast), got ranks {} and {}",
          req.where, *ra, *rb);
    }
  }
  Emitter e(g, req);
  Value* gate = e.Emit("Swish", 24, {req.inputs[0]}, {{"alpha", Attribute(alpha)}}, "gate", false);
  e.Emit("Mul", 14, {gate, req.inputs[1]}, {}, "", true);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeAffineGrid(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 2));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"align_corners"}));
  A8_ASSIGN_OR_RETURN(int64_t align, IntAttr(req, "align_corners", 0));
  A8_RETURN_IF_ERROR(RequireConstant(req, 1, "size"));
  const std::vector<int64_t> size = req.inputs[1]->data()->ToInt64Vector();
  if (size.size() != 4 && size.size() != 5) {
    return InvalidInput("{}: input 'size' must have 4 (2-D) or 5 (3-D) values, got {}", req.where,
                        size.size());
  }
  const std::vector<int64_t> spatial(size.begin() + 2, size.end());  // [(D,) H, W]
  const size_t k = spatial.size();
  int64_t points = 1;
  for (int64_t d : spatial) {
    if (d <= 0) return InvalidInput("{}: input 'size' has {}, not positive", req.where, d);
    points *= d;
  }
  // The coordinate of index i along a dim of n: onnx's reference (np.arange(start, stop, step)).
  auto coordinate = [&](int64_t i, int64_t n) {
    const double step = align ? 2.0 / static_cast<double>(n - 1) : 2.0 / static_cast<double>(n);
    const double start = align ? -1.0 : -1.0 + step / 2;
    return i == 0 ? start : start + static_cast<double>(i) * step;
  };
  std::vector<float> base;
  base.reserve(static_cast<size_t>(points) * (k + 1));
  for (int64_t p = 0; p < points; ++p) {
    // The point's indices, W fastest; the row is (x, y, (z,) 1): W's coordinate first.
    std::vector<int64_t> index(k);
    int64_t rest = p;
    for (size_t d = k; d-- > 0;) {
      index[d] = rest % spatial[d];
      rest /= spatial[d];
    }
    for (size_t d = k; d-- > 0;)
      base.push_back(static_cast<float>(coordinate(index[d], spatial[d])));
    base.push_back(1.0f);
  }
  Emitter e(g, req);
  Value* theta = req.inputs[0];
  Value* base_c =
      e.Constant("base", TensorData::FromFloats(base, {points, static_cast<int64_t>(k + 1)}));
  Value* base_t = e.Emit("CastLike", 15, {base_c, theta}, {}, "base_t", false);
  Value* theta_t = e.Emit("Transpose", 13, {theta},
                          {{"perm", Attribute(std::vector<int64_t>{0, 2, 1})}}, "theta_t", false);
  Value* grid = e.Emit("MatMul", 13, {base_t, theta_t}, {}, "grid_flat", false);
  std::vector<int64_t> shape = {size[0]};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  shape.push_back(static_cast<int64_t>(k));
  e.Emit("Reshape", 14, {grid, e.Int64s("grid_shape", shape, {static_cast<int64_t>(shape.size())})},
         {}, "", true);
  return e.nodes();
}

}  // namespace

void AddMoreDecompositions(DecomposeTable* t) {
  t->insert({{"LpPool", DecomposeLpPool},
             {"MeanVarianceNormalization", DecomposeMvn},
             {"ReverseSequence", DecomposeReverseSequence},
             {"CumProd", DecomposeCumProd},
             {"Einsum", DecomposeEinsum},
             {"SwiGLU", DecomposeSwiGlu},
             {"AffineGrid", DecomposeAffineGrid}});
}

}  // namespace a8::decompose_internal

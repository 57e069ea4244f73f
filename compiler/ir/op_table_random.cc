// The random ops: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike and
// Bernoulli, with their shape rules. One kernel body, run by both backends
// (kernels/device/random.h). They are `random` (cse, canonicalize, schedule and folding leave
// them alone), not differentiable, and keep the dtype they declare in every precision mode.
#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

// The output dtype: attribute 'dtype' when the node has it, else `dflt` (nullopt: required).
StatusOr<DType> OutputDType(const OpNode& node, std::optional<DType> dflt, bool float_only) {
  const Attribute* attr = node.attr("dtype");
  DType t;
  if (attr != nullptr) {
    if (attr->kind() != AttrKind::kInt)
      return InvalidInput("{}: attribute 'dtype' must be an int", node.Where());
    StatusOr<DType> d = DTypeFromOnnx(static_cast<int>(attr->i()));
    if (!d.ok()) return d.status().WithContext(node.Where() + ": attribute 'dtype'");
    t = *d;
  } else if (dflt) {
    t = *dflt;
  } else {
    return InvalidInput("{}: attribute 'dtype' is required", node.Where());
  }
  if (float_only && !IsFloat(t)) {
    return InvalidInput("{}: the output dtype {} must be a float type (attribute 'dtype')",
                        node.Where(), DTypeName(t));
  }
  return t;
}

// RandomUniform[Like]: an empty range [low, high) has nothing to draw.
Status CheckUniformRange(const OpNode& node) {
  if (node.op() != "RandomUniform" && node.op() != "RandomUniformLike") return Status::Ok();
  const float low = node.GetFloat("low", 0.0f), high = node.GetFloat("high", 1.0f);
  if (!(low < high)) {
    return InvalidInput("{}: attribute 'low' {} must be below attribute 'high' {}", node.Where(),
                        low, high);
  }
  return Status::Ok();
}

// RandomUniform, RandomNormal: attribute 'shape' (required), 'dtype' (default float).
Status InferRandom(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(CheckUniformRange(node));
  const Attribute* shape = node.attr("shape");
  if (shape == nullptr || shape->kind() != AttrKind::kInts)
    return InvalidInput("{}: attribute 'shape' (ints) is required", node.Where());
  const std::vector<int64_t> dims = node.GetInts("shape");
  for (int64_t d : dims) {
    if (d < 0) {
      return InvalidInput("{}: attribute 'shape' {} has a negative dim", node.Where(),
                          DimsString(dims));
    }
  }
  A8_ASSIGN_OR_RETURN(DType t, OutputDType(node, DType::kF32, true));
  return SetOutputs(node, out, {TensorType{t, dims}});
}

// RandomUniformLike, RandomNormalLike: the input's dims; 'dtype', else the input's (float) type.
Status InferRandomLike(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_RETURN_IF_ERROR(CheckUniformRange(node));
  const TensorType& in = node.input(0)->type();
  if (node.attr("dtype") == nullptr && !IsFloat(in.dtype)) {
    return InvalidInput("{}: input 'input' is {}: give attribute 'dtype' (a float type)",
                        node.Where(), in.ToString());
  }
  A8_ASSIGN_OR_RETURN(DType t, OutputDType(node, in.dtype, true));
  return SetOutputs(node, out, {TensorType{t, in.dims}});
}

// Bernoulli: float probabilities in; 'dtype' (any type), else the input's.
Status InferBernoulli(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "input"));
  const TensorType& in = node.input(0)->type();
  A8_ASSIGN_OR_RETURN(DType t, OutputDType(node, in.dtype, false));
  return SetOutputs(node, out, {TensorType{t, in.dims}});
}

// `kernel`: the catalog row, for the ops of one type variable (the -Like ops' and Bernoulli's
// rows, of two, are in compiler/plan/kernel_catalog.cc).
OpDef RandomOp(OpDef op, std::optional<KernelRowSpec> kernel) {
  op.random = true;
  op.gradient = GradDecision::kNone;
  op.precision = OpPrecisionClass::kNone;
  op.kernel = std::move(kernel);
  return op;
}

}  // namespace

void AddRandomOps(std::vector<OpDef>* ops) {
  const AttrSpec seed = OptNoDefault("seed", AttrKind::kFloat);
  const KernelRowSpec none_to_float{"", "T", {{'T', kKernelFloats}}};
  ops->push_back(
      RandomOp(Op("RandomUniform", {0, 0, 1, 1},
                  {Opt("dtype", 1), Opt("high", 1.0f), Opt("low", 0.0f), seed,
                   Req("shape", AttrKind::kInts)},
                  {1, 22}, 1, InferRandom, "uniform draws in [low, high) of `shape` (Philox)"),
               none_to_float));
  ops->push_back(RandomOp(
      Op("RandomNormal", {0, 0, 1, 1},
         {Opt("dtype", 1), Opt("mean", 0.0f), Opt("scale", 1.0f), seed,
          Req("shape", AttrKind::kInts)},
         {1, 22}, 1, InferRandom, "normal draws (mean, scale) of `shape` (Philox, Box-Muller)"),
      none_to_float));
  ops->push_back(RandomOp(
      Op("RandomUniformLike", kUnary,
         {OptNoDefault("dtype", AttrKind::kInt), Opt("high", 1.0f), Opt("low", 0.0f), seed},
         {1, 22}, 1, InferRandomLike, "uniform draws in [low, high) shaped like the input"),
      std::nullopt));
  ops->push_back(RandomOp(
      Op("RandomNormalLike", kUnary,
         {OptNoDefault("dtype", AttrKind::kInt), Opt("mean", 0.0f), Opt("scale", 1.0f), seed},
         {1, 22}, 1, InferRandomLike, "normal draws (mean, scale) shaped like the input"),
      std::nullopt));
  ops->push_back(
      RandomOp(Op("Bernoulli", kUnary, {OptNoDefault("dtype", AttrKind::kInt), seed}, {15, 22}, 15,
                  InferBernoulli, "1 with probability p (the input), else 0, in `dtype` (Philox)"),
               std::nullopt));
}

}  // namespace a8

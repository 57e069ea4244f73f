// Det (ONNX 11/22) and its gradient a8.DetGrad, with their shape rules. One kernel body each, run
// by both backends (kernels/device/linalg.h); the gradient rule is in
// passes/autodiff/grad_rules_linalg.cc. Det is pinned to FP32 (precision class deny): a
// determinant is a product of n pivots, which overflows or underflows half precision's range
// long before the matrix entries do.
#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

// X's batch dims (all but the last two), or an error naming the field when X is not a batch of
// square float matrices.
StatusOr<std::vector<int64_t>> BatchDims(const OpNode& node, int i) {
  A8_RETURN_IF_ERROR(RequireFloat(node, i, "X"));
  const TensorType& x = node.input(i)->type();
  const int64_t r = x.rank();
  if (r < 2 || x.dims[r - 1] != x.dims[r - 2] || x.dims[r - 1] < 1) {
    return InvalidInput("{}: input 'X' must be [..., n, n] with n >= 1, got {}", node.Where(),
                        x.ToString());
  }
  return std::vector<int64_t>(x.dims.begin(), x.dims.end() - 2);
}

Status InferDet(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, BatchDims(node, 0));
  return SetOutputs(node, out, {TensorType{node.input(0)->dtype(), std::move(dims)}});
}

// (dy, X) -> dX like X.
Status InferDetGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dims, BatchDims(node, 1));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "dy", 1, "X"));
  A8_RETURN_IF_ERROR(RequireDyDims(node, dims, "Det"));
  return SetOutputs(node, out, {node.input(1)->type()});
}

}  // namespace

void AddLinalgOps(std::vector<OpDef>* ops) {
  constexpr OpPrecisionClass kDeny = OpPrecisionClass::kDeny;
  ops->push_back(WithFloatKernel(
      kDeny, "T", "T",
      Op("Det", kUnary, {}, {11, 22}, 11, InferDet,
         "determinant of each square matrix in the last two dims (LU, pinned FP32)")));
  ops->push_back(NotDifferentiable(WithFloatKernel(
      kDeny, "T,T", "T",
      InternalOp("DetGrad", kBinary, {}, InferDetGrad,
                 "gradient of Det: dy times the cofactors of X (exact when X is singular)"))));
}

}  // namespace a8

// Shape rules of the op table (internal to compiler/ir): one function per op family, and the
// helpers they share (broadcasting, axis normalization, reading constant operands).
//
// Every rule validates its inputs (ranks, dtypes where the ONNX spec requires them to agree,
// axis ranges, presence of the constant operands it needs) and returns InvalidInput naming the
// node and the field, so that a hostile model gets an error and never a crash or a wrapped size.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/op_node.h"
#include "compiler/ir/op_table.h"
#include "compiler/ir/status.h"
#include "compiler/ir/types.h"

namespace a8 {

// ---- helpers shared by the rules (and tested directly)

// Numpy-style multidirectional broadcast of `a` and `b`; an error naming `where` otherwise.
StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                               const std::vector<int64_t>& b,
                                               std::string_view where);
// Whether `from` broadcasts unidirectionally to `to` (Gemm's C, LayerNormalization's Scale).
bool BroadcastsTo(const std::vector<int64_t>& from, const std::vector<int64_t>& to);
// `axis` in [-rank, rank) -> [0, rank); an error naming the node and `field` otherwise.
StatusOr<int64_t> NormalizeAxis(const OpNode& node, std::string_view field, int64_t axis,
                                int64_t rank);
// The int64 data of constant input `i`, or an Unsupported error naming it when it is not
// constant (a800c's shapes are static).
StatusOr<std::vector<int64_t>> ConstantInts(const OpNode& node, int i, std::string_view field);

// The largest value a size-like attribute (kernel, stride, dilation, pad, depth) may take: large
// enough for any real model, small enough that the product of two cannot overflow int64.
inline constexpr int64_t kMaxAttrDim = int64_t{1} << 31;

// ONNX auto_pad SAME_UPPER / SAME_LOWER resolved: pads[i] (begin) and pads[i + n] (end) of each
// of the n = spatial.size() dims, the odd one at the end for SAME_UPPER. A transposed window
// (ConvTranspose) pads as if the input divided by the strides. `pads` has 2 * n entries.
void SameAutoPads(bool upper, bool transpose, const std::vector<int64_t>& spatial,
                  const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& dilations, std::vector<int64_t>* pads);

// The data of constant input `i`, or an Unsupported error naming it when it is not constant.
StatusOr<TensorDataPtr> ConstantData(const OpNode& node, int i, std::string_view field);
// Input `i`, `field`, as a shape: ConstantInts of a 1-D tensor, every dim >= 0.
StatusOr<std::vector<int64_t>> ConstantShape(const OpNode& node, int i, std::string_view field);
// Ints given either as constant input `i` (canonical form) or as the attribute of the same name
// (the pre-upgrade form: Squeeze-11's axes, Split-11's split, ...); nullopt when neither is.
StatusOr<std::optional<std::vector<int64_t>>> IntsOperand(const OpNode& node, int i,
                                                          const std::string& name);
// Normalizes every axis against `rank`; duplicates are an error naming `field`.
StatusOr<std::vector<int64_t>> NormalizeAxes(const OpNode& node, std::string_view field,
                                             const std::vector<int64_t>& axes, int64_t rank);

// CheckedProduct with the node named in its error.
StatusOr<int64_t> NodeProduct(const OpNode& node, const std::vector<int64_t>& dims);

// "[2,3,4]", for messages.
std::string DimsString(const std::vector<int64_t>& dims);
// Inputs 0..count-1 are present; else an error naming the node and the missing input.
Status RequireInputs(const OpNode& node, int count);
Status RequireSameDType(const OpNode& node, int a, std::string_view name_a, int b,
                        std::string_view name_b);
Status RequireRank(const OpNode& node, int i, std::string_view name, int64_t rank);
Status RequireFloat(const OpNode& node, int i, std::string_view name);
// Input 0, the gradient 'dy' of a gradient op, has the dims of `forward_op`'s output.
Status RequireDyDims(const OpNode& node, const std::vector<int64_t>& dims,
                     std::string_view forward_op);
// The dtype named by the required int attribute 'to' (Cast, BitCast); else an error naming it.
StatusOr<DType> RequiredToAttr(const OpNode& node);
// Replaces *out with `types`, each checked: no negative dim, element count fits int64.
Status SetOutputs(const OpNode& node, std::vector<TensorType>* out, std::vector<TensorType> types);

// ---- rules, by family (shape_rules_elementwise.cc, _nn.cc, _reduce.cc, _shape.cc,
// _training.cc)
Status InferSameAsInput0(const OpNode& node, std::vector<TensorType>* out);
Status InferBroadcastBinary(const OpNode& node, std::vector<TensorType>* out);
Status InferCompareBinary(const OpNode& node, std::vector<TensorType>* out);
Status InferLogicalBinary(const OpNode& node, std::vector<TensorType>* out);
Status InferBoolUnary(const OpNode& node, std::vector<TensorType>* out);
Status InferLogicalNot(const OpNode& node, std::vector<TensorType>* out);
Status InferFloatUnary(const OpNode& node, std::vector<TensorType>* out);
// Gelu's and a8.GeluGrad's attribute 'approximate' is none or tanh.
Status CheckGeluApproximate(const OpNode& node);
Status InferGelu(const OpNode& node, std::vector<TensorType>* out);
Status InferGeluGrad(const OpNode& node, std::vector<TensorType>* out);  // a8.GeluGrad
Status InferNumericUnary(const OpNode& node, std::vector<TensorType>* out);
Status InferVariadic(const OpNode& node, std::vector<TensorType>* out);
Status InferWhere(const OpNode& node, std::vector<TensorType>* out);
Status InferClip(const OpNode& node, std::vector<TensorType>* out);
Status InferCast(const OpNode& node, std::vector<TensorType>* out);
Status InferCastLike(const OpNode& node, std::vector<TensorType>* out);
Status InferPow(const OpNode& node, std::vector<TensorType>* out);
Status InferMod(const OpNode& node, std::vector<TensorType>* out);

// ---- linear algebra and NN
Status InferMatMul(const OpNode& node, std::vector<TensorType>* out);
Status InferGemm(const OpNode& node, std::vector<TensorType>* out);
Status InferConv(const OpNode& node, std::vector<TensorType>* out);
Status InferConvTranspose(const OpNode& node, std::vector<TensorType>* out);
Status InferBatchNormalization(const OpNode& node, std::vector<TensorType>* out);
Status InferLayerNormalization(const OpNode& node, std::vector<TensorType>* out);
Status InferInstanceNormalization(const OpNode& node, std::vector<TensorType>* out);
Status InferPool(const OpNode& node, std::vector<TensorType>* out);
Status InferGlobalPool(const OpNode& node, std::vector<TensorType>* out);
Status InferSoftmax(const OpNode& node, std::vector<TensorType>* out);
// Dropout's optional scalar inputs from `ratio` on: ratio (float), then training_mode (bool).
Status CheckDropoutControls(const OpNode& node, int ratio);
Status InferDropout(const OpNode& node, std::vector<TensorType>* out);
Status InferSoftmaxCrossEntropyLoss(const OpNode& node, std::vector<TensorType>* out);
Status InferNegativeLogLikelihoodLoss(const OpNode& node, std::vector<TensorType>* out);

// ---- reductions
Status InferReduce(const OpNode& node, std::vector<TensorType>* out);
Status InferArgReduce(const OpNode& node, std::vector<TensorType>* out);
Status InferCumSum(const OpNode& node, std::vector<TensorType>* out);

// ---- shape manipulation
Status InferReshape(const OpNode& node, std::vector<TensorType>* out);
Status InferFlatten(const OpNode& node, std::vector<TensorType>* out);
Status InferTranspose(const OpNode& node, std::vector<TensorType>* out);
Status InferConcat(const OpNode& node, std::vector<TensorType>* out);
Status InferSplit(const OpNode& node, std::vector<TensorType>* out);
Status InferSlice(const OpNode& node, std::vector<TensorType>* out);
Status InferGather(const OpNode& node, std::vector<TensorType>* out);
Status InferGatherElements(const OpNode& node, std::vector<TensorType>* out);
Status InferSqueeze(const OpNode& node, std::vector<TensorType>* out);
Status InferUnsqueeze(const OpNode& node, std::vector<TensorType>* out);
Status InferExpand(const OpNode& node, std::vector<TensorType>* out);
Status InferPad(const OpNode& node, std::vector<TensorType>* out);
Status InferTile(const OpNode& node, std::vector<TensorType>* out);
Status InferShape(const OpNode& node, std::vector<TensorType>* out);
Status InferSize(const OpNode& node, std::vector<TensorType>* out);
Status InferConstantOfShape(const OpNode& node, std::vector<TensorType>* out);
Status InferConstant(const OpNode& node, std::vector<TensorType>* out);
Status InferRange(const OpNode& node, std::vector<TensorType>* out);
Status InferTrilu(const OpNode& node, std::vector<TensorType>* out);
Status InferOneHot(const OpNode& node, std::vector<TensorType>* out);

// ---- ai.onnx.preview.training
Status InferGradient(const OpNode& node, std::vector<TensorType>* out);
Status InferAdam(const OpNode& node, std::vector<TensorType>* out);
Status InferMomentum(const OpNode& node, std::vector<TensorType>* out);
Status InferAdagrad(const OpNode& node, std::vector<TensorType>* out);

}  // namespace a8

// The bitwise ops of integer tensors: BitwiseAnd, BitwiseOr, BitwiseXor (ONNX 18) and BitShift
// (11, 28), elementwise with broadcasting. Their math is kernels/common/binary_math.h (one body
// for both backends); BitwiseNot imports as BitwiseXor with all ones (import_decompose.cc).
// Not differentiable; no precision class (integers only). And BitCast (26): the bytes of a tensor
// read as another dtype of the same width (a copy on both backends).
#include <fmt/format.h>

#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"
#include "compiler/ir/types.h"

namespace a8 {
namespace {

// The element types of the bitwise kernels.
const std::vector<DType>& BitwiseTypes() {
  static const std::vector<DType> kTypes = DTypeVector(kIntegerDTypes);
  return kTypes;
}

Status InferBitwise(const OpNode& node, std::vector<TensorType>* out) {
  if (node.num_inputs() == 2 && node.input(0) != nullptr && !IsInteger(node.input(0)->dtype())) {
    return InvalidInput("{}: input 'A' must be an integer tensor, got {}", node.Where(),
                        node.input(0)->type().ToString());
  }
  if (node.op() == "BitShift") {
    const Attribute* dir = node.attr("direction");
    if (dir == nullptr || dir->kind() != AttrKind::kString ||
        (dir->s() != "LEFT" && dir->s() != "RIGHT")) {
      return InvalidInput("{}: attribute 'direction' must be \"LEFT\" or \"RIGHT\"", node.Where());
    }
  }
  return InferBroadcastBinary(node, out);
}

OpDef Bitwise(OpDef op) {
  op.elementwise = true;
  op.in_place = InPlace::kAnyInput;
  op.precision = OpPrecisionClass::kNone;
  op.gradient = GradDecision::kNone;
  op.kernel = KernelRowSpec{"T,T", "T", {{'T', BitwiseTypes()}}};
  return op;
}

// BitCast(x){to}: x's dims, dtype `to`, which must have x's element width.
Status InferBitCast(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 1));
  A8_ASSIGN_OR_RETURN(const DType to, RequiredToAttr(node));
  const DType from = node.input(0)->dtype();
  if (DTypeSize(to) != DTypeSize(from)) {
    return InvalidInput(
        "{}: attribute 'to': {} has {} bits, input 'input' ({}) has {}: BitCast "
        "needs the same width",
        node.Where(), DTypeName(to), 8 * DTypeSize(to), DTypeName(from), 8 * DTypeSize(from));
  }
  return SetOutputs(node, out, {{to, node.input(0)->dims()}});
}

}  // namespace

void AddBitwiseOps(std::vector<OpDef>* ops) {
  for (const char* name : {"And", "Or", "Xor"}) {
    ops->push_back(Bitwise(Op(fmt::format("Bitwise{}", name), kBinary, {}, {18}, 18, InferBitwise,
                              fmt::format("bitwise {} of integers (broadcasting)", name))));
  }
  ops->push_back(
      Bitwise(Op("BitShift", kBinary, {Req("direction", AttrKind::kString)}, {11, 28}, 11,
                 InferBitwise, "shift integers LEFT or RIGHT (arithmetic for signed types)")));
  OpDef bitcast = Op("BitCast", kUnary, {Req("to", AttrKind::kInt)}, {26}, 26, InferBitCast,
                     "the bytes of x read as dtype `to` (of x's width)");
  bitcast.precision = OpPrecisionClass::kNone;
  bitcast.gradient = GradDecision::kNone;
  const std::vector<DType> all = DTypeVector(kAllDTypes);
  bitcast.kernel = KernelRowSpec{"A", "B", {{'A', all}, {'B', all}}};
  ops->push_back(std::move(bitcast));
}

}  // namespace a8

// Internal ops (domain "a8", see op_table_builder.h) that the `fuse` pass (passes/fusion/fuse.h)
// builds, with their shape rules. Each keeps the ONNX nodes it replaces in `a8.onnx_nodes`. The
// per-element math is kernels/common/fused_elementwise.h (one host/device body); the CPU kernels
// are kernels/cpu/fused.h.
//
// - a8.FusedMatMul(A [..., M, K], B [K, N] ([N, K] with trans_b=1), bias? [N] or [1, N],
//   aux? [..., M, N]) {epilogue, trans_b=0, approximate="none"} -> (Y [..., M, N], out1?).
//   A's leading dims are flattened into M; all operands and outputs have one float dtype T. The
//   product accumulates in float (double for f64), as MatMul does; the epilogue is applied in
//   float to acc = (A @ B)[m, n] and Y is rounded once to T (the unfused MatMul + Add + act round
//   after each op, so f16/bf16 results may differ by those dropped roundings):
//     "bias"       Y = acc + bias            "relu" / "gelu"  Y = act(acc)
//     "bias_relu"  Y = relu(acc + bias)      "bias_gelu"      Y = gelu(acc + bias)
//     "drelu"      Y = aux > 0 ? acc : 0     (aux = the forward Relu's output y; a8.ReluGrad)
//     "dgelu"      Y = acc * gelu'(aux)      (aux = the forward Gelu's input x; a8.GeluGrad)
//     "drelu_bgrad", "dgelu_bgrad": as drelu / dgelu, and out1 [N] = the sum of Y over all rows
//     (float accumulation of the unrounded values: cuBLASLt's DRELU_BGRAD / DGELU_BGRAD).
//   For the forward epilogues with an activation, optional out1 is the pre-activation acc (+ bias)
//   (cuBLASLt's GELU_AUX), for a backward that reads it (a8.GeluGrad reads x).
//   `approximate` is the Gelu's ("none": erf, "tanh").
// - a8.FusedConv(X, W, B?, Z?) {Conv's attributes, activation="none"} -> Y: Conv(X, W, B), plus
//   Z (Y's dims and dtype) where given, then Relu where activation="relu". Each step rounds as
//   the unfused Conv, Add and Relu do (Conv's result is rounded to T, the sum computed in float
//   and rounded to T), so Y has the unfused plan's bits in every dtype: the fusion saves the
//   passes over Y, not a rounding.
// - a8.FusedElementwise(x_1, ..., x_n) {program, constants=[]} -> y: one elementwise program
//   (kernels/common/fused_elementwise.h: opcodes, register encoding) evaluated per element.
//   Every input has one float dtype T; inputs of one element are broadcast, the others all have
//   y's dims. y has dtype `to` (ONNX TensorProto enum, like Cast; default T). Math in float
//   (double when T or y is f64), rounded once to y's dtype: the intermediate f16/bf16 roundings of
//   the unfused ops are dropped (explicit Casts inside the chain still round, kFusedRound*).
#include <string>

#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"
#include "kernels/common/fused_elementwise.h"

namespace a8 {
namespace {

Status InferFusedMatMul(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 2));
  A8_RETURN_IF_ERROR(RequireFloat(node, 0, "A"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "A", 1, "B"));
  const std::string epilogue_name = node.GetString("epilogue", "");
  bool bgrad = false;
  const int32_t epilogue = ParseFusedEpilogue(epilogue_name.c_str(), &bgrad);
  if (epilogue < 0) {
    return InvalidInput(
        "{}: attribute 'epilogue' is '{}' (expected bias, bias_relu, bias_gelu, relu, gelu, "
        "drelu, dgelu, drelu_bgrad or dgelu_bgrad)",
        node.Where(), epilogue_name);
  }
  const std::string approximate = node.GetString("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    return InvalidInput("{}: attribute 'approximate' is '{}' (expected none or tanh)", node.Where(),
                        approximate);
  }
  const std::vector<int64_t>& a = node.input(0)->dims();
  const std::vector<int64_t>& b = node.input(1)->dims();
  if (a.size() < 2 || b.size() != 2) {
    return InvalidInput("{}: A {} must have rank >= 2 and B {} rank 2", node.Where(),
                        node.input(0)->type().ToString(), node.input(1)->type().ToString());
  }
  const bool trans_b = node.GetInt("trans_b", 0) != 0;
  const int64_t k = trans_b ? b[1] : b[0], n = trans_b ? b[0] : b[1];
  if (a.back() != k) {
    return InvalidInput("{}: A {} and B {}{} do not agree on K", node.Where(), DimsString(a),
                        DimsString(b), trans_b ? " (transposed)" : "");
  }
  std::vector<int64_t> y_dims(a.begin(), a.end() - 1);
  y_dims.push_back(n);
  const DType t = node.input(0)->dtype();
  if (EpilogueHasBias(epilogue) != node.has_input(2)) {
    return InvalidInput("{}: epilogue '{}' {} a bias (input 2)", node.Where(), epilogue_name,
                        EpilogueHasBias(epilogue) ? "needs" : "takes no");
  }
  if (node.has_input(2)) {
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "A", 2, "bias"));
    const std::vector<int64_t>& bias = node.input(2)->dims();
    const bool ok =
        (bias.size() == 1 && bias[0] == n) || (bias.size() == 2 && bias[0] == 1 && bias[1] == n);
    if (!ok) {
      return InvalidInput("{}: bias {} must be [{}] or [1,{}]", node.Where(), DimsString(bias), n,
                          n);
    }
  }
  if (EpilogueIsBackward(epilogue) != node.has_input(3)) {
    return InvalidInput("{}: epilogue '{}' {} input 3 (aux)", node.Where(), epilogue_name,
                        EpilogueIsBackward(epilogue) ? "needs" : "takes no");
  }
  if (node.has_input(3)) {
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, "A", 3, "aux"));
    if (node.input(3)->dims() != y_dims) {
      return InvalidInput("{}: aux {} must have the output's dims {}", node.Where(),
                          node.input(3)->type().ToString(), DimsString(y_dims));
    }
  }
  std::vector<TensorType> types = {{t, y_dims}};
  if (node.num_outputs() == 2) {
    if (EpilogueIsBackward(epilogue) && !bgrad) {
      return InvalidInput("{}: epilogue '{}' has one output (the _bgrad forms have two)",
                          node.Where(), epilogue_name);
    }
    if (epilogue == kEpilogueBias) {
      return InvalidInput("{}: epilogue 'bias' has no pre-activation output", node.Where());
    }
    types.push_back(bgrad ? TensorType{t, {n}} : TensorType{t, y_dims});
  } else if (bgrad) {
    return InvalidInput("{}: epilogue '{}' has two outputs (Y, bias gradient)", node.Where(),
                        epilogue_name);
  }
  return SetOutputs(node, out, std::move(types));
}

Status InferFusedConv(const OpNode& node, std::vector<TensorType>* out) {
  const std::string activation = node.GetString("activation", "none");
  if (activation != "none" && activation != "relu") {
    return InvalidInput("{}: attribute 'activation' is '{}' (expected none or relu)", node.Where(),
                        activation);
  }
  A8_RETURN_IF_ERROR(InferConv(node, out));
  if (node.has_input(3)) {
    const TensorType& y = (*out)[0];
    if (node.input(3)->type() != y) {
      return InvalidInput("{}: input 'Z' {} must have the output's type {}", node.Where(),
                          node.input(3)->type().ToString(), y.ToString());
    }
  }
  return Status::Ok();
}

Status InferFusedElementwise(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, node.num_inputs()));
  int widest = 0;
  for (int i = 0; i < node.num_inputs(); ++i) {
    A8_RETURN_IF_ERROR(RequireFloat(node, i, node.input(i)->name()));
    A8_RETURN_IF_ERROR(RequireSameDType(node, 0, node.input(0)->name(), i, node.input(i)->name()));
    const TensorType& w = node.input(widest)->type();
    const TensorType& t = node.input(i)->type();
    if (t.dims.size() > w.dims.size() ||
        (t.dims.size() == w.dims.size() && t.CheckedNumElements() > w.CheckedNumElements())) {
      widest = i;
    }
  }
  const std::vector<int64_t>& dims = node.input(widest)->dims();
  for (int i = 0; i < node.num_inputs(); ++i) {
    const TensorType& t = node.input(i)->type();
    if (t.dims != dims && (t.CheckedNumElements() != 1 || t.dims.size() > dims.size())) {
      return InvalidInput("{}: input '{}' {} must have dims {} or one element", node.Where(),
                          node.input(i)->name(), t.ToString(), DimsString(dims));
    }
  }
  const std::vector<int64_t> code = node.GetInts("program");
  const Attribute* consts = node.attr("constants");
  const std::vector<float> no_consts;
  const std::vector<float>& c =
      consts != nullptr && consts->kind() == AttrKind::kFloats ? consts->floats() : no_consts;
  FusedProgram program;
  if (!DecodeFusedProgram(code.data(), static_cast<int64_t>(code.size()), c.data(),
                          static_cast<int64_t>(c.size()), node.num_inputs(), &program)) {
    return InvalidInput(
        "{}: attribute 'program' is not a valid program for {} inputs and {} constants "
        "(kernels/common/fused_elementwise.h; at most {} inputs, {} instructions, {} constants)",
        node.Where(), node.num_inputs(), c.size(), kFusedMaxInputs, kFusedMaxInstrs,
        kFusedMaxConsts);
  }
  DType y = node.input(0)->dtype();
  if (node.has_attr("to")) {
    StatusOr<DType> to = DTypeFromOnnx(static_cast<int>(node.GetInt("to", 0)));
    if (!to.ok()) return to.status().WithContext(node.Where() + ": attribute 'to'");
    if (!IsFloat(*to)) {
      return InvalidInput("{}: attribute 'to' must be a float type", node.Where());
    }
    y = *to;
  }
  return SetOutputs(node, out, {{y, dims}});
}

}  // namespace

void AddFusedOps(std::vector<OpDef>* ops) {
  ops->push_back(Multiplies(
      {0, 1},
      InternalOp(
          "FusedMatMul", {2, 4, 1, 2},
          {Req("epilogue", AttrKind::kString), Opt("trans_b", 0), Opt("approximate", "none")},
          InferFusedMatMul,
          "GEMM with an epilogue: (A, B[, bias][, aux]) -> (Y[, pre-activation | bias gradient]); "
          "epilogue bias|bias_relu|bias_gelu|relu|gelu|drelu|dgelu|drelu_bgrad|dgelu_bgrad, float "
          "accumulation, one rounding")));
  std::vector<AttrSpec> conv_attrs = ConvAttrs(false);
  conv_attrs.push_back(Opt("activation", "none"));
  ops->push_back(Multiplies(
      {0, 1}, InternalOp("FusedConv", {2, 4, 1, 1}, std::move(conv_attrs), InferFusedConv,
                         "Conv with an epilogue: (X, W[, B][, Z]) -> act(Conv(X, W, B) + Z); "
                         "activation none|relu, each step rounded as unfused")));
  ops->push_back(InternalOp(
      "FusedElementwise", kVariadic,
      {Req("program", AttrKind::kInts), OptNoDefault("constants", AttrKind::kFloats),
       OptNoDefault("to", AttrKind::kInt)},
      InferFusedElementwise,
      "a chain of elementwise ops as one register program (kernels/common/fused_elementwise.h), "
      "float math, one rounding"));
}

}  // namespace a8

// The FLOP and byte rule of every catalog op (cost.h). One table, by family; the FLOP counts of
// the non-matmul families are conventions (the order of magnitude an implementation needs), the
// matmul and convolution counts are exact multiply-adds x 2.
#include <algorithm>
#include <iterator>
#include <map>
#include <string>

#include "kernels/common/fused_elementwise.h"
#include "kernels/common/unary_math.h"
#include "runtime/inspect/cost.h"

namespace a8 {
namespace {

using F = CostFamily;

const std::map<std::string, CostFamily, std::less<>>& FamilyTable() {
  static const auto* table = new std::map<std::string, CostFamily, std::less<>>([] {
    std::map<std::string, CostFamily, std::less<>> t;
    auto add = [&](CostFamily f, std::initializer_list<const char*> ops) {
      for (const char* op : ops) t.emplace(op, f);
    };
    add(F::kMatMul, {"MatMul", "Gemm", "a8.FusedMatMul"});
    // Two products a (query, key) pair (QK^T and PV; the gradient recomputes QK^T and adds
    // dP, dQ, dK, dV): costed at the tensor-core peak its first kernel does not reach yet.
    add(F::kMatMul, {"a8.FusedAttention", "a8.FusedAttentionGrad"});
    add(F::kConv, {"Conv", "ConvTranspose", "a8.ConvGradFilter", "a8.FusedConv"});
    add(F::kElementwise, {"Abs",
                          "Add",
                          "And",
                          "BitShift",
                          "BitwiseAnd",
                          "BitwiseOr",
                          "BitwiseXor",
                          "Ceil",
                          "Clip",
                          "Div",
                          "Dropout",
                          "Equal",
                          "Floor",
                          "Greater",
                          "GreaterOrEqual",
                          "HardSigmoid",
                          "IsInf",
                          "IsNaN",
                          "LeakyRelu",
                          "Less",
                          "LessOrEqual",
                          "Max",
                          "Mean",
                          "Min",
                          "Mod",
                          "Mul",
                          "Neg",
                          "Not",
                          "Or",
                          "Reciprocal",
                          "Relu",
                          "Sign",
                          "Sqrt",
                          "Sub",
                          "Sum",
                          "Where",
                          "Xor",
                          "a8.ReluGrad",
                          "a8.LeakyReluGrad",
                          "a8.HardSigmoidGrad",
                          "a8.DropoutGrad",
                          "a8.GradAccumulate",
                          "a8.UnscaleCheckFinite",
                          "a8.CheckFinite"});
    add(F::kCast, {"Cast", "CastLike"});
    // Pow is the one binary op that calls libm (binary_math.h has no cost column); the unary ops
    // and activation gradients are classed from unary_math.h's lists below.
    add(F::kTranscendental, {"Pow"});
    // The random ops: ten Philox rounds an element (and Box-Muller's log and cos), libm-call work.
    add(F::kTranscendental,
        {"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"});
    add(F::kFused, {"a8.FusedElementwise"});
    add(F::kPool, {"AveragePool", "MaxPool", "GlobalAveragePool", "GlobalMaxPool",
                   "a8.AveragePoolGrad", "a8.MaxPoolGrad"});
    // Windowed sampling, costed like a pool (one pass over the larger of input and output; an
    // undercount for cubic taps and DeformConv's channel sums).
    add(F::kPool,
        {"GridSample", "a8.GridSampleGrad", "Col2Im", "a8.Col2ImGrad", "DeformConv",
         "a8.DeformConvGrad", "MaxUnpool", "a8.MaxUnpoolGrad", "RoiAlign", "a8.RoiAlignGrad"});
    add(F::kReduction, {"ArgMax", "ArgMin", "CumSum", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
                        "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
                        "ReduceSumSquare", "TopK", "a8.GlobalNormSq"});
    // Costed as one pass over X: an undercount of LU's n^3 (and DetGrad's n^5) per matrix.
    add(F::kReduction, {"Det", "a8.DetGrad"});
    add(F::kNormalization,
        {"BatchNormalization", "InstanceNormalization", "LayerNormalization",
         "a8.BatchNormalizationGrad", "a8.InstanceNormalizationGrad", "a8.LayerNormalizationGrad"});
    add(F::kSoftmaxLoss,
        {"Softmax", "LogSoftmax", "a8.SoftmaxGrad", "a8.LogSoftmaxGrad", "SoftmaxCrossEntropyLoss",
         "NegativeLogLikelihoodLoss", "a8.SoftmaxCrossEntropyLossGrad",
         "a8.NegativeLogLikelihoodLossGrad", "a8.BceWithLogitsLoss", "a8.BceWithLogitsLossGrad",
         "a8.MseLoss", "a8.MseLossGrad", "a8.L1Loss", "a8.L1LossGrad"});
    add(F::kOptimizer, {"a8.SgdUpdate", "a8.AdamUpdate", "a8.TrainControl", "a8.UpdateScale",
                        "ai.onnx.preview.training.Adagrad", "ai.onnx.preview.training.Adam",
                        "ai.onnx.preview.training.Momentum"});
    add(F::kMovement,
        {"BitCast",         "Concat",      "ConstantOfShape", "Expand", "Gather",
         "GatherElements",  "GatherND",    "OneHot",          "Pad",    "Range",
         "ScatterElements", "ScatterND",   "Shape",           "Size",   "Slice",
         "Split",           "Tile",        "Transpose",       "Trilu",  "a8.GatherGrad",
         "a8.GatherNDGrad", "a8.SliceGrad"});
    add(F::kView, {"Flatten", "Identity", "Reshape", "Squeeze", "Unsqueeze"});
    add(F::kCollective, {"a8.AllReduceStart", "a8.AllReduceWait"});
    // Every other unary op and activation gradient from kernels/common/unary_math.h's lists (a new
    // op there gets a rule without an edit here): a few instructions an element (Cost 1) are
    // elementwise, a libm call (Cost 16) transcendental (a8.SigmoidGrad and a8.TanhGrad read the
    // saved output: Cost 1). The elementwise list above keeps its own choice for the cheap libm
    // calls (Sqrt, Floor, Sign, ...).
    auto family = [](int cost) { return cost <= 1 ? F::kElementwise : F::kTranscendental; };
#define A8_X(Name, Types, Cost, Fused) \
  if (std::string_view(#Types) != "Variant") t.emplace(#Name, family(Cost));
    A8_UNARY_OPS(A8_X)
#undef A8_X
#define A8_X(Name, Reads, Cost, Fused) \
  if (std::string_view(#Reads) != "Variant") t.emplace("a8." #Name "Grad", family(Cost));
    A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
    return t;
  }());
  return *table;
}

double Elements(const plan::Buffer& b) {
  double n = 1;
  for (int64_t d : b.type().dims()) n *= static_cast<double>(d);
  return n;
}

int64_t IntAttr(const plan::Kernel& k, std::string_view name, int64_t fallback) {
  const plan::Attribute* a = FindPlanAttr(k, name);
  return a != nullptr && a->value_case() == plan::Attribute::kI ? a->i() : fallback;
}

// FLOPs an element of a fused elementwise program: each instruction one, a transcendental ten.
double FusedFlopsPerElement(const plan::Kernel& k) {
  const plan::Attribute* program = FindPlanAttr(k, "program");
  if (program == nullptr || program->value_case() != plan::Attribute::kInts) return 1;
  double flops = 0;
  const auto& code = program->ints().values();
  for (int i = 0; i + 3 < code.size(); i += 4) {
    switch (code[i]) {
      case kFusedConst:
      case kFusedRoundF16:
      case kFusedRoundBF16:
      case kFusedRoundF32:
        flops += 0;
        break;
      case kFusedGelu:
      case kFusedGeluTanh:
      case kFusedErf:
        flops += 20;
        break;
      case kFusedGeluGrad:
      case kFusedGeluTanhGrad:
        flops += 30;
        break;
      case kFusedSigmoid:
      case kFusedTanh:
      case kFusedExp:
      case kFusedLog:
        flops += 10;
        break;
      default:
        flops += 1;
    }
  }
  return std::max(flops, 1.0);
}

// exp, log, tanh, sigmoid...: ten; erf and gelu: twenty; their gradients: thirty.
double TranscendentalFlopsPerElement(std::string_view op) {
  if (op == "Erf" || op == "Gelu" || op == "Pow") return 20;
  if (op == "a8.ErfGrad" || op == "a8.GeluGrad") return 30;
  return 10;
}

double OptimizerFlopsPerElement(std::string_view op) {
  if (op == "a8.AdamUpdate" || op == "ai.onnx.preview.training.Adam") return 15;
  if (op == "ai.onnx.preview.training.Adagrad") return 8;
  if (op == "a8.TrainControl" || op == "a8.UpdateScale") return 1;
  return 4;  // SGD, momentum
}

}  // namespace

std::string_view CostFamilyName(CostFamily family) {
  // Indexed by the enum, in its order.
  static constexpr std::string_view kNames[] = {
      "matmul",    "conv",     "elementwise", "cast",          "transcendental",
      "fused",     "pool",     "reduction",   "normalization", "softmax/loss",
      "optimizer", "movement", "view",        "collective"};
  static_assert(std::size(kNames) == static_cast<size_t>(F::kCollective) + 1);
  const auto i = static_cast<size_t>(family);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::optional<CostFamily> CostFamilyOf(std::string_view op) {
  const auto& t = FamilyTable();
  auto it = t.find(op);
  if (it == t.end()) return std::nullopt;
  return it->second;
}

StatusOr<KernelCost> EstimateKernelCost(const plan::Plan& plan, int k) {
  const plan::Kernel& kern = plan.kernels(k);
  std::optional<CostFamily> family = CostFamilyOf(kern.op());
  if (!family)
    return Unsupported("kernel {} '{}' (node '{}'): no cost rule for op '{}'", k, kern.name(),
                       kern.node(), kern.op());
  auto buffer = [&](int id) -> const plan::Buffer* {
    return id >= 0 && id < plan.buffers_size() ? &plan.buffers(id) : nullptr;
  };
  KernelCost c;
  c.family = *family;
  // The compute dtype: the first float input's, else the first output's.
  bool found = false;
  for (int id : kern.inputs())
    if (const plan::Buffer* b = buffer(id);
        !found && b != nullptr && IsFloat(static_cast<DType>(b->type().dtype()))) {
      c.dtype = static_cast<DType>(b->type().dtype());
      found = true;
    }
  if (!found && kern.outputs_size() > 0 && buffer(kern.outputs(0)) != nullptr)
    c.dtype = static_cast<DType>(buffer(kern.outputs(0))->type().dtype());

  double in_bytes = 0, out_bytes = 0, out_elements = 0, in_elements = 0, max_in = 0;
  for (int id : kern.inputs())
    if (const plan::Buffer* b = buffer(id)) {
      in_bytes += static_cast<double>(b->bytes());
      in_elements += Elements(*b);
      max_in = std::max(max_in, Elements(*b));
    }
  for (int id : kern.outputs())
    if (const plan::Buffer* b = buffer(id)) {
      out_bytes += static_cast<double>(b->bytes());
      out_elements += Elements(*b);
    }
  const plan::Buffer* x = kern.inputs_size() > 0 ? buffer(kern.inputs(0)) : nullptr;
  const plan::Buffer* w = kern.inputs_size() > 1 ? buffer(kern.inputs(1)) : nullptr;
  const plan::Buffer* y = kern.outputs_size() > 0 ? buffer(kern.outputs(0)) : nullptr;
  const double y_elements = y != nullptr ? Elements(*y) : 0;
  c.bytes = in_bytes + out_bytes;
  c.elements = in_elements + out_elements;
  for (const auto* ids : {&kern.inputs(), &kern.outputs()})
    for (int id : *ids)
      if (const plan::Buffer* b = buffer(id);
          b != nullptr && (b->type().dtype() == plan::F16 || b->type().dtype() == plan::BF16))
        c.half_elements += Elements(*b);
  switch (c.family) {
    case F::kMatMul: {
      // 2 x |Y| x K, K the contracted dim of A.
      double kdim = 1;
      if (x != nullptr && x->type().dims_size() > 0) {
        const auto& a = x->type().dims();
        const bool trans_a = kern.op() == "Gemm" && IntAttr(kern, "transA", 0) != 0;
        kdim = static_cast<double>(trans_a || a.size() == 1 ? a[0] : a[a.size() - 1]);
      }
      c.flops = 2 * y_elements * kdim;
      if (kern.op() == "a8.FusedAttention" || kern.op() == "a8.FusedAttentionGrad") {
        // Q [B, H, Sq, D] and K [B, Hkv, Sk, D] are inputs 0 and 1 (1 and 2 of the gradient).
        const bool grad = kern.op() == "a8.FusedAttentionGrad";
        const plan::Buffer* q = buffer(kern.inputs(grad ? 1 : 0));
        const plan::Buffer* k = buffer(kern.inputs(grad ? 2 : 1));
        if (q != nullptr && k != nullptr && k->type().dims_size() == 4) {
          const double pairs = Elements(*q) / std::max<double>(q->type().dims(3), 1) *
                               static_cast<double>(k->type().dims(2));
          const double d = static_cast<double>(k->type().dims(3));
          c.flops = (grad ? 10 : 4) * pairs * d;
        }
      }
      if (kern.op() == "a8.FusedMatMul") {
        const plan::Attribute* e = FindPlanAttr(kern, "epilogue");
        const std::string epilogue = e != nullptr ? e->s() : "";
        const bool gelu = epilogue.find("gelu") != std::string::npos;
        const bool grad = !epilogue.empty() && epilogue[0] == 'd';
        c.epilogue_flops = (gelu ? (grad ? 30 : 20) : 1) * y_elements;
        c.epilogue_family = gelu ? F::kTranscendental : F::kElementwise;
        c.flops += c.epilogue_flops;
      }
      break;
    }
    case F::kConv: {
      // Conv: each output element is a dot product of |W| / C_out; ConvTranspose: each input
      // element scatters |W| / C_in; the filter gradient: each of its elements sums over the
      // |dY| / C_out output positions.
      const bool fused = kern.op() == "a8.FusedConv";
      if ((kern.op() == "Conv" || fused) && w != nullptr && w->type().dims_size() > 0)
        c.flops = 2 * y_elements * Elements(*w) / std::max<double>(w->type().dims(0), 1);
      else if (kern.op() == "ConvTranspose" && x != nullptr && w != nullptr &&
               w->type().dims_size() > 0)
        c.flops = 2 * Elements(*x) * Elements(*w) / std::max<double>(w->type().dims(0), 1);
      else if (x != nullptr && y != nullptr && y->type().dims_size() > 0)  // (dY, X) -> dW
        c.flops = 2 * y_elements * Elements(*x) / std::max<double>(y->type().dims(0), 1);
      // The unrolled (im2col) matrix the product reads counts as elements touched: FLOPs / 2
      // over the channels of the other operand.
      {
        const plan::Buffer* filter = kern.op() == "a8.ConvGradFilter" ? y : w;
        if (filter != nullptr && filter->type().dims_size() > 0)
          c.elements += c.flops / (2 * std::max<double>(filter->type().dims(0), 1));
      }
      if (fused) {  // + Z and Relu: one operation each per output element
        const plan::Attribute* act = FindPlanAttr(kern, "activation");
        const bool relu = act != nullptr && act->s() == "relu";
        const bool z = kern.inputs_size() > 3 && kern.inputs(3) >= 0;
        c.epilogue_flops = ((relu ? 1 : 0) + (z ? 1 : 0)) * y_elements;
        c.epilogue_family = F::kElementwise;
        c.flops += c.epilogue_flops;
      }
      break;
    }
    case F::kElementwise:
    case F::kCast:
      c.flops = out_elements;
      break;
    case F::kTranscendental:
      c.flops = TranscendentalFlopsPerElement(kern.op()) * out_elements;
      break;
    case F::kFused:
      c.flops = y_elements * FusedFlopsPerElement(kern);
      break;
    case F::kPool:
      c.flops = std::max(in_elements, out_elements);
      break;
    case F::kReduction:
      c.flops = in_elements;
      break;
    case F::kNormalization:
      c.flops = (kern.op().rfind("Grad") != std::string::npos ? 12 : 8) * max_in;
      break;
    case F::kSoftmaxLoss:
      c.flops = 14 * max_in;
      break;
    case F::kOptimizer:
      c.flops = OptimizerFlopsPerElement(kern.op()) * max_in;
      break;
    case F::kMovement:
      c.flops = 0;
      break;
    case F::kView: {
      c.flops = 0;
      // A view whose output shares its input's bytes moves nothing.
      const plan::Buffer* in = x;
      if (in != nullptr && y != nullptr &&
          (y->alias_of() == in->id() ||
           (y->region() == in->region() && y->offset() == in->offset())))
        c.bytes = 0;
      break;
    }
    case F::kCollective:
      c.flops = 0;
      break;
  }
  return c;
}

}  // namespace a8

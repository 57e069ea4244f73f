#include "runtime/core/numerics.h"

#include <cmath>
#include <cstring>

#include "compiler/plan/plan_file.h"
#include "kernels/common/float16.h"
#include "kernels/common/fused_elementwise.h"

namespace a8 {
namespace {

template <typename T>
std::optional<NonFinite> FirstNonFinite(const uint8_t* data, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, data + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    if (!std::isfinite(v)) return NonFinite{i, static_cast<double>(v)};
  }
  return std::nullopt;
}

// f16 and bf16: a non-finite value has every exponent bit set (`exp_mask`).
std::optional<NonFinite> FirstNonFinite16(const uint8_t* data, int64_t count, uint16_t exp_mask,
                                          float (*to_float)(uint16_t)) {
  for (int64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, data + 2 * i, sizeof(bits));
    if ((bits & exp_mask) == exp_mask) return NonFinite{i, static_cast<double>(to_float(bits))};
  }
  return std::nullopt;
}

// `v` as the output dtype would store it.
double RoundTo(DType dtype, double v) {
  switch (dtype) {
    case DType::kF16:
      return HalfBitsToFloat(FloatToHalfBits(static_cast<float>(v)));
    case DType::kBF16:
      return BFloat16BitsToFloat(FloatToBFloat16Bits(static_cast<float>(v)));
    case DType::kF32:
      return static_cast<float>(v);
    default:
      return v;
  }
}

bool EndsWith(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

StatusOr<std::string> BlameFusedElementwise(const plan::Plan& plan, const plan::Kernel& kern,
                                            int64_t index, const ReadBufferF64& read) {
  const std::string fallback = kern.onnx_nodes_size() > 0 ? kern.onnx_nodes(0) : kern.node();
  const plan::Attribute* code_attr = FindPlanAttr(kern, "program");
  if (code_attr == nullptr || !code_attr->has_ints() || kern.outputs_size() < 1) return fallback;
  std::vector<int64_t> code(code_attr->ints().values().begin(), code_attr->ints().values().end());
  std::vector<float> consts;
  if (const plan::Attribute* c = FindPlanAttr(kern, "constants"); c != nullptr && c->has_floats())
    consts.assign(c->floats().values().begin(), c->floats().values().end());
  FusedProgram p;
  if (!DecodeFusedProgram(code.data(), static_cast<int64_t>(code.size()), consts.data(),
                          static_cast<int64_t>(consts.size()), kern.inputs_size(), &p))
    return fallback;
  const plan::Buffer& out = plan.buffers(kern.outputs(0));
  const DType out_dtype = static_cast<DType>(out.type().dtype());
  const bool wide = out_dtype == DType::kF64;
  double in_vals[kFusedMaxInputs];
  float in_floats[kFusedMaxInputs];
  for (int j = 0; j < kern.inputs_size(); ++j) {
    A8_ASSIGN_OR_RETURN(std::vector<double> v, read(kern.inputs(j)));
    if (v.empty()) return fallback;
    in_vals[j] = v.size() == 1 ? v[0] : v[static_cast<size_t>(index) % v.size()];
    if (!std::isfinite(in_vals[j])) return fallback;  // not this kernel's doing
    in_floats[j] = static_cast<float>(in_vals[j]);
  }
  int first_member_instr = 0;
  while (first_member_instr < p.num_instrs && p.code[first_member_instr][0] == kFusedConst)
    ++first_member_instr;
  // The members that have an instruction, in order.
  std::vector<std::string> members(kern.onnx_nodes().begin(), kern.onnx_nodes().end());
  const int instrs = p.num_instrs - first_member_instr;
  if (static_cast<int>(members.size()) > instrs) {
    std::erase_if(members,
                  [](const std::string& m) { return EndsWith(m, ".f32") || EndsWith(m, ".f64"); });
  }
  if (static_cast<int>(members.size()) != instrs) return fallback;
  for (int t = first_member_instr; t < p.num_instrs; ++t) {
    FusedProgram prefix = p;
    prefix.num_instrs = t + 1;
    const double v = wide ? EvalFused<double>(prefix, in_vals)
                          : static_cast<double>(EvalFused<float>(prefix, in_floats));
    if (!std::isfinite(RoundTo(out_dtype, v))) return members[t - first_member_instr];
  }
  return fallback;
}

// a8.FusedMatMul (forward epilogues): the GEMM's accumulator of that element, then the bias
// added to it, each rounded to the output type; the activation (Relu, Gelu) makes no Inf of its
// own from a finite value.
StatusOr<std::string> BlameFusedMatMul(const plan::Plan& plan, const plan::Kernel& kern,
                                       int64_t index, const ReadBufferF64& read) {
  const std::string fallback = kern.onnx_nodes_size() > 0 ? kern.onnx_nodes(0) : kern.node();
  const plan::Attribute* epilogue_attr = FindPlanAttr(kern, "epilogue");
  bool bgrad = false;
  const int32_t epilogue =
      epilogue_attr != nullptr ? ParseFusedEpilogue(epilogue_attr->s().c_str(), &bgrad) : -1;
  if (epilogue < 0 || EpilogueIsBackward(epilogue) || kern.inputs_size() < 2 ||
      kern.outputs_size() < 1 || kern.onnx_nodes_size() < 1)
    return fallback;
  const plan::Attribute* trans_attr = FindPlanAttr(kern, "trans_b");
  const bool trans_b = trans_attr != nullptr && trans_attr->i() != 0;
  const plan::Buffer& out = plan.buffers(kern.outputs(0));
  const plan::Buffer& bbuf = plan.buffers(kern.inputs(1));
  if (out.type().dims_size() < 1 || bbuf.type().dims_size() != 2) return fallback;
  const int64_t n = out.type().dims(out.type().dims_size() - 1);
  const int64_t k = trans_b ? bbuf.type().dims(1) : bbuf.type().dims(0);
  if (n <= 0 || k <= 0) return fallback;
  A8_ASSIGN_OR_RETURN(std::vector<double> a, read(kern.inputs(0)));
  A8_ASSIGN_OR_RETURN(std::vector<double> b, read(kern.inputs(1)));
  const int64_t row = index / n, col = index % n;
  if (static_cast<int64_t>(a.size()) < (row + 1) * k || static_cast<int64_t>(b.size()) < n * k)
    return fallback;
  const DType out_dtype = static_cast<DType>(out.type().dtype());
  float acc = 0;  // the kernel accumulates in float
  for (int64_t i = 0; i < k; ++i) {
    const double bv =
        trans_b ? b[static_cast<size_t>(col * k + i)] : b[static_cast<size_t>(i * n + col)];
    acc += static_cast<float>(a[static_cast<size_t>(row * k + i)]) * static_cast<float>(bv);
  }
  if (!std::isfinite(RoundTo(out_dtype, acc))) return fallback;  // the GEMM
  if (EpilogueHasBias(epilogue) && kern.onnx_nodes_size() >= 2 && kern.inputs_size() >= 3 &&
      kern.inputs(2) >= 0) {
    A8_ASSIGN_OR_RETURN(std::vector<double> bias, read(kern.inputs(2)));
    if (static_cast<int64_t>(bias.size()) == n &&
        !std::isfinite(RoundTo(out_dtype, acc + static_cast<float>(bias[col]))))
      return kern.onnx_nodes(1);  // the Add of the bias
  }
  return kern.onnx_nodes(kern.onnx_nodes_size() - 1);
}

// a8.FusedConv with a residual Z: the convolution of that element recomputed (float accumulation,
// then the bias), rounded to the output type: non-finite blames the Conv (its first node); else
// that value plus Z's element, rounded: the Add (the node before the Relu, or the last). The Relu
// makes no Inf of its own from a finite value.
StatusOr<std::string> BlameFusedConv(const plan::Plan& plan, const plan::Kernel& kern,
                                     int64_t index, const ReadBufferF64& read) {
  const std::string fallback = kern.onnx_nodes_size() > 0 ? kern.onnx_nodes(0) : kern.node();
  const plan::Attribute* act = FindPlanAttr(kern, "activation");
  const bool relu = act != nullptr && act->s() == "relu";
  const int add_at = kern.onnx_nodes_size() - (relu ? 2 : 1);
  if (kern.inputs_size() < 4 || kern.inputs(3) < 0 || kern.outputs_size() < 1 || add_at < 1)
    return fallback;
  auto dims = [&](int id) {
    const auto& d = plan.buffers(id).type().dims();
    return std::vector<int64_t>(d.begin(), d.end());
  };
  const std::vector<int64_t> xd = dims(kern.inputs(0)), wd = dims(kern.inputs(1)),
                             yd = dims(kern.outputs(0));
  const size_t r = xd.size() < 3 ? 0 : xd.size() - 2;
  if (r == 0 || wd.size() != r + 2 || yd.size() != r + 2) return fallback;
  auto ints = [&](const char* name, int64_t dflt, size_t n) {
    const plan::Attribute* a = FindPlanAttr(kern, name);
    std::vector<int64_t> v;
    if (a != nullptr) v.assign(a->ints().values().begin(), a->ints().values().end());
    if (v.size() != n) v.assign(n, dflt);
    return v;
  };
  const std::vector<int64_t> pads = ints("pads", 0, 2 * r), strides = ints("strides", 1, r),
                             dilations = ints("dilations", 1, r);
  const plan::Attribute* group_attr = FindPlanAttr(kern, "group");
  const int64_t group = group_attr != nullptr && group_attr->i() > 0 ? group_attr->i() : 1;
  const int64_t cg = wd[1], mg = yd[1] / group;
  if (mg <= 0 || cg * group != xd[1]) return fallback;
  // The element's batch index, output channel and output position.
  std::vector<int64_t> pos(r);
  int64_t rest = index;
  for (size_t d = r; d-- > 0;) {
    pos[d] = rest % yd[d + 2];
    rest /= yd[d + 2];
  }
  const int64_t m = rest % yd[1], n = rest / yd[1];
  A8_ASSIGN_OR_RETURN(std::vector<double> x, read(kern.inputs(0)));
  A8_ASSIGN_OR_RETURN(std::vector<double> w, read(kern.inputs(1)));
  int64_t taps = 1, plane = 1;
  for (size_t d = 0; d < r; ++d) taps *= wd[d + 2], plane *= xd[d + 2];
  float acc = 0;  // the kernels accumulate in float
  std::vector<int64_t> kpos(r);
  for (int64_t c = 0; c < cg; ++c) {
    const int64_t channel = (m / mg) * cg + c;
    for (int64_t t = 0; t < taps; ++t) {
      int64_t at = 0, k = t;
      bool inside = true;
      for (size_t d = r; d-- > 0;) kpos[d] = k % wd[d + 2], k /= wd[d + 2];
      for (size_t d = 0; d < r && inside; ++d) {
        const int64_t i = pos[d] * strides[d] - pads[d] + kpos[d] * dilations[d];
        inside = i >= 0 && i < xd[d + 2];
        at = at * xd[d + 2] + i;
      }
      if (!inside) continue;
      acc += static_cast<float>(x[static_cast<size_t>((n * xd[1] + channel) * plane + at)]) *
             static_cast<float>(w[static_cast<size_t>((m * cg + c) * taps + t)]);
    }
  }
  if (kern.inputs(2) >= 0) {
    A8_ASSIGN_OR_RETURN(std::vector<double> bias, read(kern.inputs(2)));
    if (m < static_cast<int64_t>(bias.size())) acc += static_cast<float>(bias[m]);
  }
  const DType out_dtype = static_cast<DType>(plan.buffers(kern.outputs(0)).type().dtype());
  const double conv = RoundTo(out_dtype, acc);
  if (!std::isfinite(conv)) return fallback;  // the Conv
  A8_ASSIGN_OR_RETURN(std::vector<double> z, read(kern.inputs(3)));
  if (index < static_cast<int64_t>(z.size()) &&
      !std::isfinite(RoundTo(out_dtype, static_cast<float>(conv) + static_cast<float>(z[index]))))
    return kern.onnx_nodes(add_at);  // the Add of the residual
  return kern.onnx_nodes(kern.onnx_nodes_size() - 1);
}

}  // namespace

StatusOr<std::string> BlameOnnxNode(const plan::Plan& plan, const plan::Kernel& kern, int64_t index,
                                    const ReadBufferF64& read) {
  if (kern.op() == "a8.FusedElementwise") return BlameFusedElementwise(plan, kern, index, read);
  if (kern.op() == "a8.FusedMatMul") return BlameFusedMatMul(plan, kern, index, read);
  if (kern.op() == "a8.FusedConv") return BlameFusedConv(plan, kern, index, read);
  return kern.onnx_nodes_size() > 0 ? kern.onnx_nodes(0) : kern.node();
}

std::optional<NonFinite> FindNonFinite(DType dtype, const uint8_t* data, int64_t count) {
  switch (dtype) {
    case DType::kF32:
      return FirstNonFinite<float>(data, count);
    case DType::kF64:
      return FirstNonFinite<double>(data, count);
    case DType::kF16:
      return FirstNonFinite16(data, count, 0x7C00u, &HalfBitsToFloat);
    case DType::kBF16:
      return FirstNonFinite16(data, count, 0x7F80u, &BFloat16BitsToFloat);
    default:
      return std::nullopt;
  }
}

std::string NonFiniteName(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  return std::to_string(value);
}

}  // namespace a8

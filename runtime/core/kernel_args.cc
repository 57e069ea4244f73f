#include "runtime/core/kernel_args.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <type_traits>

#include "compiler/ir/op_table.h"
#include "compiler/plan/plan_file.h"
#include "kernels/common/fused_elementwise.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/optim.h"
#include "kernels/cpu/pool.h"
#include "runtime/core/attr_decode.h"

namespace a8 {

const plan::Attribute* KernelArgs::attr(const std::string& name) const {
  return FindPlanAttr(*kernel_, name);
}

namespace {

// The number attribute `a` holds as a T, from the field of T's kind when it has that one (f for a
// float, i for an integer), else from the other; `dflt` when it is absent or has neither.
template <typename T>
T AttrNumber(const plan::Attribute* a, T dflt) {
  if (a == nullptr) return dflt;
  if (std::is_floating_point_v<T> && a->has_f()) return static_cast<T>(a->f());
  if (a->has_i()) return static_cast<T>(a->i());
  if (a->has_f()) return static_cast<T>(a->f());
  return dflt;
}

std::mutex g_undeclared_mu;
std::set<std::string> g_undeclared;  // "op.attr" of the reads without a table default

}  // namespace

std::string TakeUndeclaredAttributeReads() {
  std::lock_guard<std::mutex> lock(g_undeclared_mu);
  std::string joined;
  for (const std::string& what : g_undeclared) joined += (joined.empty() ? "" : ", ") + what;
  g_undeclared.clear();
  return joined;
}

const Attribute* KernelArgs::TableDefault(const std::string& name) const {
  if (const OpDef* def = FindQualifiedOp(kernel_->op())) {
    for (const AttrSpec& spec : def->attrs) {
      if (spec.name == name && spec.default_value) return &*spec.default_value;
    }
  }
  // A one-argument getter on an attribute the table gives no default: the entry should have
  // tested attr(name) or passed its own default (kernel_args.h).
  std::lock_guard<std::mutex> lock(g_undeclared_mu);
  g_undeclared.insert(kernel_->op() + "." + name);
  return nullptr;
}

int64_t KernelArgs::Int(const std::string& name) const {
  if (const plan::Attribute* a = attr(name)) return AttrNumber<int64_t>(a, 0);
  const Attribute* d = TableDefault(name);
  return d != nullptr && d->kind() == AttrKind::kInt ? d->i() : 0;
}

float KernelArgs::Float(const std::string& name) const {
  if (const plan::Attribute* a = attr(name)) return AttrNumber<float>(a, 0.0f);
  const Attribute* d = TableDefault(name);
  if (d == nullptr) return 0.0f;
  return d->kind() == AttrKind::kFloat ? d->f() : d->kind() == AttrKind::kInt ? d->i() : 0.0f;
}

std::string KernelArgs::Str(const std::string& name) const {
  if (const plan::Attribute* a = attr(name)) return a->has_s() ? a->s() : "";
  const Attribute* d = TableDefault(name);
  return d != nullptr && d->kind() == AttrKind::kString ? d->s() : "";
}

int64_t KernelArgs::Int(const std::string& name, int64_t dflt) const {
  return AttrNumber(attr(name), dflt);
}

float KernelArgs::Float(const std::string& name, float dflt) const {
  return AttrNumber(attr(name), dflt);
}

std::string KernelArgs::Str(const std::string& name, const std::string& dflt) const {
  const plan::Attribute* a = attr(name);
  return a != nullptr && a->has_s() ? a->s() : dflt;
}

std::vector<int64_t> KernelArgs::Ints(const std::string& name) const {
  const plan::Attribute* a = attr(name);
  if (a == nullptr || !a->has_ints()) return {};
  return {a->ints().values().begin(), a->ints().values().end()};
}

const TensorArg* KernelArgs::TensorAttr(const std::string& name) const {
  const plan::Attribute* a = attr(name);
  if (a == nullptr || !a->has_tensor_buffer()) return nullptr;
  int i = 0;
  for (const plan::Attribute& b : kernel_->attrs()) {
    if (&b == a) break;
    if (b.has_tensor_buffer()) ++i;
  }
  return i < static_cast<int>(tensor_attrs_.size()) ? &tensor_attrs_[i] : nullptr;
}

KernelArgs KernelArgs::WithHostInputs() const {
  KernelArgs copy = *this;
  for (TensorArg& t : copy.in_) t.host = t.data;
  return copy;
}

StatusOr<std::vector<int64_t>> KernelArgs::ConstInts(int i) const {
  const TensorArg& t = in(i);
  if (!t.present) return std::vector<int64_t>{};
  std::vector<int64_t> v(static_cast<size_t>(t.count()));
  if (t.dtype == DType::kI64) {
    std::copy_n(reinterpret_cast<const int64_t*>(t.host_data()), v.size(), v.begin());
  } else if (t.dtype == DType::kI32) {
    std::copy_n(reinterpret_cast<const int32_t*>(t.host_data()), v.size(), v.begin());
  } else {
    return InvalidInput("input {}: expected i64 or i32 values, got {}", i, DTypeName(t.dtype));
  }
  return v;
}

Status RequireSameCount(const KernelArgs& a, const TensorArg& t, const TensorArg& like,
                        const char* what) {
  if (t.count() != like.count()) {
    return InvalidInput("{}: {} has {} elements, expected {}", a.kernel().op(), what, t.count(),
                        like.count());
  }
  return Status::Ok();
}

Status RequireSameBytesInOut(const KernelArgs& a) {
  if (a.in(0).bytes() != a.out(0).bytes())
    return InvalidInput("{}: input has {} bytes, output {}", a.kernel().op(), a.in(0).bytes(),
                        a.out(0).bytes());
  return Status::Ok();
}

Status RequireSameCountInOut(const KernelArgs& a) {
  if (a.in(0).count() != a.out(0).count())
    return InvalidInput("{}: input and output element counts differ", a.kernel().op());
  return Status::Ok();
}

Status RequireIndexDType(const TensorArg& idx, const char* op, StatusCode code) {
  if (idx.dtype != DType::kI64 && idx.dtype != DType::kI32)
    return Status(code,
                  fmt::format("{}: indices must be i64 or i32, got {}", op, ElemName(idx.dtype)));
  return Status::Ok();
}

Status RequireScalar(const KernelArgs& a, int i, DType dtype, const char* what) {
  const TensorArg& t = a.in(i);
  if (!t.present || t.dtype != dtype || t.count() != 1) {
    return InvalidInput("{}: input {} ({}) must be a {} scalar", a.kernel().op(), i, what,
                        DTypeName(dtype));
  }
  return Status::Ok();
}

Status CheckRank(const KernelArgs& a, const TensorArg& t, const char* what, size_t min_rank) {
  if (t.dims.size() < min_rank) {
    return InvalidInput("{}: {} has rank {}, needs at least {}", a.kernel().op(), what,
                        t.dims.size(), min_rank);
  }
  return Status::Ok();
}

Dims SpatialDims(const Dims& d) { return d.size() > 2 ? Dims(d.begin() + 2, d.end()) : Dims{}; }

Status CheckOnnxOptimizerOperands(const KernelArgs& a, int groups) {
  const std::string& op = a.kernel().op();
  const int tensors = a.num_inputs() - 2;
  if (tensors < groups || tensors % groups != 0 ||
      a.num_outputs() != (groups - 1) * (tensors / groups)) {
    return InvalidInput("{}: {} inputs and {} outputs do not form R, T and {} groups", op,
                        a.num_inputs(), a.num_outputs(), groups);
  }
  const TensorArg& r = a.in(0);
  if (!r.present || r.count() != 1 || (r.dtype != DType::kF32 && r.dtype != DType::kF64)) {
    return InvalidInput("{}: input R must be an f32 or f64 scalar", op);
  }
  A8_RETURN_IF_ERROR(RequireScalar(a, 1, DType::kI64, "T"));
  // Group member i: X_i, G_i, states_i... and its outputs, all of one dtype and size.
  const int n = tensors / groups;
  for (int i = 0; i < n; ++i) {
    const TensorArg& x0 = a.in(2 + i);
    for (int g = 0; g < groups; ++g) {
      const TensorArg& x = a.in(2 + g * n + i);
      if (!x.present || x.dtype != x0.dtype || x.count() != x0.count())
        return InvalidInput("{}: the tensors of group member {} differ in type", op, i);
    }
    for (int g = 0; g < groups - 1; ++g) {
      const TensorArg& y = a.out(g * n + i);
      if (!y.present || y.dtype != x0.dtype || y.count() != x0.count())
        return InvalidInput("{}: the outputs of group member {} differ in type", op, i);
    }
  }
  return Status::Ok();
}

StatusOr<cpu::TrainControlParams> TrainControlOperands(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(RequireScalar(a, 0, DType::kI64, "step"));
  A8_RETURN_IF_ERROR(RequireScalar(a, 1, DType::kF32, "updates"));
  using P = cpu::TrainControlParams;
  P p;  // its members hold the op's attribute defaults
  DecodeAttrs<P>(a,
                 {A8_ATTR(P, lr), A8_ATTR(P, warmup_steps), A8_ATTR(P, total_steps),
                  A8_ATTR(P, min_lr), A8_ATTR(P, accumulate), A8_ATTR(P, max_grad_norm)},
                 &p);
  const std::string schedule = a.Str("schedule");
  if (schedule != "constant" && schedule != "cosine") {
    return InvalidInput("a8.TrainControl: schedule: unknown value '{}'", schedule);
  }
  p.cosine = schedule == "cosine";
  if (a.has_in(2)) A8_RETURN_IF_ERROR(RequireScalar(a, 2, DType::kF32, "sq_norm"));
  if (a.has_in(3)) A8_RETURN_IF_ERROR(RequireScalar(a, 3, DType::kF32, "found_inf"));
  if (a.out(0).count() != cpu::kCtlSize || a.out(1).count() != 1 || a.out(2).count() != 1) {
    return InvalidInput("a8.TrainControl: outputs must be f32[{}], i64[], f32[]",
                        static_cast<int>(cpu::kCtlSize));
  }
  A8_RETURN_IF_ERROR(cpu::CheckTrainControlParams(p));
  return p;
}

StatusOr<cpu::UpdateScaleParams> UpdateScaleOperands(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(RequireScalar(a, 0, DType::kF32, "scale"));
  A8_RETURN_IF_ERROR(RequireScalar(a, 1, DType::kI32, "tracker"));
  A8_RETURN_IF_ERROR(RequireScalar(a, 2, DType::kF32, "found_inf"));
  A8_RETURN_IF_ERROR(RequireScalar(a, 3, DType::kI64, "step"));
  if (a.num_outputs() != 2 || a.out(0).dtype != DType::kF32 || a.out(0).count() != 1 ||
      a.out(1).dtype != DType::kI32 || a.out(1).count() != 1) {
    return InvalidInput("a8.UpdateScale: outputs must be f32[] and i32[]");
  }
  using P = cpu::UpdateScaleParams;
  P p;  // its members hold the op's attribute defaults
  DecodeAttrs<P>(
      a,
      {A8_ATTR(P, growth_factor), A8_ATTR(P, backoff_factor), A8_ATTR(P, growth_interval),
       A8_ATTR(P, min_scale), A8_ATTR(P, max_scale), A8_ATTR(P, accumulate)},
      &p);
  A8_RETURN_IF_ERROR(cpu::CheckUpdateScaleParams(p));
  return p;
}

namespace {

// The control vector (a8.TrainControl's ctl) of an update, input 2.
Status CheckControl(const KernelArgs& a) {
  const TensorArg& ctl = a.in(2);
  if (!ctl.present || ctl.dtype != DType::kF32 || ctl.count() != cpu::kCtlSize) {
    return InvalidInput("{}: input 2 (ctl) must be f32[{}]", a.kernel().op(),
                        static_cast<int>(cpu::kCtlSize));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<cpu::SgdParams> SgdUpdateOperands(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(CheckControl(a));
  const TensorArg& param = a.in(0);
  A8_RETURN_IF_ERROR(RequireSameCount(a, a.in(1), param, "grad"));
  A8_RETURN_IF_ERROR(RequireSameCount(a, a.out(0), param, "param_next"));
  const bool has_buf = a.has_in(3);
  if (has_buf != a.has_out(1)) {
    return InvalidInput("a8.SgdUpdate: momentum_buf and momentum_buf_next go together");
  }
  if (has_buf) {
    A8_RETURN_IF_ERROR(RequireSameCount(a, a.in(3), param, "momentum_buf"));
    A8_RETURN_IF_ERROR(RequireSameCount(a, a.out(1), param, "momentum_buf_next"));
  }
  using P = cpu::SgdParams;
  P p;  // its members hold the defaults (the op table's, optim_math.h)
  DecodeAttrs<P>(
      a,
      {A8_ATTR(P, momentum), A8_ATTR(P, dampening), A8_ATTR(P, nesterov), A8_ATTR(P, weight_decay)},
      &p);
  if (p.momentum != 0.0f && !has_buf) {
    return InvalidInput("a8.SgdUpdate: momentum {} needs the momentum buffer input and output",
                        p.momentum);
  }
  return p;
}

StatusOr<cpu::AdamParams> AdamUpdateOperands(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(CheckControl(a));
  const TensorArg& param = a.in(0);
  A8_RETURN_IF_ERROR(RequireSameCount(a, a.in(1), param, "grad"));
  A8_RETURN_IF_ERROR(RequireSameCount(a, a.in(3), param, "m"));
  A8_RETURN_IF_ERROR(RequireSameCount(a, a.in(4), param, "v"));
  for (int o = 0; o < 3; ++o) A8_RETURN_IF_ERROR(RequireSameCount(a, a.out(o), param, "output"));
  if (a.has_in(5)) A8_RETURN_IF_ERROR(RequireScalar(a, 5, DType::kF32, "scale"));
  if (a.has_out(3)) {
    const TensorArg& copy = a.out(3);
    A8_RETURN_IF_ERROR(RequireSameCount(a, copy, param, "copy_next"));
    if (param.dtype != DType::kF32 || (copy.dtype != DType::kF16 && copy.dtype != DType::kBF16)) {
      return InvalidInput(
          "a8.AdamUpdate: the working copy copy_next is {} of a {} parameter "
          "(f16 or bf16 of f32 expected)",
          DTypeName(copy.dtype), DTypeName(param.dtype));
    }
  }
  using P = cpu::AdamParams;
  P p;  // its members hold the defaults (kernels/common/train_defaults.h)
  DecodeAttrs<P>(a,
                 {A8_ATTR(P, beta1), A8_ATTR(P, beta2), A8_ATTR(P, eps), A8_ATTR(P, weight_decay),
                  A8_ATTR(P, decoupled)},
                 &p);
  return p;
}

StatusOr<ConvParams> ConvParamsOf(const KernelArgs& a, bool transpose) {
  A8_RETURN_IF_ERROR(CheckRank(a, a.in(0), "input 0", 3));
  A8_RETURN_IF_ERROR(CheckRank(a, a.in(1), "input 1", 3));
  if (a.out(0).dims.size() < 2) return InvalidInput("{}: output rank < 2", a.kernel().op());
  ConvParams p;
  p.dtype = a.in(0).dtype;
  p.batch = a.in(0).dims[0];
  p.in_channels = a.in(0).dims[1];
  p.out_channels = a.out(0).dims[1];
  p.group = a.Int("group");
  p.in_spatial = SpatialDims(a.in(0).dims);
  p.kernel = SpatialDims(a.in(1).dims);
  p.strides = a.Ints("strides");
  p.dilations = a.Ints("dilations");
  p.pads = a.Ints("pads");
  if (transpose) p.output_padding = a.Ints("output_padding");
  return p;
}

StatusOr<FusedConvArgs> FusedConvOperands(const KernelArgs& a) {
  FusedConvArgs f;
  A8_ASSIGN_OR_RETURN(f.conv, ConvParamsOf(a, false));
  const std::string activation = a.Str("activation");
  if (activation != "none" && activation != "relu") {
    return InvalidInput("a8.FusedConv: attribute 'activation' is '{}' (expected none or relu)",
                        activation);
  }
  f.relu = activation == "relu";
  const TensorArg &z = a.in(3), &y = a.out(0);
  if (z.present && (z.count() != y.count() || z.dtype != y.dtype)) {
    return InvalidInput("a8.FusedConv: Z has {} elements of {}, Y {} of {}", z.count(),
                        DTypeName(z.dtype), y.count(), DTypeName(y.dtype));
  }
  return f;
}

StatusOr<FusedMatMulParams> FusedMatMulOperands(const KernelArgs& a) {
  const TensorArg &x = a.in(0), &w = a.in(1), &y = a.out(0);
  FusedMatMulParams f;
  f.dtype = x.dtype;
  const std::string epilogue = a.Str("epilogue", "");
  f.epilogue = ParseFusedEpilogue(epilogue.c_str(), &f.bgrad);
  if (f.epilogue < 0) return InvalidInput("a8.FusedMatMul: unknown epilogue '{}'", epilogue);
  const std::string approx = a.Str("approximate");
  if (approx != "none" && approx != "tanh") {
    return InvalidInput("a8.FusedMatMul: approximate: unknown value '{}'", approx);
  }
  f.tanh_form = approx == "tanh";
  f.trans_b = a.Int("trans_b") != 0;
  if (x.dims.size() < 2 || w.dims.size() != 2 || y.dims.empty()) {
    return InvalidInput("a8.FusedMatMul: A must have rank >= 2, B rank 2");
  }
  f.k = x.dims.back();
  f.m = x.count() / (f.k > 0 ? f.k : 1);
  if (f.k == 0) f.m = y.count() / (y.dims.back() > 0 ? y.dims.back() : 1);
  f.n = f.trans_b ? w.dims[0] : w.dims[1];
  const int64_t wk = f.trans_b ? w.dims[1] : w.dims[0];
  if (wk != f.k || y.count() != f.m * f.n || w.dtype != x.dtype || y.dtype != x.dtype) {
    return InvalidInput("a8.FusedMatMul: operand types do not agree");
  }
  const TensorArg &bias = a.in(2), &aux = a.in(3), &out1 = a.out(1);
  if ((bias.present && (bias.count() != f.n || bias.dtype != x.dtype)) ||
      (aux.present && (aux.count() != y.count() || aux.dtype != x.dtype)) ||
      (out1.present && (out1.count() != (f.bgrad ? f.n : y.count()) || out1.dtype != x.dtype))) {
    return InvalidInput("a8.FusedMatMul: bias, aux or output 1 has the wrong type");
  }
  return f;
}

StatusOr<int> UnscaleCheckFiniteOperands(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(RequireScalar(a, 0, DType::kF32, "scale"));
  const int n = a.num_inputs() - 1;
  if (n < 1 || a.num_outputs() != n + 1) {
    return InvalidInput(
        "a8.UnscaleCheckFinite: {} inputs and {} outputs; expected scale, n "
        "gradients, and n outputs plus found_inf",
        a.num_inputs(), a.num_outputs());
  }
  for (int i = 0; i < n; ++i) {
    const TensorArg& g = a.in(1 + i);
    const TensorArg& o = a.out(i);
    if (!g.present || !o.present || o.dtype != DType::kF32) {
      return InvalidInput("a8.UnscaleCheckFinite: gradient {} needs an input and an f32 output", i);
    }
    A8_RETURN_IF_ERROR(RequireSameCount(a, o, g, "output"));
    if (std::find(kFloatTypes.begin(), kFloatTypes.end(), g.dtype) == kFloatTypes.end()) {
      return Unsupported("a8.UnscaleCheckFinite: gradient {} has dtype {} (a float type expected)",
                         i, DTypeName(g.dtype));
    }
  }
  const TensorArg& found = a.out(n);
  if (!found.present || found.dtype != DType::kF32 || found.count() != 1) {
    return InvalidInput("a8.UnscaleCheckFinite: output found_inf must be an f32 scalar");
  }
  return n;
}

StatusOr<TensorList> FloatsToScalarOperands(const KernelArgs& a) {
  const std::string& op = a.kernel().op();
  TensorList l;
  for (int i = 0; i < a.num_inputs(); ++i) {
    const TensorArg& t = a.in(i);
    if (!t.present) return InvalidInput("{}: input {} is missing", op, i);
    if (!IsFloat(t.dtype)) {
      return Unsupported("{}: input {} has dtype {} (a float type expected)", op, i,
                         DTypeName(t.dtype));
    }
    l.dtypes.push_back(t.dtype);
    l.counts.push_back(t.count());
    l.data.push_back(t.data);
  }
  if (a.num_outputs() != 1 || !a.out(0).present || a.out(0).dtype != DType::kF32 ||
      a.out(0).count() != 1)
    return InvalidInput("{}: the output must be one f32", op);
  return l;
}

StatusOr<ConvParams> ConvGradFilterParams(const KernelArgs& a) {
  const TensorArg& dy = a.in(0);
  const TensorArg& x = a.in(1);
  A8_RETURN_IF_ERROR(CheckRank(a, x, "x", 3));
  ConvParams p;
  p.dtype = x.dtype;
  p.batch = x.dims[0];
  p.in_channels = x.dims[1];
  p.out_channels = dy.dims.size() > 1 ? dy.dims[1] : 0;
  p.group = a.Int("group");
  p.in_spatial = SpatialDims(x.dims);
  p.kernel = a.Ints("kernel_shape");
  p.strides = a.Ints("strides");
  p.dilations = a.Ints("dilations");
  p.pads = a.Ints("pads");
  A8_ASSIGN_OR_RETURN(Dims out, ConvOutputDims(p, false));
  if (SpatialDims(dy.dims) != out || dy.dims[0] != p.batch) {
    return InvalidInput("{}: dY does not have the convolution's output dims", a.kernel().op());
  }
  return p;
}

Status ExpandPadAxes(int64_t rank, const std::vector<int64_t>& axes, std::vector<int64_t>* pads) {
  if (axes.empty()) return Status::Ok();
  if (pads->size() != 2 * axes.size())
    return InvalidInput("Pad: pads has {} values for {} axes", pads->size(), axes.size());
  std::vector<int64_t> full(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(axes[i], rank, "Pad"));
    full[ax] = (*pads)[i];
    full[ax + rank] = (*pads)[i + axes.size()];
  }
  *pads = std::move(full);
  return Status::Ok();
}

PoolParams PoolParamsFromKernel(const KernelArgs& a, const Dims& x_dims, DType dtype) {
  PoolParams p;
  p.dtype = dtype;
  p.batch = x_dims[0];
  p.channels = x_dims[1];
  p.in_spatial = SpatialDims(x_dims);
  p.kernel = a.Ints("kernel_shape");
  p.strides = a.Ints("strides");
  p.dilations = a.Ints("dilations");
  p.pads = a.Ints("pads");
  p.ceil_mode = a.Int("ceil_mode") != 0;
  p.count_include_pad = a.Int("count_include_pad", 0) != 0;
  p.column_major_indices = a.Int("storage_order", 0) != 0;
  return p;
}

TensorArg BindBuffer(const plan::Plan& plan, const std::vector<uint8_t*>& buffers, int id) {
  TensorArg t;
  if (id < 0 || id >= plan.buffers_size()) return t;
  const plan::Buffer& b = plan.buffers(id);
  t.present = true;
  t.dtype = static_cast<DType>(b.type().dtype());
  t.dims.assign(b.type().dims().begin(), b.type().dims().end());
  t.data = id < static_cast<int>(buffers.size()) ? buffers[id] : nullptr;
  return t;
}

std::string DTypeList(const std::vector<DType>& types) {
  std::string s;
  for (DType t : types) {
    if (!s.empty()) s += ",";
    s += DTypeName(t);
  }
  return s;
}

StatusOr<LossParams> LossParamsFromKernel(const KernelArgs& a, const Dims& scores_dims,
                                          int labels_input) {
  if (scores_dims.size() < 2) {
    return InvalidInput("{}: scores have rank {}, need at least 2", a.kernel().op(),
                        scores_dims.size());
  }
  LossParams p;
  p.dtype = a.in(0).dtype;
  p.label_dtype = a.in(labels_input).dtype;
  p.batch = scores_dims[0];
  p.classes = scores_dims[1];
  p.extra = NumElements(Dims(scores_dims.begin() + 2, scores_dims.end()));
  const std::string red = a.Str("reduction");
  if (red == "none") {
    p.reduction = LossReduction::kNone;
  } else if (red == "sum") {
    p.reduction = LossReduction::kSum;
  } else if (red == "mean") {
    p.reduction = LossReduction::kMean;
  } else {
    return InvalidInput("{}: reduction: unknown value '{}'", a.kernel().op(), red);
  }
  if (a.attr("ignore_index") != nullptr) {
    p.has_ignore_index = true;
    p.ignore_index = a.Int("ignore_index", 0);
  }
  return p;
}

StatusOr<Dims> ConvOutputDims(const ConvParams& p, bool transpose) {
  return cpu::ConvOutputSpatial(p, transpose);
}

StatusOr<Dims> PoolOutputDims(const PoolParams& p) { return cpu::PoolOutputSpatial(p); }

bool HostFloat(const TensorArg& t, const uint8_t* bytes, float* v) {
  if (!t.present || bytes == nullptr || t.count() < 1) return false;
  return cpu::Cast(t.dtype, DType::kF32, 1, bytes, v).ok();
}

}  // namespace a8

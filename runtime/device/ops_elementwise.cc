// Device registry entries of the elementwise family (kernels/device/elementwise.h): the unary
// ops, activation gradients, binary ops and Max/Min/Sum/Mean (their rows:
// runtime/core/elementwise_entries.h), Where, Clip, Cast, CastLike, Dropout, a8.DropoutGrad (the
// CPU backend's too) and a8.FusedElementwise. Each reads its attributes and dims as the CPU entry
// does (runtime/cpu/ops_elementwise.cc, ops_grad_math.cc, ops_fused.cc), with the same error
// messages; broadcasting is planned by the CPU's BroadcastPlan, whose coalesced dims and strides
// become the kernels' NaryShape.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/kernel_types.h"
#include "kernels/device/elementwise.h"
#include "runtime/core/fused_program_attrs.h"
#include "runtime/core/elementwise_entries.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

// The kernels' view of broadcasting `inputs` to `out_dims`; the CPU's errors for shapes that do
// not broadcast.
StatusOr<NaryShape> ShapeOf(const std::vector<Dims>& inputs, const Dims& out_dims, const char* op) {
  A8_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(inputs, out_dims, op));
  if (plan.dims.size() > static_cast<size_t>(kElemMaxRank) ||
      inputs.size() > static_cast<size_t>(kMaxNaryOperands)) {
    return Unsupported("{}: the CUDA kernel broadcasts at most {} operands of rank {}", op,
                       kMaxNaryOperands, kElemMaxRank);
  }
  NaryShape s;
  s.rank = static_cast<int>(plan.dims.size());
  s.num_operands = static_cast<int>(inputs.size());
  for (int d = 0; d < s.rank; ++d) {
    s.dims[d] = plan.dims[d];
    for (int k = 0; k < s.num_operands; ++k) s.strides[k][d] = plan.strides[k][d];
  }
  return s;
}

Status CheckOutputCount(const char* op, const TensorArg& y, const Dims& dims) {
  if (y.count() != NumElements(dims)) {
    return InvalidInput("{}: the output has {} elements, the broadcast {}", op, y.count(),
                        NumElements(dims));
  }
  return Status::Ok();
}

template <DevUnaryOp kOp>
Status RunUnary(const KernelArgs& a, DevCtx& ctx) {
  const std::string& name = a.kernel().op();
  A8_ASSIGN_OR_RETURN(DevUnaryOp op, ResolveUnaryVariant(a, kOp));
  if (a.in(0).count() != a.out(0).count())
    return InvalidInput("{}: input and output element counts differ", name);
  UnaryParams p;
  p.op = op;
  p.attrs = DecodeUnaryAttrs(a, name);
  p.dtype = a.in(0).dtype;
  p.n = a.out(0).count();
  p.x = a.in(0).data;
  p.y = a.out(0).data;
  return FromDev(Unary(ctx, p));
}

template <DevBinaryOp kOp>
Status RunBinary(const KernelArgs& a, DevCtx& ctx) {
  BinaryParams p;
  p.op = kOp;
  if (kOp == DevBinaryOp::kMod && a.Int("fmod") != 0) p.op = DevBinaryOp::kFMod;
  if (kOp == DevBinaryOp::kShiftLeft && a.Str("direction", "") == "RIGHT") {
    p.op = DevBinaryOp::kShiftRight;
  }
  const char* name = BinaryKindName(p.op);
  const TensorArg &x = a.in(0), &w = a.in(1), &y = a.out(0);
  A8_ASSIGN_OR_RETURN(Dims out_dims, BroadcastDims({x.dims, w.dims}, name));
  A8_ASSIGN_OR_RETURN(p.shape, ShapeOf({x.dims, w.dims}, out_dims, name));
  if (x.dtype != w.dtype && p.op != DevBinaryOp::kPow) {
    return InvalidInput("{}: operand dtypes {} and {} differ", name, ElemName(x.dtype),
                        ElemName(w.dtype));
  }
  if (p.op == DevBinaryOp::kPow && w.dtype == DType::kBool) {
    return Unsupported("{}: dtype {} is not supported by the CUDA kernel", name, ElemName(w.dtype));
  }
  A8_RETURN_IF_ERROR(CheckOutputCount(name, y, out_dims));
  p.a_dtype = x.dtype;
  p.b_dtype = w.dtype;
  p.n = y.count();
  p.a = x.data;
  p.b = w.data;
  p.y = y.data;
  return FromDev(Binary(ctx, p));
}

// Max/Min/Sum/Mean of N inputs, at most kMaxNaryOperands a launch: later launches fold the
// output so far with the next inputs (the CPU rounds after every op too, so this is exact).
template <DevBinaryOp kOp, bool kMean>
Status RunVariadic(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& y = a.out(0);
  const std::string& name = a.kernel().op();
  const int num = a.num_inputs();
  for (int i = 0; i < num; ++i) {
    if (a.in(i).dtype != y.dtype) {
      return InvalidInput("{}: operand dtypes {} and {} differ", name, ElemName(y.dtype),
                          ElemName(a.in(i).dtype));
    }
  }
  int next = 0;
  while (next < num || next == 0) {
    FoldParams p;
    p.op = kOp;
    p.dtype = y.dtype;
    p.n = y.count();
    p.y = y.data;
    std::vector<Dims> dims;
    std::vector<const void*> ptrs;
    if (next > 0) {
      dims.push_back(y.dims);
      ptrs.push_back(y.data);
    }
    while (next < num && static_cast<int>(dims.size()) < kMaxNaryOperands) {
      dims.push_back(a.in(next).dims);
      ptrs.push_back(a.in(next).data);
      ++next;
    }
    if (dims.empty()) return InvalidInput("{}: no inputs", name);
    A8_ASSIGN_OR_RETURN(p.shape, ShapeOf(dims, y.dims, name.c_str()));
    std::copy(ptrs.begin(), ptrs.end(), p.in);
    if (kMean && next == num && num > 1) p.mean_count = num;
    A8_RETURN_IF_ERROR(FromDev(Fold(ctx, p)));
  }
  return Status::Ok();
}

Status RunWhere(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &c = a.in(0), &x = a.in(1), &w = a.in(2), &y = a.out(0);
  A8_ASSIGN_OR_RETURN(Dims out_dims, BroadcastDims({c.dims, x.dims, w.dims}, "Where"));
  WhereParams p;
  A8_ASSIGN_OR_RETURN(p.shape, ShapeOf({c.dims, x.dims, w.dims}, out_dims, "Where"));
  A8_RETURN_IF_ERROR(CheckOutputCount("Where", y, out_dims));
  p.dtype = x.dtype;
  p.n = y.count();
  p.cond = reinterpret_cast<const bool*>(c.data);
  p.x = x.data;
  p.y = w.data;
  p.out = y.data;
  return FromDev(Where(ctx, p));
}

Status RunClip(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(0);
  ClipParams p;
  p.dtype = x.dtype;
  p.n = x.count();
  p.x = x.data;
  p.y = a.out(0).data;
  p.lo = a.has_in(1) ? a.in(1).data : nullptr;
  p.hi = a.has_in(2) ? a.in(2).data : nullptr;
  // Clip-6 attributes, should a plan carry them (f32 only).
  if (p.lo == nullptr && a.attr("min") != nullptr && x.dtype == DType::kF32) {
    p.has_lo_value = true;
    p.lo_value = a.Float("min", 0.0f);
  }
  if (p.hi == nullptr && a.attr("max") != nullptr && x.dtype == DType::kF32) {
    p.has_hi_value = true;
    p.hi_value = a.Float("max", 0.0f);
  }
  return FromDev(Clip(ctx, p));
}

Status RunCast(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(RequireSameCountInOut(a));
  CastParams p{a.in(0).dtype, a.out(0).dtype, a.out(0).count(), a.in(0).data, a.out(0).data};
  return FromDev(Cast(ctx, p));
}

// BitCast: the bytes as a Cast that copies them (BitCastAsCast).
Status RunBitCast(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(RequireSameBytesInOut(a));
  const auto [from, to] = BitCastAsCast(a.in(0).dtype, a.out(0).dtype);
  CastParams p{from, to, a.out(0).count(), a.in(0).data, a.out(0).data};
  return FromDev(Cast(ctx, p));
}

// FNV-1a of the node name: each Dropout of a plan draws its own stream (the CPU's
// DropoutStreamKey; the kernel applies its finalizer to seed ^ hash).
uint64_t NodeHash(const std::string& node) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : node) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// The ratio (input `i`) and training (input `i + 1`) operands that Dropout and a8.DropoutGrad
// share, both read by the kernel; a ratio the host can read (HostBytes: a CONSTANT, or any operand
// in the emulation and on the CPU backend) is checked here.
template <typename Params>
Status SetDropoutRatio(const KernelArgs& a, int i, Params* p) {
  float ratio = 0.5f;
  if (HostFloat(a.in(i), HostBytes(a.in(i)), &ratio) && !(ratio >= 0.0f && ratio < 1.0f))
    return InvalidInput("{}: ratio {} is not in [0, 1)", a.kernel().op(), ratio);
  if (a.has_in(i)) {
    p->ratio = a.in(i).data;
    p->ratio_dtype = a.in(i).dtype;
  }
  p->training = a.has_in(i + 1) ? reinterpret_cast<const bool*>(a.in(i + 1).data) : nullptr;
  return Status::Ok();
}

Status RunDropout(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(0);
  DropoutParams p;
  A8_RETURN_IF_ERROR(SetDropoutRatio(a, 1, &p));
  if (a.out(0).count() != x.count() || (a.has_out(1) && a.out(1).count() != x.count()))
    return InvalidInput("Dropout: outputs and input element counts differ");
  p.dtype = x.dtype;
  p.n = x.count();
  p.x = x.data;
  p.y = a.out(0).data;
  p.mask = a.has_out(1) ? reinterpret_cast<bool*>(a.out(1).data) : nullptr;
  p.fixed_seed = a.attr("seed") != nullptr;
  p.seed = static_cast<uint64_t>(a.Int("seed", 0));
  p.node_hash = NodeHash(a.kernel().node());
  return FromDev(Dropout(ctx, p));
}

Status RunDropoutGrad(const KernelArgs& a, DevCtx& ctx) {
  DropoutGradParams p;
  A8_RETURN_IF_ERROR(SetDropoutRatio(a, 2, &p));
  p.dtype = a.in(0).dtype;
  p.n = a.in(0).count();
  p.dy = a.in(0).data;
  p.mask = reinterpret_cast<const bool*>(a.in(1).data);
  p.dx = a.out(0).data;
  return FromDev(DropoutGrad(ctx, p));
}

template <DevActGradOp kOp>
Status RunActivationGrad(const KernelArgs& a, DevCtx& ctx) {
  const std::string& name = a.kernel().op();
  ActGradParams p;
  A8_ASSIGN_OR_RETURN(p.op, ResolveUnaryVariant(a, kOp));
  p.attrs = DecodeUnaryAttrs(a, ForwardOpOf(name));
  const TensorArg &dy = a.in(0), &z = a.in(1), &dx = a.out(0);
  if (dy.count() != dx.count() || z.count() != dx.count() || dy.dtype != z.dtype ||
      dy.dtype != dx.dtype) {
    return InvalidInput("{}: dy, the saved operand and dx must have the same type", name);
  }
  p.dtype = dy.dtype;
  p.n = dx.count();
  p.dy = dy.data;
  p.z = z.data;
  p.dx = dx.data;
  return FromDev(ActivationGrad(ctx, p));
}

Status RunFusedElementwise(const KernelArgs& a, DevCtx& ctx) {
  FusedElementwiseParams p;
  A8_ASSIGN_OR_RETURN(p.program, FusedProgramOf(a));
  const TensorArg& y = a.out(0);
  for (int j = 0; j < a.num_inputs(); ++j) {
    const TensorArg& x = a.in(j);
    if (x.count() != 1 && x.count() != y.count()) {
      return InvalidInput("a8.FusedElementwise: input {} has {} elements, expected 1 or {}", j,
                          x.count(), y.count());
    }
    p.in[j] = x.data;
    p.scalar[j] = x.count() == 1;
  }
  p.in_dtype = a.in(0).dtype;
  p.out_dtype = y.dtype;
  p.n = y.count();
  p.y = y.data;
  return FromDev(FusedElementwise(ctx, p));
}

// The entry of a BinaryEntries() row: RunBinary<kind>, or RunVariadic for the N-input ops.
template <size_t... I>
std::array<DevKernelFn, sizeof...(I)> BinaryFns(std::index_sequence<I...>) {
  return {RunBinary<static_cast<DevBinaryOp>(I)>...};
}
DevKernelFn BinaryEntryFn(const BinaryEntry& b) {
  using B = DevBinaryOp;
  static const auto kFns =
      BinaryFns(std::make_index_sequence<static_cast<size_t>(B::kShiftRight) + 1>());
  if (!b.variadic) return kFns[static_cast<size_t>(b.kind)];
  if (b.kind == B::kMax) return RunVariadic<B::kMax, false>;
  if (b.kind == B::kMin) return RunVariadic<B::kMin, false>;
  return b.mean ? RunVariadic<B::kAdd, true> : RunVariadic<B::kAdd, false>;
}

}  // namespace

std::vector<DevKernelEntry> DeviceElementwiseOps() {
  // The unary ops of kernels/common/unary_math.h, with the CPU entries' dtypes.
  static const std::vector<DevKernelFn> kUnaryFns = {
#define A8_X(Name, Types, Cost, Fused) RunUnary<DevUnaryOp::k##Name>,
      A8_UNARY_OPS(A8_X)
#undef A8_X
  };
  std::vector<DevKernelEntry> r = {
      {"Where", kAllTypes, 1, RunWhere, "condition: bool"},
      {"Clip", kNumericTypes, 0, RunClip, "min/max: optional scalars, read on device"},
      {"Cast", kAllTypes, 0, RunCast, "to: any dtype"},
      {"CastLike", kAllTypes, 0, RunCast, "to: any dtype"},
      {"BitCast", kAllTypes, 0, RunBitCast, "to: a dtype of the same width"},
      {"Dropout", kFloatTypes, 0, RunDropout,
       "ratio: float scalar, training_mode: bool; mask: bool; Philox as the CPU"},
      {"a8.DropoutGrad", kFloatTypes, 0, RunDropoutGrad, "mask: bool"},
      {"a8.FusedElementwise", kFloatTypes, 0, RunFusedElementwise, "output: any float type"},
  };
  for (const BinaryEntry& b : BinaryEntries())
    r.push_back({b.op, *b.types, 0, BinaryEntryFn(b), b.note});
  for (const UnaryEntry& u : UnaryEntries()) {
    const bool polynomial_on_cpu = u.kind == DevUnaryOp::kErf || u.kind == DevUnaryOp::kGelu;
    r.push_back({u.op, *u.types, 0, kUnaryFns[static_cast<int>(u.kind)],
                 polynomial_on_cpu ? "library erff/erfcf (CPU: polynomial)" : ""});
  }

  static const std::vector<DevKernelFn> kActGradFns = {
#define A8_X(Name, Reads, Cost, Fused) RunActivationGrad<DevActGradOp::k##Name>,
      A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
  };
  for (const ActGradEntry& g : ActGradEntries()) {
    r.push_back({g.op, kFloatTypes, 0, kActGradFns[static_cast<int>(g.kind)],
                 "saved operand: same type as dy"});
  }
  return r;
}

}  // namespace a8::A8_DEV_NS

// CPU registry entries: unary and binary elementwise ops and variadic Max/Min/Sum/Mean (the rows
// of runtime/core/elementwise_entries.h), Where, Clip, Cast, CastLike, Dropout.
#include <cstring>

#include "kernels/cpu/kernels.h"
#include "kernels/device/movement_setup.h"
#include "kernels/emu/run_on_host.h"
#include "runtime/core/elementwise_entries.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

using cpu::BinaryOp;
using cpu::UnaryOp;

KernelFn UnaryFn(UnaryOp op) {
  return [op](const KernelArgs& a) -> Status {
    const std::string& name = a.kernel().op();
    A8_ASSIGN_OR_RETURN(UnaryOp u, ResolveUnaryVariant(a, op));
    if (a.in(0).count() != a.out(0).count())
      return InvalidInput("{}: input and output element counts differ", name);
    return cpu::Unary(u, a.in(0).dtype, a.out(0).count(), a.in(0).data, a.out(0).data,
                      DecodeUnaryAttrs(a, name));
  };
}

KernelFn BinaryFn(BinaryOp op) {
  return [op](const KernelArgs& a) -> Status {
    BinaryOp b = op;
    if (a.kernel().op() == "Mod" && a.Int("fmod") != 0) b = BinaryOp::kFMod;
    if (b == BinaryOp::kShiftLeft && a.Str("direction", "") == "RIGHT") b = BinaryOp::kShiftRight;
    return cpu::Binary(b, a.in(0).dtype, a.in(0).dims, a.in(0).data, a.in(1).dtype, a.in(1).dims,
                       a.in(1).data, a.out(0).data);
  };
}

// Max/Min/Sum/Mean of N inputs: folded pairwise into the output through a scratch copy.
KernelFn VariadicFn(BinaryOp op, bool mean) {
  return [op, mean](const KernelArgs& a) -> Status {
    const TensorArg& y = a.out(0);
    DType t = y.dtype;
    if (a.in(0).data != y.data) {  // in place on input 0 (same dims): already there
      A8_RETURN_IF_ERROR(emu::RunOnHost([&](emu::DevCtx& ctx) {
        return emu::movement::Expand(ctx, t, a.in(0).dims, a.in(0).data, y.dims, y.data, y.count());
      }));
    }
    std::vector<uint8_t> acc(y.bytes());
    for (int i = 1; i < a.num_inputs(); ++i) {
      if (!acc.empty()) std::memcpy(acc.data(), y.data, acc.size());
      A8_RETURN_IF_ERROR(cpu::Binary(op, t, y.dims, acc.data(), a.in(i).dtype, a.in(i).dims,
                                     a.in(i).data, y.data));
    }
    if (mean && a.num_inputs() > 1) {
      double n = a.num_inputs();
      uint8_t scalar[8];
      A8_RETURN_IF_ERROR(cpu::Cast(DType::kF64, t, 1, &n, scalar));
      if (!acc.empty()) std::memcpy(acc.data(), y.data, acc.size());
      A8_RETURN_IF_ERROR(cpu::Binary(BinaryOp::kDiv, t, y.dims, acc.data(), t, {}, scalar, y.data));
    }
    return Status::Ok();
  };
}

Status RunWhere(const KernelArgs& a) {
  return cpu::Where(a.in(0).dims, reinterpret_cast<const bool*>(a.in(0).data), a.in(1).dtype,
                    a.in(1).dims, a.in(1).data, a.in(2).dims, a.in(2).data, a.out(0).data);
}

Status RunClip(const KernelArgs& a) {
  const TensorArg& x = a.in(0);
  const void* lo = a.has_in(1) ? a.in(1).data : nullptr;
  const void* hi = a.has_in(2) ? a.in(2).data : nullptr;
  // Clip-6 attributes, should a plan carry them (f32 only).
  float flo = a.Float("min", 0.0f), fhi = a.Float("max", 0.0f);
  if (lo == nullptr && a.attr("min") != nullptr && x.dtype == DType::kF32) lo = &flo;
  if (hi == nullptr && a.attr("max") != nullptr && x.dtype == DType::kF32) hi = &fhi;
  return cpu::Clip(x.dtype, x.count(), x.data, lo, hi, a.out(0).data);
}

Status RunCast(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(RequireSameCountInOut(a));
  return cpu::Cast(a.in(0).dtype, a.out(0).dtype, a.out(0).count(), a.in(0).data, a.out(0).data);
}

// BitCast: the bytes as a Cast that copies them (BitCastAsCast).
Status RunBitCast(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(RequireSameBytesInOut(a));
  const auto [from, to] = BitCastAsCast(a.in(0).dtype, a.out(0).dtype);
  return cpu::Cast(from, to, a.out(0).count(), a.in(0).data, a.out(0).data);
}

// The Philox key of one Dropout kernel: the seed mixed with a hash of the node's name (FNV-1a,
// then SplitMix64's finalizer), so that every Dropout of a plan draws its own stream, the same
// on every backend and every run; the Philox counter is (element index, step).
uint64_t DropoutStreamKey(uint64_t seed, const std::string& node) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : node) h = (h ^ c) * 0x100000001b3ull;
  uint64_t z = seed ^ h;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Status RunDropout(const KernelArgs& a) {
  const TensorArg& x = a.in(0);
  float ratio = 0.5f;
  if (a.has_in(1))
    A8_RETURN_IF_ERROR(cpu::Cast(a.in(1).dtype, DType::kF32, 1, a.in(1).data, &ratio));
  // An evaluation step of a training plan passes through, as inference does.
  bool training = a.has_in(2) && *reinterpret_cast<const bool*>(a.in(2).data) && !a.step.eval;
  uint64_t seed = a.attr("seed") != nullptr ? static_cast<uint64_t>(a.Int("seed", 0)) : a.step.seed;
  seed = DropoutStreamKey(seed, a.kernel().node());
  uint64_t offset = static_cast<uint64_t>(a.step.step);
  bool* mask = a.has_out(1) ? reinterpret_cast<bool*>(a.out(1).data) : nullptr;
  return cpu::Dropout(x.dtype, x.count(), x.data, ratio, training, seed, offset, a.out(0).data,
                      mask);
}

}  // namespace

std::vector<CpuKernelEntry> ElementwiseKernels() {
  std::vector<CpuKernelEntry> r = {
      {"Where", kAllTypes, 1, RunWhere, "condition: bool"},
      {"Clip", kNumericTypes, 0, RunClip, "min/max: optional scalars"},
      {"Cast", kAllTypes, 0, RunCast, "to: any dtype"},
      {"CastLike", kAllTypes, 0, RunCast, "to: any dtype"},
      {"BitCast", kAllTypes, 0, RunBitCast, "to: a dtype of the same width"},
      {"Dropout", kFloatTypes, 0, RunDropout,
       "ratio: float scalar, training_mode: bool; mask: bool"},
  };
  for (const BinaryEntry& b : BinaryEntries()) {
    r.push_back(
        {b.op, *b.types, 0, b.variadic ? VariadicFn(b.kind, b.mean) : BinaryFn(b.kind), b.note});
  }
  for (const UnaryEntry& u : UnaryEntries()) r.push_back({u.op, *u.types, 0, UnaryFn(u.kind), ""});
  return r;
}

}  // namespace a8

// Device entries of RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike and
// Bernoulli (kernels/device/random.h). The CPU backend has no entries of its own for them: it
// runs these through its host launch, so the CPU, the CUDA backend and cuda-emu draw the same
// bits.
#include <cstring>
#include <string>

#include "kernels/common/kernel_types.h"
#include "kernels/common/philox.h"
#include "kernels/device/random.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

using random::RandomKind;

// The parameters every random op shares: output, stream key, and the two distribution
// parameters `a_name`/`b_name` (absent: the op table's ONNX defaults).
random::RandomParams CommonParams(const KernelArgs& a, RandomKind kind, const char* a_name,
                                  const char* b_name) {
  random::RandomParams p;
  p.kind = kind;
  p.dtype = a.out(0).dtype;
  p.n = a.out(0).count();
  p.y = a.out(0).data;
  if (a_name != nullptr) p.a = a.Float(a_name);
  if (b_name != nullptr) p.b = a.Float(b_name);
  p.fixed_seed = a.attr("seed") != nullptr;
  if (p.fixed_seed) {
    // ONNX's seed is a float: its double's bits, so 0.5 and 1.0 give different streams.
    const double seed = a.Float("seed", 0.0f);
    uint64_t bits = 0;
    std::memcpy(&bits, &seed, sizeof bits);
    p.seed_key = SplitMix64Finalize(bits);
  }
  const std::string& node = a.kernel().node();
  p.node_hash = Fnv1a64(node.data(), node.size());
  return p;
}

Status CheckLike(const KernelArgs& a, const char* op) {
  if (a.in(0).count() != a.out(0).count())
    return InvalidInput("{}: input has {} elements, output {}", op, a.in(0).count(),
                        a.out(0).count());
  return Status::Ok();
}

Status RandomUniform(const KernelArgs& a, DevCtx& ctx) {
  random::RandomParams p = CommonParams(a, RandomKind::kUniform, "low", "high");
  if (!(p.a < p.b))
    return InvalidInput("{}: attribute 'low' {} must be below 'high' {}", a.kernel().op(), p.a,
                        p.b);
  if (a.num_inputs() > 0) A8_RETURN_IF_ERROR(CheckLike(a, "RandomUniformLike"));
  return FromDev(random::Random(ctx, p));
}

Status RandomNormal(const KernelArgs& a, DevCtx& ctx) {
  random::RandomParams p = CommonParams(a, RandomKind::kNormal, "mean", "scale");
  if (a.num_inputs() > 0) A8_RETURN_IF_ERROR(CheckLike(a, "RandomNormalLike"));
  return FromDev(random::Random(ctx, p));
}

Status Bernoulli(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(CheckLike(a, "Bernoulli"));
  random::RandomParams p = CommonParams(a, RandomKind::kBernoulli, nullptr, nullptr);
  p.p = a.in(0).data;
  p.p_dtype = a.in(0).dtype;
  return FromDev(random::Random(ctx, p));
}

}  // namespace

std::vector<DevKernelEntry> DeviceRandomOps() {
  const char* kStream = "Philox stream per node and step, or fixed by `seed`";
  return {
      {"RandomUniform", kFloatTypes, -1, RandomUniform, kStream},
      {"RandomUniformLike", kFloatTypes, -1, RandomUniform, kStream},
      {"RandomNormal", kFloatTypes, -1, RandomNormal, kStream},
      {"RandomNormalLike", kFloatTypes, -1, RandomNormal, kStream},
      {"Bernoulli", kFloatTypes, 0, Bernoulli,
       "output: any numeric dtype or bool; 1 where the draw is below p"},
  };
}

}  // namespace a8::A8_DEV_NS

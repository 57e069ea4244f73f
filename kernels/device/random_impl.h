// The random ops' kernel (declared in random.h).
#include "kernels/common/philox.h"
#include "kernels/device/elementwise.h"  // elementwise_math.h's shapes (LoadCast)
#include "kernels/device/elementwise_math.h"
#include "kernels/device/launch.h"
#include "kernels/device/random.h"

namespace a8::A8_DEV_NS::random {
namespace {

template <typename T>
struct RandomFn {
  RandomParams p;
  const StepDev* step;

  A8_HD void operator()(int64_t i) const {
    const uint64_t key = p.fixed_seed ? p.seed_key : SplitMix64Finalize(step->seed ^ p.node_hash);
    const uint64_t offset = p.fixed_seed ? 0 : static_cast<uint64_t>(step->step);
    const uint64_t e = static_cast<uint64_t>(i);
    T* y = static_cast<T*>(p.y);
    switch (p.kind) {
      case RandomKind::kUniform: {
        T v = FromDouble<T>(p.a + (p.b - p.a) * PhiloxUniform53(key, offset, e));
        if (ToDouble(v) >= p.b) v = FromDouble<T>(p.a);
        y[i] = v;
        return;
      }
      case RandomKind::kNormal:
        y[i] = FromDouble<T>(p.a + p.b * PhiloxStandardNormal(key, offset, e));
        return;
      case RandomKind::kBernoulli: {
        const double prob = LoadCast<double>(p.p_dtype, p.p, i);
        y[i] = FromDouble<T>(PhiloxUniform53(key, offset, e) < prob ? 1.0 : 0.0);
        return;
      }
    }
  }
};

}  // namespace

DevStatus Random(DevCtx& ctx, const RandomParams& p) {
  if (!p.fixed_seed && ctx.step == nullptr) return DevError("random op: no step values");
  if (p.kind == RandomKind::kBernoulli) {
    return DispatchAll(p.dtype, [&](auto tag) {
      return ForEach(ctx, p.n, RandomFn<decltype(tag)>{p, ctx.step}, 64);
    });
  }
  return DispatchFloat(p.dtype, [&](auto tag) {
    return ForEach(ctx, p.n, RandomFn<decltype(tag)>{p, ctx.step}, 64);
  });
}

}  // namespace a8::A8_DEV_NS::random

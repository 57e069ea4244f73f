// Seeded synthetic inputs: see synthetic.h.
#include "runtime/core/synthetic.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "runtime/core/trainer.h"

namespace a8 {
namespace {

DType DTypeOf(const plan::Buffer& b) { return static_cast<DType>(b.type().dtype()); }

}  // namespace

int64_t IndexBound(const plan::Plan& plan, int id) {
  if (plan.training() && plan.train().labels() == plan.buffers(id).name() && NumClasses(plan) > 0)
    return NumClasses(plan);
  for (const plan::Kernel& k : plan.kernels()) {
    auto attr_int = [&](const char* n, int64_t d) {
      for (const auto& a : k.attrs())
        if (a.name() == n && a.has_i()) return a.i();
      return d;
    };
    auto dim_of = [&](int buffer, int64_t axis) -> int64_t {
      if (buffer < 0) return 2;
      const auto& t = plan.buffers(buffer).type();
      int64_t r = t.dims_size();
      if (axis < 0) axis += r;
      return axis >= 0 && axis < r ? t.dims(static_cast<int>(axis)) : 2;
    };
    const std::string& op = k.op();
    if ((op == "Gather" || op == "GatherElements") && k.inputs_size() > 1 && k.inputs(1) == id)
      return dim_of(k.inputs(0), attr_int("axis", 0));
    if (op == "OneHot" && k.inputs_size() > 0 && k.inputs(0) == id && k.outputs_size() > 0)
      return dim_of(k.outputs(0), attr_int("axis", -1));
    if ((op == "SoftmaxCrossEntropyLoss" || op == "NegativeLogLikelihoodLoss") &&
        k.inputs_size() > 1 && k.inputs(1) == id)
      return dim_of(k.inputs(0), 1);
  }
  return 2;
}

Status FillSynthetic(const plan::Plan& plan, const plan::Buffer& b, uint64_t seed, int64_t step,
                     uint8_t* dst) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(step), static_cast<uint32_t>(b.id())};
  std::mt19937_64 rng(seq);
  DType t = DTypeOf(b);
  int64_t n = 1;
  for (int64_t d : b.type().dims()) n *= d;
  if (IsFloat(t)) {
    bool unit = plan.training() && plan.train().labels() == b.name() &&
                plan.train().loss_kind() == "bce_logits";
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) x = unit ? uniform(rng) : normal(rng);
    return cpu::Cast(DType::kF64, t, n, v.data(), dst);
  }
  int64_t bound = t == DType::kBool ? 2 : std::max<int64_t>(IndexBound(plan, b.id()), 1);
  if (t == DType::kI8) bound = std::min<int64_t>(bound, 128);
  if (t == DType::kU8) bound = std::min<int64_t>(bound, 256);
  if (t == DType::kI16) bound = std::min<int64_t>(bound, 32768);
  if (t == DType::kU16) bound = std::min<int64_t>(bound, 65536);
  std::uniform_int_distribution<int64_t> dist(0, bound - 1);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t& x : v) x = dist(rng);
  return cpu::Cast(DType::kI64, t, n, v.data(), dst);
}

Status FillSyntheticInputs(Executor& ex, const Dataset& data, uint64_t seed, int64_t step) {
  for (const auto& bind : ex.plan().inputs()) {
    if (data.Has(bind.name())) continue;
    const plan::Buffer& b = ex.plan().buffers(bind.buffer());
    std::vector<uint8_t> bytes(b.bytes());
    Status s = FillSynthetic(ex.plan(), b, seed, step, bytes.data());
    if (s.ok()) s = ex.WriteBuffer(b.id(), bytes.data());
    if (!s.ok()) return s.WithContext("input '" + bind.name() + "'");
  }
  return Status::Ok();
}

}  // namespace a8

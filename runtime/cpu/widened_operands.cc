#include "runtime/cpu/widened_operands.h"

#include <algorithm>
#include <iterator>

#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/parallel.h"

namespace a8 {
namespace {

bool IsLowFloat(DType t) { return t == DType::kF16 || t == DType::kBF16; }

}  // namespace

bool RunsWidened(const std::string& op) {
  static const char* const kOps[] = {"BatchNormalization",    "a8.BatchNormalizationGrad",
                                     "LayerNormalization",    "a8.LayerNormalizationGrad",
                                     "InstanceNormalization", "a8.InstanceNormalizationGrad"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

int64_t WidenedFloats(const plan::Plan& plan, const plan::Kernel& kern) {
  if (!RunsWidened(kern.op())) return 0;
  int64_t n = 0;
  auto add = [&](int id) {
    const TensorArg t = BindBuffer(plan, {}, id);
    if (t.present && IsLowFloat(t.dtype)) n += t.count();
  };
  for (int id : kern.inputs()) add(id);
  for (int id : kern.outputs()) add(id);
  return n;
}

std::vector<WidenedOperand> WidenOperands(std::vector<TensorArg>* in, std::vector<TensorArg>* out,
                                          float* scratch) {
  std::vector<WidenedOperand> ops;
  auto bind = [&](TensorArg& t, bool output) {
    if (!t.present || t.data == nullptr || !IsLowFloat(t.dtype)) return;
    ops.push_back({t.data, t.dtype, scratch, t.count(), output});
    t.dtype = DType::kF32;
    t.data = reinterpret_cast<uint8_t*>(scratch);
    if (t.host != nullptr) t.host = t.data;
    scratch += t.count();
  };
  for (TensorArg& t : *in) bind(t, false);
  for (TensorArg& t : *out) bind(t, true);
  return ops;
}

void WidenInputs(const std::vector<WidenedOperand>& ops) {
  for (const WidenedOperand& o : ops) {
    if (o.output) continue;
    cpu::ParallelFor(o.n, 1, [&](int64_t b, int64_t e) {
      if (o.dtype == DType::kF16) {
        cpu::HalfToFloat(reinterpret_cast<const cpu::Half*>(o.data) + b, o.f32 + b, e - b);
      } else {
        cpu::BFloat16ToFloat(reinterpret_cast<const cpu::BFloat16*>(o.data) + b, o.f32 + b, e - b);
      }
    });
  }
}

void NarrowOutputs(const std::vector<WidenedOperand>& ops) {
  for (const WidenedOperand& o : ops) {
    if (o.output) cpu::NarrowFromF32(o.dtype, o.f32, o.n, o.data);
  }
}

}  // namespace a8

#include "runtime/cpu/registry.h"

#include <algorithm>

namespace a8 {

const plan::Attribute* KernelArgs::attr(const std::string& name) const {
  for (const plan::Attribute& a : kernel_->attrs())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t KernelArgs::Int(const std::string& name, int64_t dflt) const {
  const plan::Attribute* a = attr(name);
  if (a == nullptr) return dflt;
  if (a->has_i()) return a->i();
  if (a->has_f()) return static_cast<int64_t>(a->f());
  return dflt;
}

float KernelArgs::Float(const std::string& name, float dflt) const {
  const plan::Attribute* a = attr(name);
  if (a == nullptr) return dflt;
  if (a->has_f()) return a->f();
  if (a->has_i()) return static_cast<float>(a->i());
  return dflt;
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

Status RequireScalar(const KernelArgs& a, int i, DType dtype, const char* what) {
  const TensorArg& t = a.in(i);
  if (!t.present || t.dtype != dtype || t.count() != 1) {
    return InvalidInput("{}: input {} ({}) must be a {} scalar", a.kernel().op(), i, what,
                        DTypeName(dtype));
  }
  return Status::Ok();
}

std::string DTypeList(const std::vector<DType>& types) {
  std::string s;
  for (DType t : types) {
    if (!s.empty()) s += ",";
    s += DTypeName(t);
  }
  return s;
}

const std::vector<CpuKernelEntry>& CpuKernelRegistry() {
  static const std::vector<CpuKernelEntry>* entries = [] {
    auto* r = new std::vector<CpuKernelEntry>();
    RegisterElementwiseKernels(r);
    RegisterNnKernels(r);
    RegisterReduceKernels(r);
    RegisterMovementKernels(r);
    RegisterGradMathKernels(r);
    RegisterGradNnKernels(r);
    RegisterOptimizerKernels(r);
    RegisterDistKernels(r);
    RegisterFusedKernels(r);
    std::sort(r->begin(), r->end(),
              [](const CpuKernelEntry& a, const CpuKernelEntry& b) { return a.op < b.op; });
    return r;
  }();
  return *entries;
}

const CpuKernelEntry* FindCpuKernel(const std::string& op) {
  const auto& r = CpuKernelRegistry();
  auto it =
      std::lower_bound(r.begin(), r.end(), op,
                       [](const CpuKernelEntry& e, const std::string& o) { return e.op < o; });
  return it != r.end() && it->op == op ? &*it : nullptr;
}

}  // namespace a8

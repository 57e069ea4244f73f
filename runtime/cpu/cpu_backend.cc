#include "runtime/cpu/cpu_backend.h"

#include <algorithm>

namespace a8 {
Status CpuBackend::Prepare(const plan::Plan& plan, const std::vector<uint8_t*>& buffers) {
  kernels_.clear();
  kernels_.reserve(plan.kernels_size());
  for (int k = 0; k < plan.kernels_size(); ++k) {
    const plan::Kernel& kern = plan.kernels(k);
    auto where = [&] {
      return fmt::format("kernel {} '{}' (node '{}')", k, kern.name(), kern.node());
    };
    const CpuKernelEntry* e = FindCpuKernel(kern.op());
    if (e == nullptr)
      return Unsupported("{}: the CPU backend has no implementation of op '{}'", where(),
                         kern.op());
    std::vector<TensorArg> in, out, tattrs;
    for (int id : kern.inputs()) in.push_back(BindBuffer(plan, buffers, id));
    for (int id : kern.outputs()) out.push_back(BindBuffer(plan, buffers, id));
    for (const plan::Attribute& a : kern.attrs())
      if (a.has_tensor_buffer()) tattrs.push_back(BindBuffer(plan, buffers, a.tensor_buffer()));
    const std::vector<TensorArg>& side = e->type_input >= 0 ? in : out;
    int ti = std::max(e->type_input, 0);
    if (ti >= static_cast<int>(side.size()) || !side[ti].present)
      return InvalidInput("{}: missing the {} {} that gives its dtype", where(),
                          e->type_input >= 0 ? "input" : "output", ti);
    DType t = side[ti].dtype;
    if (std::find(e->types.begin(), e->types.end(), t) == e->types.end())
      return Unsupported("{}: the CPU kernel of '{}' does not take {} (it takes {})", where(),
                         kern.op(), DTypeName(t), DTypeList(e->types));
    kernels_.push_back(
        Prepared{e, KernelArgs(&kern, std::move(in), std::move(out), std::move(tattrs))});
  }
  return Status::Ok();
}

Status CpuBackend::Run(int index, const StepInfo& step) {
  if (index < 0 || index >= static_cast<int>(kernels_.size()))
    return Internal("kernel index {} out of range (prepared {})", index, kernels_.size());
  Prepared& p = kernels_[index];
  p.args.step = step;
  return p.entry->fn(p.args);
}

std::unique_ptr<Backend> MakeCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace a8

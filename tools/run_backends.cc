// The backends a800c-run can run on, by --backend name, and --list-kernels.
#include "tools/run_backends.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/device/device_backend.h"
#include "runtime/device/device_registry.h"

namespace a8::cli {
namespace {

// One registry row: "op: input|output K in {dtypes}; note" (CPU and device entries alike).
template <typename Entry>
void PrintEntry(const Entry& e) {
  std::cout << e.op << ": " << (e.type_input >= 0 ? "input " : "output ")
            << std::max(e.type_input, 0) << " in {" << a8::DTypeList(e.types) << "}";
  if (!e.note.empty()) std::cout << "; " << e.note;
  std::cout << "\n";
}

}  // namespace

namespace {

a8::StatusOr<std::unique_ptr<a8::Backend>> MakeNamedBackend(const std::string& name, bool graphs,
                                                            a8::cpu::KernelMode cpu_mode) {
  if (name == "cpu") return a8::MakeCpuBackend(cpu_mode);
  if (name == "cuda-emu") return a8::MakeCudaEmuBackend();
#if defined(A800C_HAVE_CUDA)
  if (name == "cuda" || name == "auto") {
    auto be = a8::MakeCudaBackend(graphs);
    if (be.ok() || name == "cuda") {
      if (!be.ok()) return be.status().WithContext("--backend=cuda");
      return be;
    }
    return a8::MakeCpuBackend(cpu_mode);  // auto without a usable GPU
  }
#else
  (void)graphs;
  if (name == "auto") return a8::MakeCpuBackend(cpu_mode);
  if (name == "cuda")
    return a8::Internal(
        "--backend=cuda: this a800c-run was built without CUDA (no nvcc was found when it was "
        "configured; rebuild with -DA800C_CUDA=ON on a machine with the CUDA toolkit)");
#endif
  return a8::InvalidInput("--backend={}: unknown backend", name);
}

}  // namespace

a8::StatusOr<std::unique_ptr<a8::Backend>> MakeBackend(const std::string& name, bool graphs,
                                                       bool reference) {
  const auto mode = reference ? a8::cpu::KernelMode::kReference : a8::cpu::KernelMode::kFast;
  A8_ASSIGN_OR_RETURN(std::unique_ptr<a8::Backend> be, MakeNamedBackend(name, graphs, mode));
  if (reference && be->name() != "cpu") {
    return a8::InvalidInput(
        "--reference: only the cpu backend has a reference mode (--backend={} runs {})", name,
        be->name());
  }
  return be;
}

int ListKernels(const std::string& backend) {
  if (backend == "cuda" || backend == "cuda-emu") {
    // The CUDA backend's registry: the same sources as its host emulation's.
    const auto& reg = a8::emu::DeviceKernelRegistry();
    std::cout << "backend " << backend << ": " << reg.size() << " ops\n";
    for (const auto& e : reg) PrintEntry(e);
    std::vector<std::string> missing;
    for (const a8::CpuKernelEntry& c : a8::CpuKernelRegistry())
      if (a8::emu::FindDeviceKernel(c.op) == nullptr) missing.push_back(c.op);
    if (!missing.empty())
      std::cout << "not yet on " << backend << " (" << missing.size()
                << " ops of the CPU backend): " << fmt::format("{}", fmt::join(missing, " "))
                << "\n";
    return 0;
  }
  std::cout << "backend cpu: " << a8::CpuBackendRegistry().size() << " ops\n";
  for (const a8::CpuKernelEntry& e : a8::CpuBackendRegistry()) PrintEntry(e);
  return 0;
}

}  // namespace a8::cli

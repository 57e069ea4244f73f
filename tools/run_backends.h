// The backends a800c-run can run on (tools/run_backends.cc): a tool-level piece, since it names
// every backend (cpu, cuda-emu, and cuda in CUDA builds).
#pragma once

#include <memory>
#include <string>

#include "compiler/ir/status.h"
#include "runtime/core/backend.h"

namespace a8::cli {

// --backend: cpu; cuda (this build's CUDA backend, on the GPU of this process); cuda-emu (the
// CUDA backend's kernels run on the host); auto (cuda when this build has it and a GPU is
// usable, else cpu). `graphs`: CUDA graph capture. `reference`: the CPU backend runs its
// reference kernels (bit-identical to cuda-emu) instead of the fast ones; bad input for a backend
// that is not the CPU's.
StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& name, bool graphs,
                                               bool reference = false);

// --list-kernels: prints the registry of the chosen backend; returns the exit code.
int ListKernels(const std::string& backend);

}  // namespace a8::cli

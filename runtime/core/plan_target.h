// Whether a backend may run a plan compiled for `a800c --target=T` (CLI.md): "any" runs
// everywhere, "cpu" only on the CPU backend, "sm_80" / "sm_90" only on the CUDA backend (and on
// cuda-emu, its kernels run on the host).
#pragma once

#include <string_view>

#include "compiler/ir/status.h"

namespace a8 {

// InvalidInput "the plan was compiled for --target=cpu; ..." naming both and the way out.
Status CheckPlanTarget(std::string_view target, std::string_view backend);

}  // namespace a8

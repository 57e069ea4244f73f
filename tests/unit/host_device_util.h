// Runs a shared device body (kernels/device) on the host as the CPU backend runs it: host memory,
// the host ForEach over the CPU pool, scratch from the host allocator.
#pragma once

#include <utility>

#include "kernels/emu/run_on_host.h"
#include "runtime/device/device_registry.h"

namespace a8::testing {

// fn(ctx) on the host (kernels/emu/run_on_host.h).
template <typename Fn>
Status OnHost(Fn&& fn) {
  return emu::RunOnHost(std::forward<Fn>(fn));
}

}  // namespace a8::testing

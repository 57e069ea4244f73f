// Runs a shared device body (kernels/device) on the host outside any backend, with the host
// launcher of kernels/device/launch.h: for the compiler's constant folding, which computes with
// the kernels the CPU backend runs, and for the tests of those bodies. (The CPU backend keeps a
// DevCtx of its own a step: runtime/cpu/cpu_backend.cc.)
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

// fn(ctx) with a host DevCtx whose error word is watched; the scratch is freed after the call. A
// device error is Internal ("device: ..."), as the backends report it; a raised DevErr (an index
// or a label out of range) is InvalidInput.
template <typename Fn>
Status RunOnHost(Fn&& fn) {
  DevCtx ctx;
  int32_t error = 0;
  ctx.error_word = &error;
  ctx.error_tag = 1;
  const DevStatus s = fn(ctx);
  ReleaseScratch(ctx);
  if (!s.ok()) return Internal("device: {}", s.what);
  if (error != 0) return InvalidInput("the kernel raised a data error (an index or label)");
  return Status::Ok();
}

}  // namespace a8::A8_DEV_NS

// Runs a shared device body (kernels/device) on the host as the CPU backend runs it: host memory,
// the host ForEach over the CPU pool, scratch from the host allocator.
#pragma once

#include <cstdint>

#include "runtime/device/device_registry.h"

namespace a8::testing {

// fn(ctx) with a host DevCtx whose error word is watched; the scratch is freed after the call. A
// raised DevErr (an index or a label out of range) is InvalidInput, as the CPU backend reports it.
template <typename Fn>
Status OnHost(Fn&& fn) {
  emu::DevCtx ctx;
  int32_t error = 0;
  ctx.error_word = &error;
  ctx.error_tag = 1;
  const emu::DevStatus s = fn(ctx);
  emu::ReleaseScratch(ctx);
  A8_RETURN_IF_ERROR(emu::FromDev(s));
  if (error != 0) return InvalidInput("the kernel raised a data error (an index or label)");
  return Status::Ok();
}

}  // namespace a8::testing

// A device kernel's DevStatus as a Status, for the host code around the kernels: the set-ups
// (movement_setup.cc), the backends' entries (runtime/device) and RunOnHost
// (kernels/emu/run_on_host.h).
#pragma once

#include "base/status.h"
#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

// Internal ("device: ...") for a failed launch or a kernel's error.
inline Status FromDev(const DevStatus& s) {
  if (s.ok()) return Status::Ok();
  return Internal("device: {}", s.what);
}

}  // namespace a8::A8_DEV_NS

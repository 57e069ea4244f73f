// Shared device bodies (kernels/device) on the host, with the host launcher of
// kernels/device/launch.h: the context a body gets there, which the CPU backend keeps for its
// run (runtime/cpu/cpu_backend.cc), and RunOnHost, one body run outside any backend, for the
// compiler's constant folding (which computes with the kernels the CPU backend runs), the CPU
// backend's own kernels that move data (the integer Gemm, the variadic ops) and the tests of
// those bodies.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

#include "base/status.h"
#include "kernels/device/blas.h"
#include "kernels/device/device.h"
#include "kernels/device/host_status.h"

namespace a8::A8_DEV_NS {

// What a shared body gets on the host: host memory is its "device" memory, the step values are a
// plain struct, scratch comes from the host Malloc (freed with this), and a raised DevErr lands in
// `error`, read back after the kernel. `blas` is the GEMM engine, made by whoever runs GEMMs.
struct HostDevice {
  DevCtx ctx;
  StepDev step;
  int32_t error = 0;
  std::unique_ptr<BlasEngine> blas;
  HostDevice() {
    ctx.step = &step;
    ctx.error_word = &error;
    ctx.error_tag = 1;  // a raise leaves a non-zero word (the CPU backend tags each kernel)
  }
  ~HostDevice() { ReleaseScratch(ctx); }
  HostDevice(const HostDevice&) = delete;
  HostDevice& operator=(const HostDevice&) = delete;
};

// fn(ctx) with a fresh HostDevice's context (step values 0): a kernel (returning DevStatus) or a
// set-up that runs kernels (returning Status: movement_setup.h). A device error is Internal
// ("device: ..."), as the backends report it; a raised DevErr (an index or a label out of range)
// is InvalidInput.
template <typename Fn>
Status RunOnHost(Fn&& fn) {
  HostDevice host;
  if constexpr (std::is_same_v<std::invoke_result_t<Fn, DevCtx&>, Status>) {
    A8_RETURN_IF_ERROR(fn(host.ctx));
  } else {
    A8_RETURN_IF_ERROR(FromDev(fn(host.ctx)));
  }
  if (host.error != 0) return InvalidInput("the kernel raised a data error (an index or label)");
  return Status::Ok();
}

}  // namespace a8::A8_DEV_NS

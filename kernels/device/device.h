// The device kernel layer: one source for the CUDA backend and for its host emulation.
//
// Every kernel of the CUDA backend is written once, as a functor over an index space with an
// `A8_HD` (__host__ __device__) body, in a kernels/device/*_impl.h header. That header is
// compiled twice:
//   - by nvcc in kernels/cuda/*.cu, namespace a8::cuda: `ForEach` launches a grid-stride kernel
//     on the backend's stream;
//   - by g++ in kernels/emu/*.cc, namespace a8::emu: `ForEach` is a loop on the host.
// The emulated backend ("cuda-emu") runs every plan on the CPU through exactly the code the
// GPU runs (indexing, broadcasting, dtype handling, the math), so CI checks it against the CPU
// reference backend without a GPU. What only the GPU build has: the launch itself, cuBLASLt
// and cuDNN (the emulation calls the CPU reference GEMM and convolution in their place), and
// CUDA graphs.
//
// This header is the boundary between host setup code (runtime/device/ops_*.cc, which reads
// plan kernels and attributes) and the kernels: it holds no protobuf, no fmt, nothing nvcc
// should not parse. A8_DEV_NS is `cuda` or `emu`, set per CMake target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype_enum.h"
#include "kernels/common/float16.h"

#ifndef A8_DEV_NS
#error "A8_DEV_NS (cuda or emu) must be defined by the build target"
#endif

namespace a8::A8_DEV_NS {

// A failed launch or library call: empty `what` is success. Host code turns it into a Status.
struct DevStatus {
  std::string what;
  bool ok() const { return what.empty(); }
};
inline DevStatus DevOk() { return {}; }
inline DevStatus DevError(std::string what) { return DevStatus{std::move(what)}; }
#define A8_DEV_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::a8::A8_DEV_NS::DevStatus _s = (expr); \
    if (!_s.ok()) return _s;                \
  } while (0)

// The per-step values kernels read (StepInfo): in device memory, rewritten before every step
// by a copy that is part of the captured CUDA graph, so a replayed graph sees the new step.
struct StepDev {
  int64_t step = 0;
  uint64_t seed = 0;
  int32_t eval = 0;
  int32_t pad = 0;
};

// GEMM and convolution engines: cuBLASLt/cuDNN on the GPU, the CPU reference in emulation.
class BlasEngine;

// What every kernel launch gets.
struct DevCtx {
  void* stream = nullptr;         // cudaStream_t (null in emulation)
  const StepDev* step = nullptr;  // device memory
  BlasEngine* blas = nullptr;
  bool tf32 = false;  // FP32 GEMMs and convolutions may use TF32 tensor cores (--precision=tf32)
  // Scratch memory for the kernel now running (im2col columns, reduction partials): Scratch()
  // returns at least `bytes` bytes, valid until the next Scratch call. Sized by the first (eager)
  // step; a graph-captured step never grows it.
  uint8_t* scratch = nullptr;
  size_t scratch_bytes = 0;
  // Outgrown scratch buffers: a captured graph may still read them, so they live until
  // ReleaseScratch (the backend's teardown).
  std::vector<void*> retired_scratch;
  bool capturing = false;
  // Data-dependent errors (an index or a label out of range) found by device code: the kernel
  // writes `error_tag` (the running kernel's index + 1, set by the backend) into `error_word`
  // (device memory, zeroed at the start of a step), and the backend reports it after the step.
  int32_t* error_word = nullptr;
  int32_t error_tag = 0;
};
// A data-dependent error raised by device code (an index or a label out of range): the first
// kernel to raise one in a step is named after the step (device.h, DevCtx::error_word). The
// kernel still writes a defined value (zero, NaN) and never touches memory out of bounds.
struct DevErr {
  int32_t* word = nullptr;
  int32_t tag = 0;
  A8_HD void Raise() const {
    if (word == nullptr) return;
#if defined(__CUDA_ARCH__)
    atomicCAS(reinterpret_cast<int*>(word), 0, static_cast<int>(tag));
#else
    // Host launcher threads may raise at once: the first tag stays, as with atomicCAS.
    int32_t expected = 0;
    __atomic_compare_exchange_n(word, &expected, tag, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
  }
};
inline DevErr ErrOf(const DevCtx& ctx) { return DevErr{ctx.error_word, ctx.error_tag}; }

// Makes ctx.scratch hold at least `bytes` bytes.
DevStatus Scratch(DevCtx& ctx, size_t bytes, void** out);
// Frees the scratch memory, outgrown buffers included.
void ReleaseScratch(DevCtx& ctx);

// ---- memory and streams (kernels/cuda/memory.cu, kernels/emu/memory.cc)
std::string DeviceDescription();  // "NVIDIA H200 (sm_90, 139 GiB)" or "host emulation"
DevStatus DeviceAvailable();      // the GPU the process runs on; an error saying why not
// Whether device memory is host memory (the emulation): host code may then read an operand's
// values, e.g. to name the element at fault where a device kernel can only raise DevErr.
bool MemoryIsHost();
DevStatus Malloc(void** p, size_t bytes);
void Free(void* p);
DevStatus MallocHost(void** p, size_t bytes);  // pinned host memory
void FreeHost(void* p);
DevStatus CopyToDevice(void* dst, const void* src, size_t bytes, void* stream);  // async
DevStatus CopyToHost(void* dst, const void* src, size_t bytes, void* stream);    // async
DevStatus CopyOnDevice(void* dst, const void* src, size_t bytes, void* stream);  // async
DevStatus Fill(void* dst, uint8_t byte, size_t bytes, void* stream);             // async
DevStatus StreamCreate(void** stream);
void StreamDestroy(void* stream);
DevStatus StreamSync(void* stream);
// Whole-step CUDA graphs: capture the launches on `stream` between Begin and End, replay.
DevStatus GraphBegin(void* stream);
DevStatus GraphEnd(void* stream, void** exec);
DevStatus GraphLaunch(void* exec, void* stream);
void GraphDestroy(void* exec);
// Peak device memory in use by this process since start (bytes; 0 where unknown).
size_t PeakMemory();

}  // namespace a8::A8_DEV_NS

// The oneDNN engine and per-thread stream that the oneDNN GEMM (onednn_gemm.cc) and convolution
// (onednn_conv.cc) primitives run on, and the per-thread memory objects and C API calls they run
// them with. Internal to kernels/cpu: only those two files include it.
#pragma once

#include <omp.h>

#include <array>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

namespace a8::cpu::internal {

inline dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN's OpenMP parallel regions are 1 thread wide on every thread that calls it: the kernels'
// pool is the only one. Set on first use by each thread (the count is per thread in OpenMP).
inline dnnl::stream& ThreadStream() {
  thread_local dnnl::stream* stream = [] {
    omp_set_num_threads(1);
    return new dnnl::stream(Engine());  // leaked: a thread_local destructor may outlive oneDNN
  }();
  return *stream;
}

// The calling thread's memory object for slot `slot` of primitive entry `owner` (descriptor
// `md`), pointed at `data`: made once per thread, owner and slot, and only re-pointed after. Each
// dnnl_memory_create allocates, and with the C++ API's argument map that was about a third of a
// small convolution's fixed cost. Owners (the primitive caches' entries) live as long as the
// process.
inline constexpr int kMaxBoundSlots = 12;
inline const dnnl::memory& BoundMemory(const void* owner, int slot, const dnnl::memory::desc& md,
                                       const void* data) {
  thread_local std::unordered_map<const void*, std::array<dnnl::memory, kMaxBoundSlots>> cache;
  dnnl::memory& m = cache[owner][static_cast<size_t>(slot)];
  if (!m) m = dnnl::memory(md, Engine(), DNNL_MEMORY_NONE);
  m.set_data_handle(const_cast<void*>(data));
  return m;
}

// Runs `prim` on stream `s` with `n` arguments through the C API (no argument map).
inline void ExecuteArgs(const dnnl::primitive& prim, dnnl::stream& s, const dnnl_exec_arg_t* args,
                        int n) {
  dnnl::error::wrap_c_api(dnnl_primitive_execute(prim.get(), s.get(), n, args),
                          "could not execute a primitive");
}
inline void Reorder(const dnnl::reorder& r, dnnl::stream& s, const dnnl::memory& from,
                    const dnnl::memory& to) {
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}};
  ExecuteArgs(r, s, args, 2);
}

}  // namespace a8::cpu::internal

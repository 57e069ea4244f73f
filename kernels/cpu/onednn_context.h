// The oneDNN engine and per-thread stream that the oneDNN GEMM (onednn_gemm.cc) and convolution
// (onednn_conv.cc) primitives run on. Internal to kernels/cpu: only those two files include it.
#pragma once

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

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

}  // namespace a8::cpu::internal

// cuBLASLt, loaded on first use (cublaslt_lazy.cc). Linking libcublasLt made every program that
// holds the CUDA backend pay for its start-up (about 0.1 s of static initializers and page
// faults a process, on every a800c-run of a CPU plan); now only a CUDA GEMM engine loads it.
#pragma once

#include <string>

namespace a8::cuda {

// Loads libcublasLt (its soname, then the CUDA toolkit's library folder) once; an empty string
// when it is loaded, else why not (dlerror). The cublasLt* functions blas_gemm.cc calls are
// defined in cublaslt_lazy.cc and forward to the loaded library; called before it loads, they
// return CUBLAS_STATUS_NOT_INITIALIZED.
const std::string& LoadCublasLt();

}  // namespace a8::cuda

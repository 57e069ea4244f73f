// The cublasLt* functions a800c calls, each forwarding to libcublasLt loaded with dlopen on first
// use (cublaslt_lazy.h says why). Each definition has cublasLt.h's own declaration, so a
// signature that drifts from the header is a compile error.
#include "kernels/cuda/cublaslt_lazy.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#define A8_STR2(x) #x
#define A8_STR(x) A8_STR2(x)

namespace a8::cuda {
namespace {

struct Library {
  void* handle = nullptr;
  std::string error;
};

Library& Lib() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string soname = "libcublasLt.so." A8_STR(CUBLAS_VER_MAJOR);
    lib.handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle != nullptr) return;
    std::string first = dlerror();
#ifdef A8_CUDA_LIBRARY_DIR
    const std::string path = std::string(A8_CUDA_LIBRARY_DIR) + "/" + soname;
    lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle != nullptr) return;
    first += "; " + std::string(dlerror());
#endif
    lib.error = "cannot load cuBLASLt: " + first;
  });
  return lib;
}

// The library's `name`, as the type of our own definition of it; null when not loaded.
template <typename Fn>
Fn* Resolve(Fn* /*ours*/, const char* name) {
  void* h = Lib().handle;
  return h == nullptr ? nullptr : reinterpret_cast<Fn*>(dlsym(h, name));
}

}  // namespace

const std::string& LoadCublasLt() { return Lib().error; }

}  // namespace a8::cuda

// One forwarding definition: `ret name(params)` calls the library's `name` with `args`.
#define A8_FORWARD(ret, name, params, args)                                 \
  extern "C" ret CUBLASWINAPI name params {                                 \
    static auto* fn = a8::cuda::Resolve(&name, #name);                      \
    if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;                \
    return fn args;                                                         \
  }

A8_FORWARD(cublasStatus_t, cublasLtCreate, (cublasLtHandle_t * handle), (handle))
A8_FORWARD(cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t handle), (handle))
A8_FORWARD(cublasStatus_t, cublasLtMatmul,
           (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
            cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc,
            const void* beta, const void* c, cublasLtMatrixLayout_t c_desc, void* d,
            cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void* workspace,
            size_t workspace_bytes, cudaStream_t stream),
           (handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo,
            workspace, workspace_bytes, stream))
A8_FORWARD(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,
           (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_desc,
            cublasLtMatrixLayout_t b_desc, cublasLtMatrixLayout_t c_desc,
            cublasLtMatrixLayout_t d_desc, cublasLtMatmulPreference_t preference,
            int requested, cublasLtMatmulHeuristicResult_t results[], int* returned),
           (handle, desc, a_desc, b_desc, c_desc, d_desc, preference, requested, results,
            returned))
A8_FORWARD(cublasStatus_t, cublasLtMatmulDescCreate,
           (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
           (desc, compute, scale))
A8_FORWARD(cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
A8_FORWARD(cublasStatus_t, cublasLtMatmulDescSetAttribute,
           (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf,
            size_t bytes),
           (desc, attr, buf, bytes))
A8_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref),
           (pref))
A8_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref),
           (pref))
A8_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,
           (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
            const void* buf, size_t bytes),
           (pref, attr, buf, bytes))
A8_FORWARD(cublasStatus_t, cublasLtMatrixLayoutCreate,
           (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols,
            int64_t ld),
           (layout, type, rows, cols, ld))
A8_FORWARD(cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
A8_FORWARD(cublasStatus_t, cublasLtMatrixLayoutSetAttribute,
           (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf,
            size_t bytes),
           (layout, attr, buf, bytes))

// Status strings need no library: a message for every status, the library's when loaded.
extern "C" const char* CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status) {
  static auto* fn = a8::cuda::Resolve(&cublasLtGetStatusString, "cublasLtGetStatusString");
  if (fn != nullptr) return fn(status);
  return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS"
                                         : "cuBLASLt is not loaded (see the backend's error)";
}

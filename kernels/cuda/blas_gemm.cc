// The CUDA GEMM/convolution engine (blas.h): GEMMs through cuBLASLt, convolutions through cuDNN
// (blas_conv.cc), and the device fallbacks of gemm_conv.h for what neither takes.
//
// Row-major GEMMs run as the transposed column-major problem: D^T [n, m] = op(B)^T op(A)^T, so
// cuBLASLt's A is our B and its B our A, with the same leading dimensions, and its bias (one
// value per row of D^T) is our per-column bias. Native epilogues: bias, relu, bias + relu.
// cuBLASLt's GELU is the tanh form and its DRELU reads a bit mask, not the Relu output, so every
// other epilogue goes through GemmViaAcc (a cuBLASLt GEMM into a float accumulator, then one
// epilogue kernel). The algorithm is cublasLtMatmulAlgoGetHeuristic's first choice, cached per
// descriptor (shapes, types, pointer alignments); the workspace is allocated once.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <map>
#include <memory>
#include <string>

#include "kernels/cuda/blas_cuda.h"
#include "kernels/cuda/cublaslt_lazy.h"
#include "kernels/device/gemm_conv.h"

namespace a8::A8_DEV_NS {
namespace {

constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;

DevStatus LtCheck(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return DevOk();
  return DevError(std::string("cuBLASLt ") + what + ": " + cublasLtGetStatusString(s));
}

cudaDataType_t CudaType(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kF64:
      return CUDA_R_64F;
    default:
      return CUDA_R_32F;
  }
}

// The largest power of two (up to 256) dividing the address: cuBLASLt's heuristics assume
// 256-byte aligned operands unless told otherwise.
int64_t Alignment(const void* p) {
  const auto u = reinterpret_cast<uintptr_t>(p);
  int64_t a = 256;
  while (a > 1 && u % static_cast<uintptr_t>(a) != 0) a /= 2;
  return a;
}

bool FitsInt32(int64_t v) { return v >= 0 && v <= 0x7fffffff; }

cublasLtEpilogue_t LtEpilogue(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::kBias:
      return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::kRelu:
      return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::kBiasRelu:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    default:
      return CUBLASLT_EPILOGUE_DEFAULT;
  }
}

class CudaBlasEngine : public BlasEngine {
 public:
  ~CudaBlasEngine() override {
    for (auto& [key, plan] : plans_) Destroy(&plan);
    if (lt_ != nullptr) cublasLtDestroy(lt_);
    if (workspace_ != nullptr) Free(workspace_);
  }

  DevStatus Init(void* stream) {
    if (const std::string& why = LoadCublasLt(); !why.empty()) return DevError(why);
    A8_DEV_RETURN_IF_ERROR(LtCheck(cublasLtCreate(&lt_), "create"));
    A8_DEV_RETURN_IF_ERROR(Malloc(&workspace_, kLtWorkspaceBytes));
    return CudnnConv::Create(stream, &cudnn_);
  }

  DevStatus Gemm(DevCtx& ctx, const GemmDesc& d) override {
    A8_DEV_RETURN_IF_ERROR(CheckGemmDesc(d));
    const bool native_epilogue =
        d.epilogue == GemmEpilogue::kNone || d.epilogue == GemmEpilogue::kBias ||
        d.epilogue == GemmEpilogue::kRelu || d.epilogue == GemmEpilogue::kBiasRelu;
    const bool fits = FitsInt32(d.batch) && FitsInt32(d.m) && FitsInt32(d.n) && FitsInt32(d.k);
    if (!native_epilogue || d.pre != nullptr || d.bias_grad != nullptr || d.k == 0 ||
        d.batch * d.m * d.n == 0 || !fits) {
      if (d.epilogue == GemmEpilogue::kNone && d.k > 0 && d.batch * d.m * d.n > 0)
        return DevError("GEMM: sizes beyond cuBLASLt's 32-bit limits");
      return GemmViaAcc(ctx, *this, d);
    }
    Plan* plan = nullptr;
    A8_DEV_RETURN_IF_ERROR(PlanFor(ctx, d, &plan));
    if (!plan->usable) {
      if (d.epilogue == GemmEpilogue::kNone)
        return DevError(std::string("GEMM: cuBLASLt has no algorithm for this product: ") +
                        plan->why);
      return GemmViaAcc(ctx, *this, d);  // e.g. no bias epilogue for this type
    }
    if (d.bias != nullptr) {
      const void* bias = d.bias;
      A8_DEV_RETURN_IF_ERROR(
          LtCheck(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                 sizeof(bias)),
                  "bias pointer"));
    }
    const float alpha_f = static_cast<float>(d.alpha), beta_f = static_cast<float>(d.beta);
    const bool wide = d.a_type == DType::kF64;
    const void* alpha = wide ? static_cast<const void*>(&d.alpha) : &alpha_f;
    const void* beta = wide ? static_cast<const void*>(&d.beta) : &beta_f;
    // Column-major view: cuBLASLt's A is our B, its B our A (see the file comment).
    return LtCheck(cublasLtMatmul(lt_, plan->op, alpha, d.b, plan->a, d.a, plan->b, beta, d.c,
                                  plan->c, d.c, plan->c, &plan->algo, workspace_, kLtWorkspaceBytes,
                                  static_cast<cudaStream_t>(ctx.stream)),
                   "matmul");
  }

  DevStatus Conv(DevCtx& ctx, const ConvDesc& d) override {
    bool done = false;
    A8_DEV_RETURN_IF_ERROR(cudnn_->Run(ctx, *this, d, &done));
    return done ? DevOk() : ConvByGemm(ctx, *this, d);
  }

 private:
  struct Plan {
    bool usable = false;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A, B, C=D
    cublasLtMatmulAlgo_t algo = {};
    const char* why = "";  // the heuristic's status when unusable
  };
  using Key = std::array<int64_t, 22>;

  static void Destroy(Plan* p) {
    if (p->op != nullptr) cublasLtMatmulDescDestroy(p->op);
    if (p->a != nullptr) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b != nullptr) cublasLtMatrixLayoutDestroy(p->b);
    if (p->c != nullptr) cublasLtMatrixLayoutDestroy(p->c);
  }

  static DevStatus Layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                          int64_t batch, int64_t stride, cublasLtMatrixLayout_t* out) {
    A8_DEV_RETURN_IF_ERROR(
        LtCheck(cublasLtMatrixLayoutCreate(out, type, static_cast<uint64_t>(rows),
                                           static_cast<uint64_t>(cols), ld),
                "layout"));
    if (batch == 1) return DevOk();
    const int32_t count = static_cast<int32_t>(batch);
    A8_DEV_RETURN_IF_ERROR(
        LtCheck(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                 sizeof(count)),
                "batch count"));
    return LtCheck(cublasLtMatrixLayoutSetAttribute(
                       *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
                   "batch stride");
  }

  DevStatus PlanFor(DevCtx& ctx, const GemmDesc& d, Plan** out) {
    const Key key = {static_cast<int64_t>(d.a_type),
                     static_cast<int64_t>(d.c_type),
                     d.trans_a,
                     d.trans_b,
                     d.m,
                     d.n,
                     d.k,
                     d.lda,
                     d.ldb,
                     d.ldc,
                     d.batch,
                     d.stride_a,
                     d.stride_b,
                     d.stride_c,
                     static_cast<int64_t>(d.epilogue),
                     ctx.tf32 && d.a_type == DType::kF32,
                     d.beta != 0.0,
                     Alignment(d.a),
                     Alignment(d.b),
                     Alignment(d.c),
                     d.bias != nullptr ? Alignment(d.bias) : 0,
                     0};
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      *out = &it->second;
      return DevOk();
    }
    Plan& p = plans_[key];
    *out = &p;
    const bool wide = d.a_type == DType::kF64;
    const cublasComputeType_t compute = wide      ? CUBLAS_COMPUTE_64F
                                        : key[15] ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                  : CUBLAS_COMPUTE_32F;
    A8_DEV_RETURN_IF_ERROR(
        LtCheck(cublasLtMatmulDescCreate(&p.op, compute, wide ? CUDA_R_64F : CUDA_R_32F), "desc"));
    const int32_t op_a = d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int32_t op_b = d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    A8_DEV_RETURN_IF_ERROR(LtCheck(
        cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
        "transa"));
    A8_DEV_RETURN_IF_ERROR(LtCheck(
        cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
        "transb"));
    const uint32_t epilogue = LtEpilogue(d.epilogue);
    A8_DEV_RETURN_IF_ERROR(
        LtCheck(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                               sizeof(epilogue)),
                "epilogue"));
    if (d.bias != nullptr) {
      const void* bias = d.bias;
      A8_DEV_RETURN_IF_ERROR(
          LtCheck(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                 sizeof(bias)),
                  "bias pointer"));
    }
    const cudaDataType_t ab = CudaType(d.a_type), c = CudaType(d.c_type);
    // Column-major: our B^T is [n, k] (stored [k, n] row-major, or [n, k] transposed), our A^T
    // [k, m], D^T [n, m].
    A8_DEV_RETURN_IF_ERROR(
        Layout(ab, d.trans_b ? d.k : d.n, d.trans_b ? d.n : d.k, d.ldb, d.batch, d.stride_b, &p.a));
    A8_DEV_RETURN_IF_ERROR(
        Layout(ab, d.trans_a ? d.m : d.k, d.trans_a ? d.k : d.m, d.lda, d.batch, d.stride_a, &p.b));
    A8_DEV_RETURN_IF_ERROR(Layout(c, d.n, d.m, d.ldc, d.batch, d.stride_c, &p.c));

    cublasLtMatmulPreference_t pref = nullptr;
    A8_DEV_RETURN_IF_ERROR(LtCheck(cublasLtMatmulPreferenceCreate(&pref), "preference"));
    const uint64_t ws = kLtWorkspaceBytes;
    const uint32_t align_a = static_cast<uint32_t>(key[18]),
                   align_b = static_cast<uint32_t>(key[17]);
    const uint32_t align_c = static_cast<uint32_t>(key[19]);
    DevStatus s = LtCheck(cublasLtMatmulPreferenceSetAttribute(
                              pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                          "workspace preference");
    const std::pair<cublasLtMatmulPreferenceAttributes_t, const uint32_t*> aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c}};
    for (const auto& [attr, value] : aligns) {
      if (s.ok())
        s = LtCheck(cublasLtMatmulPreferenceSetAttribute(pref, attr, value, sizeof(uint32_t)),
                    "alignment preference");
    }
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    cublasStatus_t h = CUBLAS_STATUS_SUCCESS;
    if (s.ok())
      h = cublasLtMatmulAlgoGetHeuristic(lt_, p.op, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    A8_DEV_RETURN_IF_ERROR(s);
    // A failed query (an epilogue or type combination cuBLASLt lacks) leaves the plan unusable:
    // the caller falls back, or reports `why` for a plain product.
    if (h == CUBLAS_STATUS_SUCCESS && found > 0) h = result.state;
    if (h == CUBLAS_STATUS_SUCCESS && found == 0) h = CUBLAS_STATUS_NOT_SUPPORTED;
    p.usable = h == CUBLAS_STATUS_SUCCESS;
    p.why = cublasLtGetStatusString(h);
    if (p.usable) p.algo = result.algo;
    return DevOk();
  }

  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  std::unique_ptr<CudnnConv> cudnn_;
  std::map<Key, Plan> plans_;
};

}  // namespace

DevStatus MakeBlasEngine(void* stream, std::unique_ptr<BlasEngine>* out) {
  auto engine = std::make_unique<CudaBlasEngine>();
  A8_DEV_RETURN_IF_ERROR(engine->Init(stream));
  *out = std::move(engine);
  return DevOk();
}

}  // namespace a8::A8_DEV_NS

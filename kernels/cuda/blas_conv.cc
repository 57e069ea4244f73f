// cuDNN convolutions of the CUDA engine (blas_cuda.h): 1-D and 2-D, f32/f16/bf16 (f16/bf16 with
// float accumulation), NCHW as the plan stores it. cuDNN pads symmetrically, so it takes a
// descriptor only when the begin pads, used on both sides, give the descriptor's output dims;
// everything else goes to ConvByGemm. A bias is broadcast into the output first and the
// convolution adds onto it (beta = 1): one rounding of the sum, as the CPU reference.
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/blas_cuda.h"
#include "kernels/device/gemm_conv.h"

namespace a8::A8_DEV_NS {
namespace {

// Workspace cap per convolution: faster algorithms that want more are skipped.
constexpr size_t kMaxConvWorkspace = size_t{512} << 20;

DevStatus DnnCheck(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return DevOk();
  return DevError(std::string("cuDNN ") + what + ": " + cudnnGetErrorString(s));
}

cudnnDataType_t DnnType(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDNN_DATA_HALF;
    case DType::kBF16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

bool FitsInt(int64_t v) { return v >= 0 && v <= 0x7fffffff; }

// Whether cuDNN's symmetric padding reproduces the descriptor (see the file comment).
bool CudnnTakes(const ConvDesc& d) {
  if (d.dtype != DType::kF32 && d.dtype != DType::kF16 && d.dtype != DType::kBF16) return false;
  if (d.rank < 1 || d.rank > 2 || d.batch < 1 || !FitsInt(d.batch * d.in_channels) ||
      !FitsInt(d.batch * d.out_channels))
    return false;
  for (int i = 0; i < d.rank; ++i) {
    const int64_t span = (d.kernel[i] - 1) * d.dilations[i] + 1;
    const int64_t padded = d.in_spatial[i] + 2 * d.pads[i];
    if (d.pads[i] < 0 || padded < span || (padded - span) / d.strides[i] + 1 != d.out_spatial[i])
      return false;
    if (!FitsInt(d.in_spatial[i]) || !FitsInt(d.out_spatial[i]) || !FitsInt(d.kernel[i]))
      return false;
  }
  return true;
}

// Picks the first deterministic algorithm that succeeded and fits the workspace cap, from
// results ordered fastest first. f32 without TF32 also skips tensor-op entries.
template <typename Perf>
bool PickAlgo(const Perf* perf, int n, bool no_tensor_ops, int* algo, size_t* workspace,
              cudnnMathType_t* math) {
  for (int i = 0; i < n; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC ||
        p.memory > kMaxConvWorkspace)
      continue;
    if (no_tensor_ops &&
        (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    *algo = static_cast<int>(p.algo);
    *workspace = p.memory;
    *math = no_tensor_ops ? CUDNN_FMA_MATH : p.mathType;
    return true;
  }
  return false;
}

// Runs `query`, one of the three cudnnGetConvolution*Algorithm_v7, on the descriptors `a`, `b`,
// `conv` and `c` (in the query's order, which differs between them) for up to kCount results,
// then picks one as PickAlgo does. *picked says whether one qualified.
template <int kCount, typename A, typename B, typename C, typename Perf>
DevStatus FindAlgo(cudnnStatus_t (*query)(cudnnHandle_t, A, B, cudnnConvolutionDescriptor_t, C, int,
                                          int*, Perf*),
                   const char* what, cudnnHandle_t handle, A a, B b,
                   cudnnConvolutionDescriptor_t conv, C c, bool no_tensor_ops, int* algo,
                   size_t* workspace, cudnnMathType_t* math, bool* picked) {
  Perf perf[kCount];
  int found = 0;
  A8_DEV_RETURN_IF_ERROR(DnnCheck(query(handle, a, b, conv, c, kCount, &found, perf), what));
  *picked = PickAlgo(perf, found, no_tensor_ops, algo, workspace, math);
  return DevOk();
}

}  // namespace

DevStatus CudnnConv::Create(void* stream, std::unique_ptr<CudnnConv>* out) {
  std::unique_ptr<CudnnConv> c(new CudnnConv());
  A8_DEV_RETURN_IF_ERROR(DnnCheck(cudnnCreate(&c->handle_), "create"));
  A8_DEV_RETURN_IF_ERROR(
      DnnCheck(cudnnSetStream(c->handle_, static_cast<cudaStream_t>(stream)), "set stream"));
  *out = std::move(c);
  return DevOk();
}

CudnnConv::~CudnnConv() {
  for (auto& [key, p] : plans_) {
    if (p.x != nullptr) cudnnDestroyTensorDescriptor(p.x);
    if (p.y != nullptr) cudnnDestroyTensorDescriptor(p.y);
    if (p.w != nullptr) cudnnDestroyFilterDescriptor(p.w);
    if (p.conv != nullptr) cudnnDestroyConvolutionDescriptor(p.conv);
  }
  if (handle_ != nullptr) cudnnDestroy(handle_);
}

DevStatus CudnnConv::MakePlan(const ConvDesc& d, bool tf32, Plan* p) {
  // 1-D as 2-D with height 1.
  const int h = d.rank == 2 ? 0 : -1, wi = d.rank - 1;
  auto dim = [&](const int64_t* v, int64_t dflt, int i) {
    return static_cast<int>(i < 0 ? dflt : v[i]);
  };
  const cudnnDataType_t type = DnnType(d.dtype);
  const int n = static_cast<int>(d.batch), c = static_cast<int>(d.in_channels),
            m = static_cast<int>(d.out_channels);
  A8_DEV_RETURN_IF_ERROR(DnnCheck(cudnnCreateTensorDescriptor(&p->x), "tensor descriptor"));
  A8_DEV_RETURN_IF_ERROR(DnnCheck(cudnnCreateTensorDescriptor(&p->y), "tensor descriptor"));
  A8_DEV_RETURN_IF_ERROR(DnnCheck(cudnnCreateFilterDescriptor(&p->w), "filter descriptor"));
  A8_DEV_RETURN_IF_ERROR(
      DnnCheck(cudnnCreateConvolutionDescriptor(&p->conv), "convolution descriptor"));
  A8_DEV_RETURN_IF_ERROR(
      DnnCheck(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, type, n, c,
                                          dim(d.in_spatial, 1, h), dim(d.in_spatial, 1, wi)),
               "x descriptor"));
  A8_DEV_RETURN_IF_ERROR(
      DnnCheck(cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, type, n, m,
                                          dim(d.out_spatial, 1, h), dim(d.out_spatial, 1, wi)),
               "y descriptor"));
  A8_DEV_RETURN_IF_ERROR(DnnCheck(
      cudnnSetFilter4dDescriptor(p->w, type, CUDNN_TENSOR_NCHW, m, c / static_cast<int>(d.group),
                                 dim(d.kernel, 1, h), dim(d.kernel, 1, wi)),
      "filter descriptor"));
  A8_DEV_RETURN_IF_ERROR(
      DnnCheck(cudnnSetConvolution2dDescriptor(p->conv, dim(d.pads, 0, h), dim(d.pads, 0, wi),
                                               dim(d.strides, 1, h), dim(d.strides, 1, wi),
                                               dim(d.dilations, 1, h), dim(d.dilations, 1, wi),
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
               "convolution descriptor"));
  A8_DEV_RETURN_IF_ERROR(
      DnnCheck(cudnnSetConvolutionGroupCount(p->conv, static_cast<int>(d.group)), "group count"));
  // f32 uses TF32 tensor cores only when the plan allows it (--precision=tf32).
  const bool no_tensor_ops = d.dtype == DType::kF32 && !tf32;
  A8_DEV_RETURN_IF_ERROR(DnnCheck(
      cudnnSetConvolutionMathType(p->conv, no_tensor_ops ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
      "math type"));
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  bool ok = false;
  switch (d.kind) {
    case ConvKind::kForward:
      A8_DEV_RETURN_IF_ERROR(FindAlgo<CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
          cudnnGetConvolutionForwardAlgorithm_v7, "forward algorithm", handle_, p->x, p->w, p->conv,
          p->y, no_tensor_ops, &p->algo, &p->workspace, &math, &ok));
      break;
    case ConvKind::kBackwardData:
      A8_DEV_RETURN_IF_ERROR(FindAlgo<CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          cudnnGetConvolutionBackwardDataAlgorithm_v7, "backward-data algorithm", handle_, p->w,
          p->y, p->conv, p->x, no_tensor_ops, &p->algo, &p->workspace, &math, &ok));
      break;
    case ConvKind::kBackwardFilter:
      A8_DEV_RETURN_IF_ERROR(FindAlgo<CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          cudnnGetConvolutionBackwardFilterAlgorithm_v7, "backward-filter algorithm", handle_, p->x,
          p->y, p->conv, p->w, no_tensor_ops, &p->algo, &p->workspace, &math, &ok));
      break;
  }
  if (!ok) return DevOk();  // no deterministic algorithm: the GEMM fallback runs it
  A8_DEV_RETURN_IF_ERROR(DnnCheck(cudnnSetConvolutionMathType(p->conv, math), "math type"));
  p->usable = true;
  return DevOk();
}

DevStatus CudnnConv::Run(DevCtx& ctx, BlasEngine& engine, const ConvDesc& d, bool* done) {
  *done = false;
  if (!CudnnTakes(d)) return DevOk();
  Key key = {};
  int at = 0;
  key[at++] = static_cast<int64_t>(d.kind);
  key[at++] = static_cast<int64_t>(d.dtype);
  key[at++] = ctx.tf32;
  key[at++] = d.rank;
  key[at++] = d.batch;
  key[at++] = d.in_channels;
  key[at++] = d.out_channels;
  key[at++] = d.group;
  for (int i = 0; i < d.rank; ++i) {
    for (int64_t v :
         {d.in_spatial[i], d.out_spatial[i], d.kernel[i], d.strides[i], d.dilations[i], d.pads[i]})
      key[at++] = v;
  }
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    it = plans_.emplace(key, Plan{}).first;
    // A descriptor or query cuDNN rejects (a type or geometry it lacks) leaves the plan unusable.
    if (!MakePlan(d, ctx.tf32, &it->second).ok()) it->second.usable = false;
  }
  Plan& p = it->second;
  if (!p.usable) return DevOk();
  void* ws = nullptr;
  if (p.workspace > 0)
    A8_DEV_RETURN_IF_ERROR(engine.Buffer(ctx, BlasEngine::kLibWorkspace, p.workspace, &ws));
  const float one = 1.0f, zero = 0.0f;
  const float* beta = d.bias != nullptr ? &one : &zero;
  int64_t x_spatial = 1, y_spatial = 1;
  for (int i = 0; i < d.rank; ++i) {
    x_spatial *= d.in_spatial[i];
    y_spatial *= d.out_spatial[i];
  }
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  switch (d.kind) {
    case ConvKind::kForward:
      if (d.bias != nullptr)
        A8_DEV_RETURN_IF_ERROR(
            FillChannelBias(ctx, d.dtype, d.batch, d.out_channels, y_spatial, d.bias, d.y));
      status = cudnnConvolutionForward(handle_, &one, p.x, d.x, p.w, d.w, p.conv,
                                       static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws,
                                       p.workspace, beta, p.y, d.y);
      break;
    case ConvKind::kBackwardData:
      if (d.bias != nullptr)
        A8_DEV_RETURN_IF_ERROR(
            FillChannelBias(ctx, d.dtype, d.batch, d.in_channels, x_spatial, d.bias, d.x));
      status = cudnnConvolutionBackwardData(handle_, &one, p.w, d.w, p.y, d.y, p.conv,
                                            static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo), ws,
                                            p.workspace, beta, p.x, d.x);
      break;
    case ConvKind::kBackwardFilter:
      status = cudnnConvolutionBackwardFilter(handle_, &one, p.x, d.x, p.y, d.y, p.conv,
                                              static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo),
                                              ws, p.workspace, &zero, p.w, d.w);
      break;
  }
  if (status == CUDNN_STATUS_SUCCESS) {
    *done = true;
    return DevOk();
  }
  // A rejected launch writes nothing the fallback does not rewrite (it refills the bias too),
  // so outside capture the GEMM path takes this descriptor from now on.
  if (ctx.capturing || status != CUDNN_STATUS_NOT_SUPPORTED) return DnnCheck(status, "convolution");
  p.usable = false;
  return DevOk();
}

}  // namespace a8::A8_DEV_NS

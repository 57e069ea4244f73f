#include "runtime/device/device_backend.h"

#include <algorithm>
#include <cstring>

#include "runtime/comm/communicator.h"
#if defined(A8_DEVICE_IS_CUDA)
#include "runtime/comm/comm_nccl.h"
#endif

namespace a8::A8_DEV_NS {
namespace {

#if defined(A8_DEVICE_IS_CUDA)
constexpr bool kIsCuda = true;
#else
constexpr bool kIsCuda = false;
#endif

// CONSTANT buffers up to this size get a host copy (shape-like operands, scalars).
constexpr uint64_t kConstHostLimit = 64 << 10;

// BindBuffer, plus the host copy of a small CONSTANT buffer.
TensorArg Bind(const plan::Plan& plan, const std::vector<uint8_t*>& buffers, int id,
               const std::vector<std::vector<uint8_t>>& const_host) {
  TensorArg t = BindBuffer(plan, buffers, id);
  if (!t.present) return t;
  const plan::Buffer& b = plan.buffers(id);
  if (!const_host[id].empty() || (b.role() == plan::Buffer::CONSTANT && b.bytes() == 0))
    t.host = const_host[id].data();
  return t;
}

bool MultiRank(const StepInfo& step) { return step.comm != nullptr && step.comm->size() > 1; }

}  // namespace

Status DeviceBackend::AttachComm(const StepInfo& step) {
  if (!MultiRank(step) || step.comm == attached_comm_) return Status::Ok();
#if defined(A8_DEVICE_IS_CUDA)
  // NCCL orders its reductions after the gradients through events on this stream.
  auto* nccl = dynamic_cast<NcclCommunicator*>(step.comm);
  if (nccl == nullptr)
    return Internal("the CUDA backend needs the NCCL communicator for data parallel runs, got {}",
                    step.comm->description());
  nccl->SetComputeStream(static_cast<cudaStream_t>(stream_));
#endif
  attached_comm_ = step.comm;
  return Status::Ok();
}

Status DeviceBackend::EndOfStep(const StepInfo& step) {
  *error_host_ = 0;
  A8_RETURN_IF_ERROR(FromDev(CopyToHost(error_host_, error_dev_, sizeof(int32_t), stream_)));
  A8_RETURN_IF_ERROR(FromDev(StreamSync(stream_)));
  if (const int32_t tag = *error_host_; tag > 0) {
    // A kernel met an index or a label out of range (it wrote zeros or NaN, nothing out of
    // bounds); the device cannot say which element without a sync per kernel.
    const int k = tag - 1;
    const plan::Kernel* kern =
        k < static_cast<int>(kernels_.size()) ? &kernels_[k].args.kernel() : nullptr;
    return InvalidInput(
        "kernel {} '{}' (node '{}'): an index or label input is out of range (the CUDA kernel "
        "wrote zeros or NaN in its place); the CPU backend names the element: rerun with "
        "--backend=cpu",
        k, kern != nullptr ? kern->name() : "?", kern != nullptr ? kern->node() : "?");
  }
#if defined(A8_DEVICE_IS_CUDA)
  // A collective that failed or timed out (the NCCL watchdog) fails the step.
  if (auto* nccl = dynamic_cast<NcclCommunicator*>(step.comm)) A8_RETURN_IF_ERROR(nccl->Health());
#else
  (void)step;
#endif
  return Status::Ok();
}

StatusOr<std::unique_ptr<DeviceBackend>> DeviceBackend::Create(DeviceBackendOptions options) {
  A8_RETURN_IF_ERROR(FromDev(DeviceAvailable()));
  std::unique_ptr<DeviceBackend> be(new DeviceBackend());
  be->options_ = options;
  A8_RETURN_IF_ERROR(FromDev(StreamCreate(&be->stream_)));
  void* p = nullptr;
  A8_RETURN_IF_ERROR(FromDev(Malloc(&p, sizeof(StepDev))));
  be->step_dev_ = static_cast<StepDev*>(p);
  A8_RETURN_IF_ERROR(FromDev(MallocHost(&p, sizeof(StepDev))));
  be->step_host_ = new (p) StepDev();
  A8_RETURN_IF_ERROR(FromDev(Malloc(&p, sizeof(int32_t))));
  be->error_dev_ = static_cast<int32_t*>(p);
  A8_RETURN_IF_ERROR(FromDev(MallocHost(&p, sizeof(int32_t))));
  be->error_host_ = static_cast<int32_t*>(p);
  A8_RETURN_IF_ERROR(FromDev(MakeBlasEngine(be->stream_, &be->blas_)));
  be->ctx_.error_word = be->error_dev_;
  be->ctx_.stream = be->stream_;
  be->ctx_.step = be->step_dev_;
  be->ctx_.blas = be->blas_.get();
  return be;
}

DeviceBackend::~DeviceBackend() {
  if (stream_ != nullptr) (void)StreamSync(stream_);
  for (Sequence& s : sequences_) GraphDestroy(s.graph);
  blas_.reset();
  ReleaseScratch(ctx_);
  for (void* r : regions_) Free(r);
  if (step_dev_ != nullptr) Free(step_dev_);
  if (error_dev_ != nullptr) Free(error_dev_);
  if (error_host_ != nullptr) FreeHost(error_host_);
  if (step_host_ != nullptr) FreeHost(step_host_);
  StreamDestroy(stream_);
}

std::string DeviceBackend::name() const { return kIsCuda ? "cuda" : "cuda-emu"; }
std::string DeviceBackend::device() const { return DeviceDescription(); }
uint64_t DeviceBackend::peak_device_bytes() const { return PeakMemory(); }

StatusOr<uint8_t*> DeviceBackend::AllocateRegion(uint64_t bytes) {
  void* p = nullptr;
  DevStatus s = Malloc(&p, static_cast<size_t>(bytes));
  if (!s.ok()) return Internal("cannot allocate {} bytes of device memory: {}", bytes, s.what);
  regions_.push_back(p);
  return static_cast<uint8_t*>(p);
}

Status DeviceBackend::CopyIn(uint8_t* dst, const void* src, uint64_t bytes) {
  // Pageable host memory: the copy has finished reading `src` when the call returns only after
  // a sync, and callers reuse their buffers at once.
  A8_RETURN_IF_ERROR(FromDev(CopyToDevice(dst, src, bytes, stream_)));
  return FromDev(StreamSync(stream_));
}

Status DeviceBackend::CopyOut(void* dst, const uint8_t* src, uint64_t bytes) {
  A8_RETURN_IF_ERROR(FromDev(CopyToHost(dst, src, bytes, stream_)));
  return FromDev(StreamSync(stream_));
}

Status DeviceBackend::Fill(uint8_t* dst, uint8_t byte, uint64_t bytes) {
  return FromDev(A8_DEV_NS::Fill(dst, byte, bytes, stream_));
}

Status DeviceBackend::Prepare(const plan::Plan& plan, const std::vector<uint8_t*>& buffers) {
  kernels_.clear();
  const_host_.assign(plan.buffers_size(), {});
  // Host copies of the small constants (their device bytes were uploaded by the executor).
  for (int id = 0; id < plan.buffers_size() && id < static_cast<int>(buffers.size()); ++id) {
    const plan::Buffer& b = plan.buffers(id);
    if (b.role() != plan::Buffer::CONSTANT || b.bytes() == 0 || b.bytes() > kConstHostLimit)
      continue;
    const_host_[id].resize(b.bytes());
    A8_RETURN_IF_ERROR(CopyOut(const_host_[id].data(), buffers[id], b.bytes()));
  }
  for (int k = 0; k < plan.kernels_size(); ++k) {
    const plan::Kernel& kern = plan.kernels(k);
    auto where = [&] {
      return fmt::format("kernel {} '{}' (node '{}')", k, kern.name(), kern.node());
    };
    const DevKernelEntry* e = FindDeviceKernel(kern.op());
    if (e == nullptr)
      return Unsupported("{}: the CUDA backend has no implementation of op '{}'", where(),
                         kern.op());
    std::vector<TensorArg> in, out, tattrs;
    for (int id : kern.inputs()) in.push_back(Bind(plan, buffers, id, const_host_));
    for (int id : kern.outputs()) out.push_back(Bind(plan, buffers, id, const_host_));
    for (const plan::Attribute& a : kern.attrs())
      if (a.has_tensor_buffer())
        tattrs.push_back(Bind(plan, buffers, a.tensor_buffer(), const_host_));
    const std::vector<TensorArg>& side = e->type_input >= 0 ? in : out;
    const int ti = std::max(e->type_input, 0);
    if (ti >= static_cast<int>(side.size()) || !side[ti].present)
      return InvalidInput("{}: missing the {} {} that gives its dtype", where(),
                          e->type_input >= 0 ? "input" : "output", ti);
    const DType t = side[ti].dtype;
    if (std::find(e->types.begin(), e->types.end(), t) == e->types.end())
      return Unsupported("{}: the CUDA kernel of '{}' does not take {} (it takes {})", where(),
                         kern.op(), DTypeName(t), DTypeList(e->types));
    kernels_.push_back(Prepared{e,
                                KernelArgs(&kern, std::move(in), std::move(out), std::move(tattrs)),
                                kern.tf32_inputs_size() > 0});
  }
  return Status::Ok();
}

Status DeviceBackend::SetStep(const StepInfo& step) {
  // The pinned copy is read by the device copy queued next; the previous sequence's copy has
  // finished (every sequence ends with a sync), so rewriting it here is safe.
  step_host_->step = step.step;
  step_host_->seed = step.seed;
  step_host_->eval = step.eval ? 1 : 0;
  A8_RETURN_IF_ERROR(FromDev(A8_DEV_NS::Fill(error_dev_, 0, sizeof(int32_t), stream_)));
  return FromDev(CopyToDevice(step_dev_, step_host_, sizeof(StepDev), stream_));
}

Status DeviceBackend::Run(int index, const StepInfo& step) {
  if (index < 0 || index >= static_cast<int>(kernels_.size()))
    return Internal("kernel index {} out of range (prepared {})", index, kernels_.size());
  A8_RETURN_IF_ERROR(AttachComm(step));
  A8_RETURN_IF_ERROR(SetStep(step));
  Prepared& p = kernels_[index];
  p.args.step = step;
  ctx_.error_tag = index + 1;
  ctx_.tf32 = p.tf32;
  A8_RETURN_IF_ERROR(p.entry->fn(p.args, ctx_));
  // Kernel by kernel (checks between kernels): each is finished on return.
  return EndOfStep(step);
}

Status DeviceBackend::RunEager(const std::vector<int>& kernels, const std::vector<Copy>& copies,
                               const StepInfo& step) {
  for (int k : kernels) {
    if (k < 0 || k >= static_cast<int>(kernels_.size()))
      return Internal("kernel index {} out of range (prepared {})", k, kernels_.size());
    Prepared& p = kernels_[k];
    p.args.step = step;
    ctx_.error_tag = k + 1;
    ctx_.tf32 = p.tf32;
    Status s = p.entry->fn(p.args, ctx_);
    if (!s.ok()) {
      const plan::Kernel& kern = p.args.kernel();
      return s.WithContext(fmt::format("kernel {} '{}' (node '{}')", k, kern.name(), kern.node()));
    }
  }
  for (const Copy& c : copies) {
    // An update written in place over its state (plan-memory) is its own copy.
    if (c.dst == c.src || c.bytes == 0) continue;
    A8_RETURN_IF_ERROR(FromDev(CopyOnDevice(c.dst, c.src, c.bytes, stream_)));
  }
  return Status::Ok();
}

Status DeviceBackend::RunSequence(int key, const std::vector<int>& kernels,
                                  const std::vector<Copy>& copies, const StepInfo& step) {
  A8_RETURN_IF_ERROR(AttachComm(step));
  Sequence* seq = nullptr;
  // Data parallel steps run eagerly: the NCCL communicator's bookkeeping (events, the watchdog's
  // deadlines) happens on the host at each launch, which a replayed graph would skip.
  if (key >= 0 && kIsCuda && options_.graphs && !MultiRank(step)) {
    if (key >= static_cast<int>(sequences_.size())) sequences_.resize(key + 1);
    seq = &sequences_[key];
  }
  // Replay, or capture on the second run (the first sized scratch and algorithm caches).
  if (seq != nullptr && seq->graph != nullptr) {
    step_host_->step = step.step;
    step_host_->seed = step.seed;
    step_host_->eval = step.eval ? 1 : 0;
    A8_RETURN_IF_ERROR(FromDev(GraphLaunch(seq->graph, stream_)));
    ++graph_replays_;
    return EndOfStep(step);
  }
  if (seq != nullptr && seq->runs >= 1) {
    A8_RETURN_IF_ERROR(FromDev(GraphBegin(stream_)));
    ctx_.capturing = true;
    Status s = SetStep(step);
    if (s.ok()) s = RunEager(kernels, copies, step);
    ctx_.capturing = false;
    void* graph = nullptr;
    DevStatus end = GraphEnd(stream_, &graph);
    A8_RETURN_IF_ERROR(s.WithContext("while capturing the step as a CUDA graph"));
    A8_RETURN_IF_ERROR(FromDev(end));
    seq->graph = graph;
    ++seq->runs;
    // The capture queued nothing: run the graph once for this step.
    A8_RETURN_IF_ERROR(FromDev(GraphLaunch(seq->graph, stream_)));
    ++graph_replays_;
    return EndOfStep(step);
  }
  A8_RETURN_IF_ERROR(SetStep(step));
  A8_RETURN_IF_ERROR(RunEager(kernels, copies, step));
  if (seq != nullptr) ++seq->runs;
  return EndOfStep(step);
}

}  // namespace a8::A8_DEV_NS

namespace a8 {
#if defined(A8_DEVICE_IS_CUDA)
StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(bool graphs) {
  A8_ASSIGN_OR_RETURN(auto be, cuda::DeviceBackend::Create({graphs}));
  return std::unique_ptr<Backend>(std::move(be));
}
#else
StatusOr<std::unique_ptr<Backend>> MakeCudaEmuBackend() {
  A8_ASSIGN_OR_RETURN(auto be, emu::DeviceBackend::Create());
  return std::unique_ptr<Backend>(std::move(be));
}
#endif
}  // namespace a8

#include "runtime/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "kernels/common/tf32.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/stable_regions.h"
#include "kernels/device/blas.h"
#include "kernels/emu/run_on_host.h"
#include "runtime/core/op_registry.h"
#include "runtime/cpu/channels_last.h"
#include "runtime/device/device_registry.h"

namespace a8 {
namespace {

const emu::DevKernelEntry* SharedEntry(const void* p) {
  return static_cast<const emu::DevKernelEntry*>(p);
}

// The floats that kernel `kern`'s TF32 copies of its tf32_inputs take (those that name an f32
// input; Prepare rejects the others).
int64_t Tf32Floats(const plan::Plan& plan, const plan::Kernel& kern) {
  int64_t n = 0;
  for (int i : kern.tf32_inputs()) {
    const int id = i >= 0 && i < kern.inputs_size() ? kern.inputs(i) : -1;
    if (id < 0 || id >= plan.buffers_size()) continue;
    const plan::TensorType& t = plan.buffers(id).type();
    if (t.dtype() == plan::F32) n += NumElements(Dims(t.dims().begin(), t.dims().end()));
  }
  return n;
}

bool Takes(const std::vector<DType>& types, DType t) {
  return std::find(types.begin(), types.end(), t) != types.end();
}

// The dtype an entry dispatches on: input `type_input`, or output 0 when it is negative.
template <typename Where>
StatusOr<DType> EntryDType(int type_input, const std::vector<TensorArg>& in,
                           const std::vector<TensorArg>& out, const Where& where) {
  const std::vector<TensorArg>& side = type_input >= 0 ? in : out;
  const int ti = std::max(type_input, 0);
  if (ti >= static_cast<int>(side.size()) || !side[ti].present)
    return InvalidInput("{}: missing the {} {} that gives its dtype", where(),
                        type_input >= 0 ? "input" : "output", ti);
  return side[ti].dtype;
}

}  // namespace

// The host context of the shared entries this backend runs (kernels/emu/run_on_host.h).
struct CpuBackend::Host : emu::HostDevice {};

CpuBackend::CpuBackend(cpu::KernelMode mode) : mode_(mode), host_(std::make_unique<Host>()) {
  cpu::internal::UseSingleThreadedBlas();  // before the first step: see blas.h
}
CpuBackend::~CpuBackend() { cpu::ForgetStableRegions(this); }

Status CpuBackend::Prepare(const plan::Plan& plan, const std::vector<uint8_t*>& buffers) {
  kernels_.clear();
  cpu::ForgetStableRegions(this);
  if (mode_ == cpu::KernelMode::kFast) {
    for (const plan::Buffer& b : plan.buffers()) {
      const bool weight_like = b.role() == plan::Buffer::PARAMETER ||
                               b.role() == plan::Buffer::STATE ||
                               b.role() == plan::Buffer::CONSTANT;
      if (b.region() != plan::Buffer::PERSISTENT || !weight_like) continue;
      if (b.id() >= 0 && b.id() < static_cast<int>(buffers.size()))
        cpu::WatchStableRegion(this, buffers[b.id()], b.bytes());
    }
  }
  kernels_.reserve(plan.kernels_size());
  int64_t tf32_floats = 0;
  for (const plan::Kernel& kern : plan.kernels())
    tf32_floats = std::max(tf32_floats, Tf32Floats(plan, kern));
  tf32_scratch_.assign(static_cast<size_t>(tf32_floats), 0.0f);
  int64_t widened_floats = 0;  // the fast mode's f32 copies (widened_operands.h)
  if (mode_ == cpu::KernelMode::kFast) {
    for (const plan::Kernel& kern : plan.kernels())
      widened_floats = std::max(widened_floats, WidenedFloats(plan, kern));
  }
  widened_scratch_.assign(static_cast<size_t>(widened_floats), 0.0f);
  // Channels-last activations (channels_last.h): the fast mode, unless something reads
  // intermediates or A8_CPU_CHANNELS_LAST=0.
  const char* env = std::getenv("A8_CPU_CHANNELS_LAST");
  std::vector<bool> nhwc;
  if (mode_ == cpu::KernelMode::kFast && !observed_ &&
      (env == nullptr || std::string_view(env) != "0"))
    nhwc = ChannelsLastBuffers(plan);
  channels_last_buffers_ = static_cast<int>(std::count(nhwc.begin(), nhwc.end(), true));
  auto bind = [&](int id) {
    TensorArg t = BindBuffer(plan, buffers, id);
    t.channels_last = id >= 0 && id < static_cast<int>(nhwc.size()) && nhwc[id];
    return t;
  };
  for (int k = 0; k < plan.kernels_size(); ++k) {
    const plan::Kernel& kern = plan.kernels(k);
    auto where = [&] {
      return fmt::format("kernel {} '{}' (node '{}')", k, kern.name(), kern.node());
    };
    const CpuKernelEntry* e = FindCpuKernel(kern.op());
    const emu::DevKernelEntry* shared = e == nullptr ? emu::FindDeviceKernel(kern.op()) : nullptr;
    if (e == nullptr && shared == nullptr)
      return Unsupported("{}: the CPU backend has no implementation of op '{}'", where(),
                         kern.op());
    std::vector<TensorArg> in, out, tattrs;
    for (int id : kern.inputs()) in.push_back(bind(id));
    for (int id : kern.outputs()) out.push_back(bind(id));
    for (const plan::Attribute& a : kern.attrs())
      if (a.has_tensor_buffer()) tattrs.push_back(BindBuffer(plan, buffers, a.tensor_buffer()));
    A8_ASSIGN_OR_RETURN(
        DType t, EntryDType(e != nullptr ? e->type_input : shared->type_input, in, out, where));
    const std::vector<DType>& types = e != nullptr ? e->types : shared->types;
    if (!Takes(types, t))
      return Unsupported("{}: the CPU kernel of '{}' does not take {} (it takes {})", where(),
                         kern.op(), DTypeName(t), DTypeList(types));
    if (shared != nullptr) {
      // Device entries read shape-like CONSTANT operands through TensorArg::host; here the
      // device memory is host memory.
      for (TensorArg& t : in) t.host = t.data;
    }
    if (shared != nullptr && host_->blas == nullptr) {
      A8_RETURN_IF_ERROR(emu::FromDev(emu::MakeBlasEngine(nullptr, &host_->blas)));
      host_->ctx.blas = host_->blas.get();
    }
    // Kernel.tf32_inputs: the kernel reads TF32 copies of those operands (kernels/common/tf32.h),
    // as the CUDA backend's GEMMs and convolutions read them on TF32 tensor cores.
    std::vector<Tf32Operand> tf32;
    float* next = tf32_scratch_.data();
    for (int i : kern.tf32_inputs()) {
      if (i < 0 || i >= static_cast<int>(in.size()) || !in[i].present || in[i].dtype != DType::kF32)
        return InvalidInput("{}: tf32_inputs names input {}, which is not a present f32 input",
                            where(), i);
      tf32.push_back({reinterpret_cast<const float*>(in[i].data), next, in[i].count()});
      in[i].data = reinterpret_cast<uint8_t*>(next);
      next += in[i].count();
    }
    std::vector<std::pair<uint8_t*, size_t>> writes;
    for (const TensorArg& t : out)
      if (t.present && t.data != nullptr && cpu::OverlapsStableRegion(t.data, t.bytes()))
        writes.emplace_back(t.data, t.bytes());
    const FastKernelFn fast = mode_ == cpu::KernelMode::kFast && shared != nullptr
                                  ? FindFastNormKernel(kern, in, out)
                                  : nullptr;
    std::vector<WidenedOperand> widened;
    if (mode_ == cpu::KernelMode::kFast && shared != nullptr && fast == nullptr &&
        RunsWidened(kern.op()))
      widened = WidenOperands(&in, &out, widened_scratch_.data());
    kernels_.push_back(Prepared{e, shared,
                                KernelArgs(&kern, std::move(in), std::move(out), std::move(tattrs)),
                                std::move(tf32), std::move(writes), std::move(widened), fast});
  }
  return Status::Ok();
}

Status CpuBackend::Run(int index, const StepInfo& step) {
  if (index < 0 || index >= static_cast<int>(kernels_.size()))
    return Internal("kernel index {} out of range (prepared {})", index, kernels_.size());
  Prepared& p = kernels_[index];
  p.args.step = step;
  for (const Tf32Operand& t : p.tf32) {
    cpu::ParallelFor(t.n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) t.dst[i] = RoundToTf32(t.src[i]);
    });
  }
  const cpu::ScopedKernelMode scoped_mode(mode_);
  struct ReportWrites {
    const Prepared& p;
    ~ReportWrites() {
      for (const auto& [data, bytes] : p.writes) cpu::NoteWrite(data, bytes);
    }
  } report{p};
  if (p.entry != nullptr) return p.entry->fn(p.args);
  if (p.fast != nullptr) return p.fast(p.args);
  host_->step.step = step.step;
  host_->step.seed = step.seed;
  host_->step.eval = step.eval ? 1 : 0;
  host_->error = 0;
  host_->ctx.error_tag = index + 1;
  WidenInputs(p.widened);
  A8_RETURN_IF_ERROR(SharedEntry(p.shared)->fn(p.args, host_->ctx));
  NarrowOutputs(p.widened);
  // (The executor names the kernel: RunKernel's context.)
  if (host_->error != 0) return InvalidInput("an index or label input is out of range");
  return Status::Ok();
}

Status CpuBackend::RunSequence(int key, const std::vector<int>& kernels,
                               const std::vector<Copy>& copies, const StepInfo& step) {
  Status s = Backend::RunSequence(key, kernels, copies, step);
  for (const Copy& c : copies) cpu::NoteWrite(c.dst, c.bytes);
  return s;
}

Status CpuBackend::CopyIn(uint8_t* dst, const void* src, uint64_t bytes) {
  Status s = Backend::CopyIn(dst, src, bytes);
  cpu::NoteWrite(dst, bytes);
  return s;
}

Status CpuBackend::Fill(uint8_t* dst, uint8_t byte, uint64_t bytes) {
  Status s = Backend::Fill(dst, byte, bytes);
  cpu::NoteWrite(dst, bytes);
  return s;
}

std::string CpuBackend::device() const {
  if (mode_ == cpu::KernelMode::kReference) return "reference kernels";
  return "fast kernels (GEMM: " + cpu::internal::FastGemmDescription() + ")";
}

std::unique_ptr<Backend> MakeCpuBackend(cpu::KernelMode mode) {
  return std::make_unique<CpuBackend>(mode);
}

const std::vector<CpuKernelEntry>& CpuBackendRegistry() {
  static const std::vector<CpuKernelEntry> rows = [] {
    std::vector<CpuKernelEntry> r = CpuKernelRegistry();
    // The shared entries of the ops without a CPU kernel, each run on a fresh host context.
    for (const emu::DevKernelEntry& e : emu::DeviceKernelRegistry()) {
      if (FindCpuKernel(e.op) != nullptr) continue;
      KernelFn on_host = [dev = e.fn](const KernelArgs& a) -> Status {
        emu::HostDevice host;
        host.step.step = a.step.step;
        host.step.seed = a.step.seed;
        host.step.eval = a.step.eval ? 1 : 0;
        A8_RETURN_IF_ERROR(dev(a.WithHostInputs(), host.ctx));
        if (host.error != 0)
          return InvalidInput("{}: an index or label input is out of range", a.kernel().op());
        return Status::Ok();
      };
      r.push_back({e.op, e.types, e.type_input, std::move(on_host),
                   e.note.empty() ? "shared body" : "shared body; " + e.note});
    }
    SortByOp(&r);
    return r;
  }();
  return rows;
}

const CpuKernelEntry* FindCpuBackendKernel(const std::string& op) {
  return FindByOp(CpuBackendRegistry(), op);
}

}  // namespace a8

#include "runtime/core/executor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/ir/types.h"
#include "kernels/common/float16.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/parallel.h"
#include "runtime/comm/communicator.h"
#include "runtime/core/initial_values.h"
#include "runtime/core/numerics.h"
#include "runtime/core/plan_target.h"
#include "runtime/core/trace.h"

namespace a8 {
namespace {

constexpr size_t kAlign = 64;
constexpr uint8_t kPoisonByte = 0xFF;

// Regions of 2 MiB and more are aligned to 2 MiB and marked for transparent huge pages (where
// the system's THP mode is `madvise`, the default here): the arena is touched by every kernel of
// every step, and fewer TLB misses is the point (tools/bench/README.md has the one measurement).
constexpr size_t kHugePage = size_t{2} << 20;

// Buffer `i` (F16/BF16) from its FP32 master's initial bytes, rounded as the Cast kernel rounds
// (Buffer.init_cast_of; ReadPlan validated both buffers). A master without an initial value is
// zeros, and so is its copy.
Status FillWorkingCopy(const plan::Plan& p, int i, const PlanFile& file, uint8_t* dst,
                       Backend& be) {
  const plan::Buffer& b = p.buffers(i);
  const plan::Buffer& master = p.buffers(b.init_cast_of());
  if (!master.has_init()) return Status::Ok();
  const uint8_t* bytes = file.BlobBytes(master.blob_offset(), master.bytes());
  if (bytes == nullptr || master.bytes() != 2 * b.bytes())
    return Internal("buffer {} ('{}'): init_cast_of {} does not fit", i, b.name(),
                    b.init_cast_of());
  const bool half = b.type().dtype() == plan::F16;
  const float* src = reinterpret_cast<const float*>(bytes);
  // Host memory: the CPU Cast kernel itself writes the copy (over the thread pool).
  if (be.host_memory()) {
    return cpu::Cast(DType::kF32, half ? DType::kF16 : DType::kBF16,
                     static_cast<int64_t>(b.bytes() / 2), src, dst);
  }
  // Device memory: rounded on the host in chunks that stay in the cache on their way there.
  constexpr size_t kChunk = size_t{1} << 15;
  std::vector<uint16_t> low(std::min<size_t>(kChunk, b.bytes() / 2));
  for (size_t at = 0; at < b.bytes() / 2; at += kChunk) {
    const size_t n = std::min(kChunk, b.bytes() / 2 - at);
    for (size_t k = 0; k < n; ++k) {
      low[k] = half ? FloatToHalfBits(src[at + k]) : FloatToBFloat16Bits(src[at + k]);
    }
    A8_RETURN_IF_ERROR(be.CopyIn(dst + 2 * at, low.data(), 2 * n));
  }
  return Status::Ok();
}

// Zeroed host memory. Regions of 2 MiB and more are fresh anonymous mappings: the kernel hands
// them out as zeros when first touched, so nothing here writes (or faults in) a byte that the
// blob or a step does not. With `huge`, they are marked for huge pages now; else the caller
// marks them (MarkHugePages) once it has written what it writes at load.
AlignedBytes AllocateAligned(uint64_t bytes, bool huge) {
  if (bytes < kHugePage) {
    const size_t n =
        static_cast<size_t>((std::max<uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign);
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlign, n));
    if (p != nullptr) std::memset(p, 0, n);
    return AlignedBytes(p);
  }
  const size_t n = static_cast<size_t>((bytes + kHugePage - 1) / kHugePage * kHugePage);
  void* map =
      mmap(nullptr, n + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return AlignedBytes(nullptr);
  // Keep the 2 MiB-aligned part; give back the rest.
  auto* base = static_cast<uint8_t*>(map);
  const uintptr_t addr = reinterpret_cast<uintptr_t>(base);
  uint8_t* p = base + ((kHugePage - addr % kHugePage) % kHugePage);
  if (p > base) munmap(base, static_cast<size_t>(p - base));
  const size_t tail = static_cast<size_t>(base + n + kHugePage - (p + n));
  if (tail > 0) munmap(p + n, tail);
  if (huge) madvise(p, n, MADV_HUGEPAGE);  // advice only: failure is harmless
  return AlignedBytes(p, AlignedFree{n});
}

// Marks a region from AllocateAligned(bytes >= 2 MiB, huge=false) for huge pages. The pages
// written so far stay 4 KiB pages until khugepaged merges them in the background; pages first
// touched from now on are huge.
//
// Why not at allocation: a fault in a MADV_HUGEPAGE region compacts memory on the spot when no
// free 2 MiB page is at hand (the `defrag` default, madvise), and copying the initial values
// into the persistent region at load took 0.3-1.0 s of system time that way on the shared
// 2-core machine, against 0.16-0.23 s with 4 KiB pages (three alternating runs each, 12-layer
// BERT-base training plan): the difference between starting the first step within a second of
// launch or not.
void MarkHugePages(uint8_t* p, uint64_t bytes) {
  if (bytes < kHugePage) return;
  const size_t n = static_cast<size_t>((bytes + kHugePage - 1) / kHugePage * kHugePage);
  madvise(p, n, MADV_HUGEPAGE);  // advice only: failure is harmless
}

}  // namespace

void AlignedFree::operator()(uint8_t* p) const {
  if (mapped > 0) {
    munmap(p, mapped);
  } else {
    std::free(p);
  }
}

StatusOr<std::unique_ptr<Executor>> Executor::Create(PlanFile plan,
                                                     std::unique_ptr<Backend> backend,
                                                     ExecutorOptions options) {
  std::unique_ptr<Executor> ex(new Executor());
  ex->file_ = std::move(plan);
  ex->backend_ = std::move(backend);
  ex->options_ = options;
  const plan::Plan& p = ex->file_.plan;
  const int num_buffers = p.buffers_size();
  const int num_kernels = p.kernels_size();

  Backend& be = *ex->backend_;
  A8_RETURN_IF_ERROR(CheckPlanTarget(p.target(), be.name()));
  if (be.host_memory()) {
    ex->persistent_ = AllocateAligned(p.persistent_bytes(), /*huge=*/false);
    ex->arena_ = AllocateAligned(p.arena_bytes(), /*huge=*/true);
    if (!ex->persistent_ || !ex->arena_)
      return Internal("cannot allocate {} persistent + {} arena bytes", p.persistent_bytes(),
                      p.arena_bytes());
    ex->persistent_base_ = ex->persistent_.get();
    ex->arena_base_ = ex->arena_.get();
  } else {
    // Device memory, owned by the backend; zeroed like the host regions.
    A8_ASSIGN_OR_RETURN(ex->persistent_base_, be.AllocateRegion(p.persistent_bytes()));
    A8_ASSIGN_OR_RETURN(ex->arena_base_, be.AllocateRegion(p.arena_bytes()));
    A8_RETURN_IF_ERROR(be.Fill(ex->persistent_base_, 0, p.persistent_bytes()));
    A8_RETURN_IF_ERROR(be.Fill(ex->arena_base_, 0, p.arena_bytes()));
  }
  ex->ptrs_.assign(num_buffers, nullptr);
  // Host memory: the initial values stay where ReadPlanFile put them when it can (no copy, no
  // zero-filled page under them); `ex->file_`'s blob then holds the current values.
  std::optional<std::vector<uint8_t*>> in_place;
  if (be.host_memory()) in_place = InitialValuesInPlace(ex->file_);
  for (int i = 0; i < num_buffers; ++i) {
    const plan::Buffer& b = p.buffers(i);
    bool persistent = b.region() == plan::Buffer::PERSISTENT;
    uint64_t size = persistent ? p.persistent_bytes() : p.arena_bytes();
    if (b.offset() > size || b.bytes() > size - b.offset())
      return Internal("buffer {} ('{}'): offset {} + {} bytes is outside its region ({} bytes)", i,
                      b.name(), b.offset(), b.bytes(), size);
    ex->ptrs_[i] = (persistent ? ex->persistent_base_ : ex->arena_base_) + b.offset();
    if (in_place && (*in_place)[i] != nullptr) {
      ex->ptrs_[i] = (*in_place)[i];  // its initial value (or its home's) is already there
    } else if (persistent && b.has_init() && b.bytes() > 0) {  // an empty tensor has nothing
      const uint8_t* init = ex->file_.BlobBytes(b.blob_offset(), b.bytes());
      if (init == nullptr)
        return Internal("buffer {} ('{}'): blob range {} + {} is outside the blob ({} bytes)", i,
                        b.name(), b.blob_offset(), b.bytes(), ex->file_.BlobSize());
      if (be.host_memory()) {  // over the thread pool: first-touch faults split with the copy
        uint8_t* dst = ex->ptrs_[i];
        cpu::ParallelFor(static_cast<int64_t>(b.bytes()), 1, [&](int64_t begin, int64_t end) {
          std::memcpy(dst + begin, init + begin, static_cast<size_t>(end - begin));
        });
      } else {
        A8_RETURN_IF_ERROR(be.CopyIn(ex->ptrs_[i], init, b.bytes()));
      }
    }
    if (persistent && b.has_init_cast_of()) {
      A8_RETURN_IF_ERROR(FillWorkingCopy(p, i, ex->file_, ex->ptrs_[i], be));
    }
  }
  if (be.host_memory()) MarkHugePages(ex->persistent_base_, p.persistent_bytes());
  for (const plan::Binding& bind : p.inputs())
    if (bind.buffer() < 0 || bind.buffer() >= num_buffers)
      return Internal("input '{}': buffer {} out of range", bind.name(), bind.buffer());
  for (const plan::Binding& bind : p.outputs())
    if (bind.buffer() < 0 || bind.buffer() >= num_buffers)
      return Internal("output '{}': buffer {} out of range", bind.name(), bind.buffer());

  // Alias roots, and per kernel the ARENA buffers whose last use it is.
  ex->alias_root_.resize(num_buffers);
  for (int i = 0; i < num_buffers; ++i) {
    int r = i, hops = 0;
    while (p.buffers(r).alias_of() >= 0 && p.buffers(r).alias_of() < num_buffers &&
           hops++ < num_buffers)
      r = p.buffers(r).alias_of();
    ex->alias_root_[i] = r;
  }
  if (p.training()) A8_RETURN_IF_ERROR(ex->ValidateTraining());
  // Outputs and update sources are read after the last kernel: never poisoned within a step.
  ex->live_to_end_.assign(num_buffers, false);
  for (int i = 0; i < num_buffers; ++i)
    ex->live_to_end_[i] = p.buffers(i).role() == plan::Buffer::OUTPUT;
  if (p.training())
    for (const plan::Update& u : p.updates()) ex->live_to_end_[u.source()] = true;
  ex->dies_after_.assign(num_kernels, {});
  for (int i = 0; i < num_buffers; ++i) {
    const plan::Buffer& b = p.buffers(i);
    if (b.region() != plan::Buffer::ARENA || ex->live_to_end_[i]) continue;
    if (b.last() >= 0 && b.last() < num_kernels) ex->dies_after_[b.last()].push_back(i);
  }
  for (int i = 0; i < num_buffers; ++i) {
    plan::Buffer::Role role = p.buffers(i).role();
    if (role == plan::Buffer::PARAMETER || role == plan::Buffer::STATE)
      ex->checkpoint_buffers_.push_back(i);
  }

  if (ex->options_.check_numerics) ex->PlanNumericsChecks();
  for (int k = 0; k < num_kernels; ++k) ex->all_kernels_.push_back(k);
  if (p.training()) {
    ex->eval_kernels_.assign(p.train().eval_kernels().begin(), p.train().eval_kernels().end());
    for (const plan::Update& u : p.updates())
      ex->update_copies_.push_back(
          {ex->ptrs_[u.target()], ex->ptrs_[u.source()], p.buffers(u.target()).bytes()});
  }

  ex->backend_->SetIntermediatesObserved(ex->options_.check_numerics ||
                                         ex->options_.after_kernel != nullptr);
  A8_RETURN_IF_ERROR(ex->backend_->Prepare(p, ex->ptrs_));
  if (ex->options_.tracer != nullptr) {
    A8_ASSIGN_OR_RETURN(ex->timer_, ex->backend_->NewKernelTimer());
    ex->options_.tracer->Bind(p, ex->timer_->track_kind());
  }
  return ex;
}

const plan::Buffer* Executor::FindInput(const std::string& name) const {
  for (const plan::Binding& b : file_.plan.inputs())
    if (b.name() == name) return &file_.plan.buffers(b.buffer());
  return nullptr;
}

const plan::Buffer* Executor::FindOutput(const std::string& name) const {
  for (const plan::Binding& b : file_.plan.outputs())
    if (b.name() == name) return &file_.plan.buffers(b.buffer());
  return nullptr;
}

Status Executor::SetInput(const std::string& name, const void* data, size_t bytes) {
  const plan::Buffer* b = FindInput(name);
  if (b == nullptr) return InvalidInput("input '{}': the plan has no input of that name", name);
  if (bytes != b->bytes())
    return InvalidInput("input '{}': {} bytes given, the plan's buffer has {}", name, bytes,
                        b->bytes());
  return backend_->CopyIn(ptrs_[b->id()], data, bytes);
}

Status Executor::ReadBuffer(int id, void* dst) const {
  if (id < 0 || id >= file_.plan.buffers_size())
    return Internal("buffer {} out of range ({} buffers)", id, file_.plan.buffers_size());
  return backend_->CopyOut(dst, ptrs_[id], file_.plan.buffers(id).bytes());
}

Status Executor::WriteBuffer(int id, const void* src) {
  if (id < 0 || id >= file_.plan.buffers_size())
    return Internal("buffer {} out of range ({} buffers)", id, file_.plan.buffers_size());
  return backend_->CopyIn(ptrs_[id], src, file_.plan.buffers(id).bytes());
}

void Executor::Poison(int after_kernel) {
  const plan::Plan& p = file_.plan;
  for (int id : dies_after_[after_kernel]) {
    const plan::Buffer& b = p.buffers(id);
    uint64_t begin = b.offset(), end = b.offset() + b.bytes();
    // Ranges of live buffers that share these bytes through alias_of.
    std::vector<std::pair<uint64_t, uint64_t>> keep;
    for (int j = 0; j < p.buffers_size(); ++j) {
      if (j == id || alias_root_[j] != alias_root_[id]) continue;
      const plan::Buffer& c = p.buffers(j);
      if (c.region() != plan::Buffer::ARENA) continue;
      bool live = live_to_end_[j] || (c.first() <= after_kernel && c.last() > after_kernel);
      if (live) keep.emplace_back(c.offset(), c.offset() + c.bytes());
    }
    std::sort(keep.begin(), keep.end());
    uint64_t at = begin;
    for (const auto& [kb, ke] : keep) {
      if (ke <= at || kb >= end) continue;
      if (kb > at) (void)backend_->Fill(arena_base_ + at, kPoisonByte, kb - at);
      at = std::max(at, ke);
    }
    if (at < end) (void)backend_->Fill(arena_base_ + at, kPoisonByte, end - at);
  }
}

Status Executor::ValidateTraining() const {
  const plan::Plan& p = file_.plan;
  const int num_buffers = p.buffers_size();
  auto in_range = [&](int id) { return id >= 0 && id < num_buffers; };
  for (int i = 0; i < p.updates_size(); ++i) {
    const plan::Update& u = p.updates(i);
    if (!in_range(u.target()) || !in_range(u.source()))
      return Internal("update {}: target {} / source {} out of range ({} buffers)", i, u.target(),
                      u.source(), num_buffers);
    const plan::Buffer& t = p.buffers(u.target());
    const plan::Buffer& s = p.buffers(u.source());
    if (t.region() != plan::Buffer::PERSISTENT)
      return Internal("update {}: target '{}' is not a persistent buffer", i, t.name());
    if (t.bytes() != s.bytes())
      return Internal("update {}: target '{}' has {} bytes, source '{}' has {}", i, t.name(),
                      t.bytes(), s.name(), s.bytes());
  }
  const plan::Training& train = p.train();
  if (int id = train.step_buffer(); id != -1) {
    if (!in_range(id) || p.buffers(id).region() != plan::Buffer::PERSISTENT ||
        p.buffers(id).type().dtype() != plan::I64 || p.buffers(id).bytes() != sizeof(int64_t))
      return Internal("train.step_buffer {}: not a persistent i64 scalar", id);
  }
  if (int id = train.control_buffer(); id != -1) {
    if (!in_range(id) || p.buffers(id).region() != plan::Buffer::PERSISTENT ||
        p.buffers(id).type().dtype() != plan::F32 || p.buffers(id).bytes() != 5 * sizeof(float))
      return Internal("train.control_buffer {}: not a persistent f32[5]", id);
  }
  for (int k : train.eval_kernels())
    if (k < 0 || k >= p.kernels_size())
      return Internal("train.eval_kernels: kernel {} out of range ({} kernels)", k,
                      p.kernels_size());
  return Status::Ok();
}

int64_t Executor::step() const {
  const plan::Plan& p = file_.plan;
  if (!p.training() || p.train().step_buffer() < 0) return step_;
  int64_t value = step_;
  if (!backend_->CopyOut(&value, ptrs_[p.train().step_buffer()], sizeof(value)).ok()) return step_;
  return value;
}

void Executor::PoisonArenaExceptInputs() {
  const plan::Plan& p = file_.plan;
  std::vector<std::pair<uint64_t, uint64_t>> inputs;
  for (const plan::Binding& bind : p.inputs()) {
    const plan::Buffer& b = p.buffers(bind.buffer());
    if (b.region() == plan::Buffer::ARENA) inputs.emplace_back(b.offset(), b.offset() + b.bytes());
  }
  std::sort(inputs.begin(), inputs.end());
  uint64_t at = 0;
  for (const auto& [b, e] : inputs) {
    if (b > at) (void)backend_->Fill(arena_base_ + at, kPoisonByte, b - at);
    at = std::max(at, e);
  }
  if (at < p.arena_bytes())
    (void)backend_->Fill(arena_base_ + at, kPoisonByte, p.arena_bytes() - at);
}

Status Executor::RunKernel(int k, const StepInfo& info, KernelTimer* timer) {
  if (timer != nullptr) timer->Start(k);
  Status s = backend_->Run(k, info);
  if (timer != nullptr) timer->Stop(k);
  if (!s.ok()) {
    const plan::Kernel& kern = file_.plan.kernels(k);
    return s.WithContext(fmt::format("step {}{}: kernel {} '{}' (node '{}')", info.step,
                                     info.eval ? " (eval)" : "", k, kern.name(), kern.node()));
  }
  if (options_.check_numerics && (info.eval || check_in_step_[k]))
    A8_RETURN_IF_ERROR(CheckKernelOutputs(k, info));
  if (options_.after_kernel) A8_RETURN_IF_ERROR(options_.after_kernel(k, info));
  if (options_.poison_freed) Poison(k);
  return Status::Ok();
}

void Executor::PlanNumericsChecks() {
  const plan::Plan& p = file_.plan;
  dynamic_scaler_ = p.training() && p.scaler().mode() == "dynamic";
  check_in_step_.assign(p.kernels_size(), !dynamic_scaler_);
  if (!dynamic_scaler_) return;
  // Gradients may overflow under a dynamic scaler: check the forward pass, and the parameters and
  // state once the step is done (a skipped update leaves them as they were).
  for (int k : p.train().eval_kernels()) check_in_step_[k] = true;
  for (const plan::Update& u : p.updates())
    if (u.target() != p.train().control_buffer()) check_after_step_.push_back(u.target());
}

double Executor::LossScale() const {
  const plan::Plan& p = file_.plan;
  const std::string& mode = p.scaler().mode();
  const int id = p.train().scale_buffer();
  if (!p.training() || (mode != "static" && mode != "dynamic") || id < 0 ||
      id >= p.buffers_size() || p.buffers(id).type().dtype() != plan::F32 ||
      p.buffers(id).bytes() != sizeof(float))
    return 1;
  float scale = 1;
  if (!backend_->CopyOut(&scale, ptrs_[id], sizeof(scale)).ok()) return 1;
  return scale;
}

namespace {

std::string NumericsWhere(const StepInfo& info) {
  return fmt::format("--check-numerics: step {}{}", info.step, info.eval ? " (eval)" : "");
}

std::string KernelWhere(const plan::Kernel& kern, int k) {
  std::string onnx;
  for (const std::string& n : kern.onnx_nodes())
    onnx += fmt::format("{}'{}'", onnx.empty() ? "" : ", ", n);
  return fmt::format("kernel {} '{}' (op {}, node '{}', ONNX nodes: {})", k, kern.name(), kern.op(),
                     kern.node(), onnx.empty() ? "none" : onnx);
}

std::string TypeText(const plan::Buffer& b) {
  TensorType type{static_cast<DType>(b.type().dtype()),
                  std::vector<int64_t>(b.type().dims().begin(), b.type().dims().end())};
  return type.ToString();
}

std::string BufferWhere(const plan::Buffer& b) {
  return fmt::format("'{}' ({})", b.name(), TypeText(b));
}

// "element 5 [1,1]": the flat index and, for tensors of rank > 1, the index per dim.
std::string ElementWhere(const plan::Buffer& b, int64_t flat) {
  std::string out = fmt::format("element {}", flat);
  if (b.type().dims_size() < 2) return out;
  std::vector<int64_t> index(b.type().dims_size());
  for (int d = b.type().dims_size() - 1; d >= 0; --d) {
    const int64_t dim = std::max<int64_t>(b.type().dims(d), 1);
    index[d] = flat % dim;
    flat /= dim;
  }
  return fmt::format("{} [{}]", out, fmt::join(index, ","));
}

// Device memory is copied to the host first.
std::optional<NonFinite> ScanBuffer(const plan::Buffer& b, const uint8_t* data, Backend& be) {
  const DType dtype = static_cast<DType>(b.type().dtype());
  if (!IsFloat(dtype)) return std::nullopt;
  std::vector<uint8_t> host;
  if (!be.host_memory()) {
    host.resize(b.bytes());
    if (!be.CopyOut(host.data(), data, b.bytes()).ok()) return std::nullopt;
    data = host.data();
  }
  return FindNonFinite(dtype, data, static_cast<int64_t>(b.bytes() / DTypeSize(dtype)));
}

// check_numerics: a graph input holding an Inf or NaN is reported as that input, before any
// kernel reads it (a800c-run's Dataset names the file and sample even earlier).
Status CheckInputBuffers(const plan::Plan& p, const std::vector<uint8_t*>& ptrs, Backend& be,
                         const StepInfo& info) {
  for (const plan::Binding& in : p.inputs()) {
    const plan::Buffer& b = p.buffers(in.buffer());
    std::optional<NonFinite> bad = ScanBuffer(b, ptrs[in.buffer()], be);
    if (!bad) continue;
    return InvalidInput(
        "{}: graph input '{}' ({}) holds a non-finite value: {} is {}, before any "
        "kernel read it",
        NumericsWhere(info), in.name(), TypeText(b), ElementWhere(b, bad->index),
        NonFiniteName(bad->value));
  }
  return Status::Ok();
}

}  // namespace

Status Executor::CheckKernelOutputs(int k, const StepInfo& info) const {
  const plan::Plan& p = file_.plan;
  const plan::Kernel& kern = p.kernels(k);
  for (int i = 0; i < kern.outputs_size(); ++i) {
    const int id = kern.outputs(i);
    if (id < 0 || id >= p.buffers_size()) continue;
    const plan::Buffer& b = p.buffers(id);
    std::optional<NonFinite> bad = ScanBuffer(b, ptrs_[id], *backend_);
    if (!bad) continue;
    // The headline names the original ONNX node, also inside a fused kernel.
    auto read = [this](int buffer) -> StatusOr<std::vector<double>> {
      const plan::Buffer& in = file_.plan.buffers(buffer);
      const DType dtype = static_cast<DType>(in.type().dtype());
      if (!IsFloat(dtype)) return std::vector<double>{};
      std::vector<uint8_t> raw(in.bytes());
      A8_RETURN_IF_ERROR(ReadBuffer(buffer, raw.data()));
      const int64_t n = static_cast<int64_t>(in.bytes() / DTypeSize(dtype));
      std::vector<double> v(static_cast<size_t>(n));
      A8_RETURN_IF_ERROR(cpu::Cast(dtype, DType::kF64, n, raw.data(), v.data()));
      return v;
    };
    StatusOr<std::string> blamed =
        i == 0 ? BlameOnnxNode(p, kern, bad->index, read) : StatusOr<std::string>(kern.node());
    return Internal(
        "{}: ONNX node '{}' produced a non-finite value ({}): output {} buffer {} {} is {}; loss "
        "scale {}{}",
        NumericsWhere(info), blamed.ok() ? *blamed : kern.node(), KernelWhere(kern, k), i,
        BufferWhere(b), ElementWhere(b, bad->index), NonFiniteName(bad->value),
        info.eval ? LossScale() : step_scale_,
        dynamic_scaler_ && !info.eval
            ? " (dynamic loss scaling: only the forward pass and the updated parameters and "
              "state are checked, as non-finite gradients just skip an update)"
            : "");
  }
  return Status::Ok();
}

Status Executor::CheckUpdatedState(const StepInfo& info) const {
  const plan::Plan& p = file_.plan;
  for (int id : check_after_step_) {
    const plan::Buffer& b = p.buffers(id);
    std::optional<NonFinite> bad = ScanBuffer(b, ptrs_[id], *backend_);
    if (!bad) continue;
    // The kernel that computed the new value: its update source's definer.
    std::string writer;
    for (const plan::Update& u : p.updates()) {
      const int first = p.buffers(u.source()).first();
      if (u.target() == id && first >= 0 && first < p.kernels_size())
        writer = fmt::format(", computed by {}", KernelWhere(p.kernels(first), first));
    }
    return Internal(
        "{}: after the update, {} {} is non-finite: {} is {}{}; loss scale {} "
        "(dynamic loss scaling: only the forward pass and the updated parameters and state are "
        "checked, as non-finite gradients just skip an update)",
        NumericsWhere(info), b.role() == plan::Buffer::PARAMETER ? "parameter" : "state",
        BufferWhere(b), ElementWhere(b, bad->index), NonFiniteName(bad->value), writer,
        step_scale_);
  }
  return Status::Ok();
}

Status Executor::Run() {
  const plan::Plan& p = file_.plan;
  StepInfo info{step(), options_.seed};
  info.comm = options_.comm;
  if (options_.check_numerics) {
    step_scale_ = LossScale();
    A8_RETURN_IF_ERROR(CheckInputBuffers(p, ptrs_, *backend_, info));
  }
  // Everything in the arena but the inputs is undefined at the start of a step.
  if (options_.poison_freed) PoisonArenaExceptInputs();
  if (options_.tracer != nullptr && options_.tracer->Wants(info.step)) {
    A8_RETURN_IF_ERROR(RunTraced(info));
  } else if (!PerKernel(info)) {
    // The whole step as one sequence, which a device backend captures once and replays.
    A8_RETURN_IF_ERROR(backend_->RunSequence(kStepSequence, all_kernels_, update_copies_, info)
                           .WithContext(fmt::format("step {}", info.step)));
  } else {
    for (int k = 0; k < p.kernels_size(); ++k) {
      A8_RETURN_IF_ERROR(RunKernel(k, info));
      if (info.comm != nullptr) info.comm->Progress();
    }
    A8_RETURN_IF_ERROR(backend_->RunSequence(kNoCapture, {}, update_copies_, info));
  }
  if (p.training() && options_.check_numerics) A8_RETURN_IF_ERROR(CheckUpdatedState(info));
  ++step_;
  return Status::Ok();
}

Status Executor::RunEval() {
  const plan::Plan& p = file_.plan;
  if (!p.training()) return InvalidInput("an evaluation step needs a training plan");
  StepInfo info{step(), options_.seed, /*eval=*/true};
  if (options_.check_numerics) A8_RETURN_IF_ERROR(CheckInputBuffers(p, ptrs_, *backend_, info));
  if (options_.poison_freed) PoisonArenaExceptInputs();
  if (!PerKernel(info)) {
    return backend_->RunSequence(kEvalSequence, eval_kernels_, {}, info)
        .WithContext(fmt::format("step {} (eval)", info.step));
  }
  for (int k : p.train().eval_kernels()) A8_RETURN_IF_ERROR(RunKernel(k, info));
  return Status::Ok();
}

bool Executor::PerKernel(const StepInfo& info) const {
  // A host backend gains nothing from sequences, and its collectives (MPI) progress between
  // kernels; checks between kernels need them one by one on any backend. A device backend's
  // communicator (NCCL) queues its work on streams and needs no host help.
  (void)info;
  return backend_->host_memory() || options_.check_numerics || options_.poison_freed ||
         options_.after_kernel != nullptr;
}

}  // namespace a8

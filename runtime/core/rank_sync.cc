// Data-parallel agreement between ranks: see rank_sync.h.
#include "runtime/core/rank_sync.h"

#include <cstdint>
#include <vector>

#include "runtime/core/checkpoint.h"

namespace a8 {
namespace {

// FNV-1a of `n` bytes, continuing from `h`: the fingerprints ranks compare.
uint64_t Fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace

Status SyncRanks(Communicator& comm, Executor& ex, const std::string& plan_path) {
  const std::string plan_hash = PlanHash(ex.plan());
  const uint64_t hash = Fnv1a(plan_hash.data(), plan_hash.size());
  uint64_t lo = 0, hi = 0;
  int lo_rank = 0, hi_rank = 0;
  A8_RETURN_IF_ERROR(comm.MinMax(hash, &lo, &hi, &lo_rank, &hi_rank, "the same-plan check"));
  if (lo != hi) {
    return InvalidInput(
        "{}: rank {} and rank {} run different plans (every rank of a data-parallel run must "
        "load the same plan file)",
        plan_path, lo_rank, hi_rank);
  }
  for (int id : ex.checkpoint_buffers()) {
    // Through host memory: the bootstrap collectives work on host bytes.
    std::vector<uint8_t> bytes(ex.plan().buffers(id).bytes());
    A8_RETURN_IF_ERROR(ex.ReadBuffer(id, bytes.data()));
    A8_RETURN_IF_ERROR(comm.Broadcast(bytes.data(), static_cast<int64_t>(bytes.size()), 0,
                                      "the broadcast of rank 0's parameters"));
    A8_RETURN_IF_ERROR(ex.WriteBuffer(id, bytes.data()));
  }
  int64_t step = ex.steps_run();
  A8_RETURN_IF_ERROR(comm.Broadcast(&step, sizeof(step), 0, "the broadcast of the step counter"));
  ex.set_steps_run(step);
  return Status::Ok();
}

Status CheckParametersAgree(Communicator& comm, const Executor& ex) {
  uint64_t h = 1469598103934665603ull;
  for (int id : ex.checkpoint_buffers()) {
    const plan::Buffer& b = ex.plan().buffers(id);
    // The weights, and the loss scaler's and the step control's state (a8.*): the optimizer
    // moments follow from them; running statistics may differ (each rank's own batches).
    if (b.role() != plan::Buffer::PARAMETER && b.name().rfind("a8.", 0) != 0) continue;
    // The control vector of the last step: inside an --accumulate window it holds this rank's
    // own micro-batch figures (the gradients are averaged across ranks at the update only).
    if (b.name() == "a8.control") continue;
    std::vector<uint8_t> bytes(b.bytes());
    A8_RETURN_IF_ERROR(ex.ReadBuffer(id, bytes.data()));
    h = Fnv1a(bytes.data(), b.bytes(), h);
  }
  uint64_t lo = 0, hi = 0;
  int lo_rank = 0, hi_rank = 0;
  A8_RETURN_IF_ERROR(comm.MinMax(h, &lo, &hi, &lo_rank, &hi_rank, "the parameter check"));
  if (lo != hi) {
    return Internal("data parallel: rank {} and rank {} hold different parameters after step {}",
                    lo_rank, hi_rank, ex.step());
  }
  return Status::Ok();
}

bool HasGradientBuckets(const plan::Plan& plan) {
  for (const plan::Kernel& k : plan.kernels()) {
    if (k.op() == "a8.AllReduceStart") return true;
  }
  return false;
}

}  // namespace a8

// a800c-run --trace=FILE.json [--trace-steps=A:B]: a Chrome/Perfetto trace of the steps run
// (the JSON "trace event" format, which ui.perfetto.dev and chrome://tracing open).
//
// What a trace holds, per traced step:
// - one complete slice ("ph":"X", category "step") "step N" on the thread that drove the step;
// - one complete slice per kernel (category "kernel", or "collective" for a8.AllReduceStart/
//   a8.AllReduceWait), named by its ONNX node(s) ("a + b" for a fused kernel; the plan node when
//   the kernel has no ONNX origin), with args: the plan kernel name, op, index, node, ONNX nodes,
//   input and output types ("f16[64,256]") and the bytes it reads and writes, and the step. It
//   lies on the track that ran it: the CPU backend's calling thread (pool workers run inside that
//   span), or the CUDA stream, timed by CUDA events (Backend::NewKernelTimer);
// - counters ("ph":"C"): "arena bytes" (the bytes of the arena held by live buffers as each kernel
//   starts, whenever it changes), and for training plans with a loss scaler "loss scale" (the
//   scale the step ran with) and "skipped updates" (updates skipped for overflow since the trace
//   began).
//
// Steps: --trace-steps=A:B traces the steps whose counter (Executor::step(), which a resumed run
// continues) is in [A, B); "A:" from A on, ":B" before B; default: every step. Evaluation passes
// are not traced. A traced step runs kernel by kernel (a device backend does not replay its
// captured graph); steps outside the range, and every step without --trace, run exactly as
// before: the executor only tests a null pointer.
//
// Timestamps are microseconds of the host's monotonic clock (CLOCK_MONOTONIC), common to every
// process of one machine. Data parallel (mpirun): each rank is a process of the trace (pid =
// rank, named "rank R"); at the end of a successful run every rank sends its events to rank 0
// (Communicator::Broadcast, rank by rank) and rank 0 writes the one merged file, so the Perfetto
// UI shows the ranks one above the other. A rank whose run failed writes its own events to
// FILE.rankR.json instead (there may be no partner left to gather with). Ranks on different
// machines have unrelated clocks.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/plan/plan.pb.h"
#include "runtime/core/backend.h"

namespace a8 {

class Communicator;

// The parsed --trace-steps: steps in [first, end).
struct TraceSteps {
  int64_t first = 0;
  int64_t end = std::numeric_limits<int64_t>::max();
};
// "A:B", "A:", ":B" (A < B, both >= 0); anything else is InvalidInput naming --trace-steps.
StatusOr<TraceSteps> ParseTraceSteps(const std::string& spec);

class Tracer {
 public:
  // `rank`: the process id in the trace (0 for one process); `label`: the process name ("rank 0").
  Tracer(TraceSteps steps, int rank, std::string label);

  bool Wants(int64_t step) const { return step >= steps_.first && step < steps_.end; }
  // Executor::Create, when tracing: the plan's per-kernel names and args, and the arena use.
  void Bind(const plan::Plan& plan, const std::string& track_kind);

  // One traced step: its span on the driving thread, and its kernels' spans.
  void AddStep(int64_t step, double start_us, double end_us, const std::vector<KernelSpan>& spans);
  void AddCounter(const std::string& name, double ts_us, double value);
  // An update step of a plan with a loss scaler: the "skipped updates" counter.
  void CountSkippedUpdate(double ts_us, bool skipped);

  int64_t steps_traced() const { return steps_traced_; }
  // This process's events, as comma-separated JSON objects (no brackets; "" when none).
  std::string EventsJson() const;

 private:
  struct KernelInfo {
    std::string name, category, args;  // args: a JSON object without its closing brace
  };
  TraceSteps steps_;
  int rank_;
  std::string label_, track_kind_;
  std::vector<KernelInfo> kernels_;
  std::vector<uint64_t> arena_live_;  // per kernel
  std::vector<int64_t> tracks_;       // seen, for their names
  std::string events_;
  int64_t steps_traced_ = 0;
  int64_t skipped_ = 0;
  uint64_t last_arena_ = std::numeric_limits<uint64_t>::max();
};

// a800c-run's tracer: null without --trace (`path` empty; then `steps_spec` must be empty too),
// else one for steps_spec ("" = every step) as process `rank` of `ranks`.
StatusOr<std::unique_ptr<Tracer>> MakeTracer(const std::string& path, const std::string& steps_spec,
                                             int rank, int ranks);

// Writes the trace file at `path`. With a communicator of more than one rank every rank must
// call it (collectively, after a successful run): rank 0 gathers the other ranks' events and
// writes `path`; the others write nothing. `failed`: this rank's run failed, so it writes its own
// events to PATH.rankR.json without gathering (data parallel) or to `path` (one process).
Status WriteTrace(const Tracer& tracer, const std::string& path, Communicator* comm, bool failed);

// PATH.rankR.json (PATH without its ".json").
std::string RankTracePath(const std::string& path, int rank);

}  // namespace a8

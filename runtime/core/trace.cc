#include "runtime/core/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "compiler/ir/types.h"
#include "compiler/support/file_io.h"
#include "runtime/comm/communicator.h"

namespace a8 {
namespace {

std::string Quote(const std::string& s) { return nlohmann::json(s).dump(); }

std::string TypeString(const plan::Buffer& b) {
  TensorType type{static_cast<DType>(b.type().dtype()),
                  std::vector<int64_t>(b.type().dims().begin(), b.type().dims().end())};
  return type.ToString();
}

bool ParseCount(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  *out = std::stoll(text);
  return true;
}

// The bytes of the arena held by live buffers at each kernel: the union of their byte ranges
// (buffers sharing bytes through alias_of count once). A buffer is live at k when
// first <= k <= last; graph inputs (first < 0) from the start.
std::vector<uint64_t> ArenaLiveBytes(const plan::Plan& p) {
  const int n = p.kernels_size();
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> ranges(n);
  for (const plan::Buffer& b : p.buffers()) {
    if (b.region() != plan::Buffer::ARENA || b.bytes() == 0) continue;
    const int64_t first = std::max<int64_t>(b.first(), 0);
    const int64_t last = b.last() < 0 ? n - 1 : std::min<int64_t>(b.last(), n - 1);
    for (int64_t k = first; k <= last; ++k)
      ranges[k].emplace_back(b.offset(), b.offset() + b.bytes());
  }
  std::vector<uint64_t> live(n, 0);
  for (int k = 0; k < n; ++k) {
    auto& r = ranges[k];
    std::sort(r.begin(), r.end());
    uint64_t at = 0;
    for (const auto& [begin, end] : r) {
      const uint64_t from = std::max(begin, at);
      if (end > from) live[k] += end - from;
      at = std::max(at, end);
    }
  }
  return live;
}

}  // namespace

StatusOr<TraceSteps> ParseTraceSteps(const std::string& spec) {
  const size_t colon = spec.find(':');
  TraceSteps s;
  if (colon == std::string::npos || spec.find(':', colon + 1) != std::string::npos)
    return InvalidInput("--trace-steps={}: expected A:B (steps A to B-1), A: or :B", spec);
  const std::string a = spec.substr(0, colon), b = spec.substr(colon + 1);
  if ((!a.empty() && !ParseCount(a, &s.first)) || (!b.empty() && !ParseCount(b, &s.end)) ||
      (a.empty() && b.empty()))
    return InvalidInput("--trace-steps={}: A and B must be step numbers (A:B, A: or :B)", spec);
  if (s.end <= s.first)
    return InvalidInput("--trace-steps={}: the range is empty (B must be greater than A)", spec);
  return s;
}

StatusOr<std::unique_ptr<Tracer>> MakeTracer(const std::string& path, const std::string& steps_spec,
                                             int rank, int ranks) {
  if (path.empty()) {
    if (!steps_spec.empty()) return InvalidInput("--trace-steps: needs --trace=FILE.json");
    return std::unique_ptr<Tracer>();
  }
  TraceSteps steps;
  if (!steps_spec.empty()) {
    A8_ASSIGN_OR_RETURN(steps, ParseTraceSteps(steps_spec));
  }
  return std::make_unique<Tracer>(
      steps, rank, ranks > 1 ? fmt::format("rank {}", rank) : std::string("a800c-run"));
}

Tracer::Tracer(TraceSteps steps, int rank, std::string label)
    : steps_(steps), rank_(rank), label_(std::move(label)) {}

void Tracer::Bind(const plan::Plan& p, const std::string& track_kind) {
  track_kind_ = track_kind;
  kernels_.clear();
  for (int k = 0; k < p.kernels_size(); ++k) {
    const plan::Kernel& kern = p.kernels(k);
    KernelInfo info;
    std::string onnx;
    for (const std::string& n : kern.onnx_nodes()) onnx += (onnx.empty() ? "" : " + ") + n;
    info.name = !onnx.empty() ? onnx : !kern.node().empty() ? kern.node() : kern.name();
    info.category = kern.op().rfind("a8.AllReduce", 0) == 0 ? "collective" : "kernel";
    nlohmann::ordered_json args;
    args["kernel"] = kern.name();
    args["op"] = kern.op();
    args["index"] = k;
    args["node"] = kern.node();
    args["onnx_nodes"] =
        std::vector<std::string>(kern.onnx_nodes().begin(), kern.onnx_nodes().end());
    uint64_t bytes = 0;
    auto types = [&](const auto& ids) {
      std::vector<std::string> out;
      for (int id : ids) {
        if (id < 0 || id >= p.buffers_size()) {
          out.push_back("none");
          continue;
        }
        out.push_back(TypeString(p.buffers(id)));
        bytes += p.buffers(id).bytes();
      }
      return out;
    };
    args["inputs"] = types(kern.inputs());
    args["outputs"] = types(kern.outputs());
    args["bytes"] = bytes;
    std::string text = args.dump();
    text.pop_back();  // the closing brace: the step is added per event
    info.args = std::move(text);
    kernels_.push_back(std::move(info));
  }
  arena_live_ = ArenaLiveBytes(p);
}

void Tracer::AddStep(int64_t step, double start_us, double end_us,
                     const std::vector<KernelSpan>& spans) {
  const int64_t host = static_cast<int64_t>(syscall(SYS_gettid));
  auto add = [&](const std::string& event) {
    if (!events_.empty()) events_ += ",\n";
    events_ += event;
  };
  auto track = [&](int64_t tid) {
    if (std::find(tracks_.begin(), tracks_.end(), tid) != tracks_.end()) return;
    tracks_.push_back(tid);
    const bool driver = tid == host && track_kind_ == "thread";
    add(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                    rank_, tid,
                    Quote(driver ? fmt::format("{} (main)", track_kind_)
                                 : fmt::format("{} {}", track_kind_, tid))));
  };
  if (steps_traced_ == 0)
    add(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", rank_,
                    Quote(label_)));
  track(host);
  add(fmt::format(
      R"({{"ph":"X","cat":"step","name":"step {}","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{"step":{}}}}})",
      step, rank_, host, start_us, end_us - start_us, step));
  for (const KernelSpan& s : spans) {
    if (s.kernel < 0 || s.kernel >= static_cast<int>(kernels_.size())) continue;
    const KernelInfo& info = kernels_[s.kernel];
    track(s.track);
    add(fmt::format(
        R"({{"ph":"X","cat":"{}","name":{},"pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{},"step":{}}}}})",
        info.category, Quote(info.name), rank_, s.track, s.start_us, s.dur_us, info.args, step));
    const uint64_t live = arena_live_[s.kernel];
    if (live != last_arena_) {
      add(fmt::format(
          R"({{"ph":"C","name":"arena bytes","pid":{},"ts":{:.3f},"args":{{"bytes":{}}}}})", rank_,
          s.start_us, live));
      last_arena_ = live;
    }
  }
  ++steps_traced_;
}

void Tracer::AddCounter(const std::string& name, double ts_us, double value) {
  if (!events_.empty()) events_ += ",\n";
  events_ += fmt::format(R"({{"ph":"C","name":{},"pid":{},"ts":{:.3f},"args":{{"value":{}}}}})",
                         Quote(name), rank_, ts_us,
                         std::isfinite(value) ? fmt::format("{:.9g}", value) : "null");
}

void Tracer::CountSkippedUpdate(double ts_us, bool skipped) {
  skipped_ += skipped ? 1 : 0;
  AddCounter("skipped updates", ts_us, static_cast<double>(skipped_));
}

std::string Tracer::EventsJson() const { return events_; }

std::string RankTracePath(const std::string& path, int rank) {
  const std::string ext = ".json";
  std::string stem = path;
  if (stem.size() > ext.size() && stem.compare(stem.size() - ext.size(), ext.size(), ext) == 0)
    stem.resize(stem.size() - ext.size());
  return fmt::format("{}.rank{}.json", stem, rank);
}

namespace {

Status WriteTraceFile(const std::string& path, const std::vector<std::string>& parts) {
  std::string text = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!first) text += ",\n";
    text += part;
    first = false;
  }
  text += "\n]}\n";
  return WriteFileAtomically(path, text).WithContext("--trace");
}

}  // namespace

Status WriteTrace(const Tracer& tracer, const std::string& path, Communicator* comm, bool failed) {
  if (comm == nullptr || comm->size() <= 1) return WriteTraceFile(path, {tracer.EventsJson()});
  if (failed) return WriteTraceFile(RankTracePath(path, comm->rank()), {tracer.EventsJson()});
  // Rank r sends its events to every rank (Broadcast is what the communicator has); rank 0 keeps
  // them.
  std::vector<std::string> parts;
  const std::string mine = tracer.EventsJson();
  for (int r = 0; r < comm->size(); ++r) {
    uint64_t bytes = r == comm->rank() ? mine.size() : 0;
    A8_RETURN_IF_ERROR(comm->Broadcast(&bytes, sizeof(bytes), r, "--trace: event sizes"));
    std::string part = r == comm->rank() ? mine : std::string(bytes, '\0');
    if (bytes > 0)
      A8_RETURN_IF_ERROR(
          comm->Broadcast(part.data(), static_cast<int64_t>(bytes), r, "--trace: events"));
    if (comm->rank() == 0) parts.push_back(std::move(part));
  }
  if (comm->rank() != 0) return Status::Ok();
  return WriteTraceFile(path, parts);
}

}  // namespace a8

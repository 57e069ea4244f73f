// The pass manager: runs a pipeline of passes by name, with verification, dumps and timing.
// See pass_manager.h for the options; all output is deterministic except the timings.
#include "compiler/pass/pass_manager.h"

#include <time.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "base/enum_names.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

namespace a8 {
namespace {

// A fixed-point pass that still reports a change after this many runs has a bug (it undoes its
// own rewrite, or reports a change it did not make).
constexpr int kMaxFixedPointIterations = 32;

// The pass after which every value's type is known (see PassManagerOptions::input_typed).
constexpr std::string_view kShapeInferencePass = "shape-inference";

const std::vector<PassInfo>& NoPasses() {
  static const std::vector<PassInfo> kNone;
  return kNone;
}

std::string KnownPassNames(const std::vector<PassInfo>& registry) {
  std::string known;
  for (const PassInfo& info : registry) {
    if (!known.empty()) known += ", ";
    known += info.name;
  }
  return known.empty() ? "none" : known;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ",";
    out += n;
  }
  return out;
}

// One write per dump: the driver's dump stream is unbuffered stderr.
// Before shape-inference (`types_known` false) node results print as `?`, so the dump reads
// back.
void PrintBanner(std::ostream& os, std::string_view when, const std::string& pass, const Graph& g,
                 const PrintOptions& opts) {
  os << fmt::format("// -----// IR Dump {} {} //----- //\n", when, pass) + PrintIrToString(g, opts);
  os.flush();
}

Status WriteDump(const std::string& dir, int index, const std::string& label, const Graph& g,
                 const PrintOptions& opts) {
  std::filesystem::path path =
      std::filesystem::path(dir) / fmt::format("{:02d}-{}.a8ir", index, label);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) PrintIr(g, out, opts);
  out.close();
  if (!out) return Internal("--dump-dir: {}: cannot write the file", path.string());
  return Status::Ok();
}

// CPU time of the calling thread in ms (passes run on it; a pass that used other threads would
// show only its own share).
double ThreadCpuMs() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct TimingRow {
  std::string pass;
  double ms = 0;
  double cpu_ms = 0;  // the calling thread's CPU time: less dependent on the machine's load
  std::map<std::string, int64_t> stats;
};

void PrintTiming(std::ostream& os, const std::vector<TimingRow>& rows) {
  double total = 0, total_cpu = 0;
  size_t width = 5;  // "total"
  for (const TimingRow& r : rows) {
    total += r.ms;
    total_cpu += r.cpu_ms;
    width = std::max(width, r.pass.size());
  }
  auto percent = [&](double ms) { return total > 0 ? 100.0 * ms / total : 0.0; };
  os << "// -----// Pass execution timing report //----- //\n";
  os << fmt::format("{:>10}  {:>6}  {:>10}  {:<{}}  {}\n", "wall ms", "%", "cpu ms", "pass", width,
                    "stats");
  for (const TimingRow& r : rows) {
    std::string stats;
    for (const auto& [key, value] : r.stats) {
      if (!stats.empty()) stats += " ";
      stats += fmt::format("{}={}", key, value);
    }
    std::string line = fmt::format("{:>10.3f}  {:>5.1f}%  {:>10.3f}  {:<{}}  {}", r.ms,
                                   percent(r.ms), r.cpu_ms, r.pass, width, stats);
    line.erase(line.find_last_not_of(' ') + 1);
    os << line << "\n";
  }
  os << fmt::format("{:>10.3f}  {:>5.1f}%  {:>10.3f}  {}\n", total, total > 0 ? 100.0 : 0.0,
                    total_cpu, "total");
  os.flush();
}

}  // namespace

std::string_view PassRepeatName(PassRepeat r) {
  return r == PassRepeat::kOnce ? "once" : "fixed-point";
}

std::string_view PassModeName(PassMode m) {
  static constexpr EnumName<PassMode> kNames[] = {{PassMode::kBoth, "both"},
                                                  {PassMode::kTraining, "training"},
                                                  {PassMode::kInference, "inference"}};
  return NameIn(kNames, m, "?");
}

const std::vector<PassInfo>& PassManager::Registry() const {
  return opts_.registry != nullptr ? *opts_.registry : NoPasses();
}

const PassInfo* FindPassIn(const std::vector<PassInfo>& registry, const std::string& name) {
  for (const PassInfo& info : registry) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

Status PassManager::AddPasses(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (FindPassIn(Registry(), name) == nullptr) {
      return InvalidInput("unknown pass '{}' (known: {})", name, KnownPassNames(Registry()));
    }
  }
  for (const std::string& name : names) {
    const PassInfo* info = FindPassIn(Registry(), name);
    AddPass(name, info->create(), info->repeat);
  }
  return Status::Ok();
}

void PassManager::AddPass(std::string name, std::unique_ptr<Pass> pass, PassRepeat repeat) {
  names_.push_back(std::move(name));
  passes_.push_back(Entry{std::move(pass), repeat});
}

Status PassManager::Run(Graph& g) {
  // Every pass name an option mentions must exist, so that a typo is an error, not a silent
  // no-op. --stop-after must also name a pass of this pipeline.
  auto known = [&](const std::string& name) {
    return FindPassIn(Registry(), name) != nullptr ||
           std::find(names_.begin(), names_.end(), name) != names_.end();
  };
  for (const auto* list : {&opts_.print_before, &opts_.print_after}) {
    for (const std::string& name : *list) {
      if (!known(name)) {
        return InvalidInput("{}={}: unknown pass '{}' (known: {})",
                            list == &opts_.print_before ? "--print-ir-before" : "--print-ir-after",
                            name, name, KnownPassNames(Registry()));
      }
    }
  }
  if (!opts_.stop_after.empty()) {
    if (!known(opts_.stop_after)) {
      return InvalidInput("--stop-after={}: unknown pass '{}' (known: {})", opts_.stop_after,
                          opts_.stop_after, KnownPassNames(Registry()));
    }
    if (std::find(names_.begin(), names_.end(), opts_.stop_after) == names_.end()) {
      return InvalidInput("--stop-after={}: pass '{}' is not in the pipeline ({})",
                          opts_.stop_after, opts_.stop_after, JoinNames(names_));
    }
  }
  std::ostream* dump = opts_.dump_stream;
  if (!opts_.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts_.dump_dir, ec);
    if (ec || !std::filesystem::is_directory(opts_.dump_dir)) {
      return InvalidInput("--dump-dir={}: cannot create the folder{}", opts_.dump_dir,
                          ec ? ": " + ec.message() : "");
    }
    A8_RETURN_IF_ERROR(WriteDump(opts_.dump_dir, 0, "input", g, DumpOptions(opts_.input_typed)));
  }

  bool typed = opts_.input_typed;
  std::vector<TimingRow> timing;
  for (size_t i = 0; i < names_.size(); ++i) {
    const std::string& name = names_[i];
    Pass& pass = *passes_[i].pass;
    if (opts_.config != nullptr) pass.SetConfig(opts_.config);
    if (dump != nullptr && opts_.print_before.count(name) > 0) {
      PrintBanner(*dump, "Before", name, g, DumpOptions(typed));
    }

    pass.stats().clear();
    auto start = std::chrono::steady_clock::now();
    const double cpu_start = ThreadCpuMs();
    if (passes_[i].repeat == PassRepeat::kOnce) {
      A8_ASSIGN_OR_RETURN(bool changed, pass.Run(g));
      (void)changed;
    } else {
      int iterations = 0;
      bool changed = true;
      while (changed) {
        if (iterations == kMaxFixedPointIterations) {
          return Internal("pass '{}' did not reach a fixed point after {} iterations", name,
                          kMaxFixedPointIterations);
        }
        A8_ASSIGN_OR_RETURN(changed, pass.Run(g));
        ++iterations;
      }
      pass.stats()["iterations"] = iterations;
    }
    auto end = std::chrono::steady_clock::now();
    const double cpu_ms = ThreadCpuMs() - cpu_start;

    if (name == kShapeInferencePass) typed = true;
    if (opts_.verify_each) {
      VerifyOptions vopts;
      vopts.check_types = typed;
      Status verified = Verify(g, vopts);
      if (!verified.ok()) {
        return Internal("after pass '{}': {}", name, verified.message());
      }
    }
    if (dump != nullptr && (opts_.print_after_all || opts_.print_after.count(name) > 0)) {
      PrintBanner(*dump, "After", name, g, DumpOptions(typed));
    }
    if (!opts_.dump_dir.empty()) {
      A8_RETURN_IF_ERROR(
          WriteDump(opts_.dump_dir, static_cast<int>(i) + 1, name, g, DumpOptions(typed)));
    }
    timing.push_back(TimingRow{name, std::chrono::duration<double, std::milli>(end - start).count(),
                               cpu_ms, pass.stats()});
    if (name == opts_.stop_after) break;
  }
  if (opts_.pass_timing && opts_.timing_stream != nullptr) {
    PrintTiming(*opts_.timing_stream, timing);
  }
  return Status::Ok();
}

}  // namespace a8

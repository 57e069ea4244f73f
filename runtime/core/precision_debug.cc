#include "runtime/core/precision_debug.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "compiler/plan/plan_file.h"
#include "compiler/support/file_io.h"
#include "compiler/support/hash.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/dataset.h"
#include "runtime/core/executor.h"
#include "runtime/core/numerics.h"
#include "runtime/core/precision_search.h"
#include "runtime/core/synthetic.h"
#include "runtime/core/trainer.h"

namespace a8 {
namespace {

namespace fs = std::filesystem;

DType DTypeOf(const plan::Buffer& b) { return static_cast<DType>(b.type().dtype()); }

int64_t Elements(const plan::Buffer& b) {
  int64_t n = 1;
  for (int64_t d : b.type().dims()) n *= d;
  return n;
}

std::vector<bool> ForwardKernels(const plan::Plan& p) {
  std::vector<bool> forward(p.kernels_size(), false);
  if (p.training())
    for (int k : p.train().eval_kernels()) forward[k] = true;
  return forward;
}

// The candidate a kernel's non-finite output blames when BlameOnnxNode names none: its last ONNX
// node that is a candidate, or that names one before a '.' suffix (gradient nodes are
// "<node>.grad...").
std::string Blame(const plan::Kernel& kern, const std::set<std::string>& candidates) {
  for (auto it = kern.onnx_nodes().rbegin(); it != kern.onnx_nodes().rend(); ++it) {
    std::string name = *it;
    while (true) {
      if (candidates.count(name) > 0) return name;
      const size_t dot = name.rfind('.');
      if (dot == std::string::npos || dot == 0) break;
      name.resize(dot);
    }
  }
  return "";
}

// The first step's forward kernel outputs, by buffer name (the value's name: the same in both
// plans where the value is computed in both).
struct Activation {
  int order = 0;      // the kernel's position in the plan
  std::string label;  // "op (onnx nodes)"
  std::vector<double> values;
};
using Activations = std::map<std::string, Activation>;

struct RunRequest {
  std::string plan_path;
  bool reference = false;
  const std::set<std::string>* candidates = nullptr;  // for the diagnosis
  Activations* activations = nullptr;                 // captured when set
};

// What a plan computes: its message without the kernels' reasons (`why`, which name the override
// that chose a precision), and its initial values.
StatusOr<std::string> PlanKey(const std::string& path) {
  A8_ASSIGN_OR_RETURN(PlanFile f, ReadPlanFile(path));
  for (plan::Kernel& k : *f.plan.mutable_kernels()) k.clear_why();
  std::string bytes;
  if (!f.plan.SerializeToString(&bytes)) return Internal("{}: cannot serialize the plan", path);
  ContentHasher blob;
  for (std::string_view v : PlanBlobViews(f)) blob.Update(v);
  return ContentHash(bytes) + blob.Finish();
}

class Debugger {
 public:
  explicit Debugger(const PrecisionDebugOptions& o) : o_(o) {}

  StatusOr<PrecisionDebugResult> Run() {
    if (o_.steps < 1) return InvalidInput("--steps={}: expected at least 1", o_.steps);
    if (!(o_.tolerance > 0) || !std::isfinite(o_.tolerance))
      return InvalidInput("--tolerance={}: expected a positive number", o_.tolerance);
    if (!o_.compile.config.precision || !o_.compile.config.precision->mixed())
      return InvalidInput("--precision: debug-precision compares amp, fp16 or bf16 with fp32");
    if (!o_.compile.config.training)
      return InvalidInput("{}: debug-precision trains: give --loss (and --optimizer)",
                          o_.compile.model);
    A8_RETURN_IF_ERROR(MakeWorkDir());
    PrecisionDebugResult r;
    Activations ref_acts, low_acts;
    // The reference: the same model and training flags in fp32.
    A8_ASSIGN_OR_RETURN(std::string ref_plan, CompilePlan(std::nullopt, "fp32"));
    A8_ASSIGN_OR_RETURN(r.reference, Train({ref_plan, true, nullptr,
                                            o_.compare_activations ? &ref_acts : nullptr}));
    reference_ = r.reference.losses;
    Progress(fmt::format("fp32 reference: final loss {:.6g} ({} steps)", reference_.back(),
                         reference_.size()));
    A8_ASSIGN_OR_RETURN(std::string low_plan, CompilePlan(std::set<std::string>{}, ""));
    A8_ASSIGN_OR_RETURN(PlanFile low, ReadPlanFile(low_plan));
    r.candidates = Candidates(low.plan);
    std::set<std::string> candidate_set(r.candidates.begin(), r.candidates.end());
    A8_ASSIGN_OR_RETURN(r.low, Train({low_plan, false, &candidate_set,
                                      o_.compare_activations ? &low_acts : nullptr}));
    Progress(fmt::format("{}: {} low-precision nodes; {}", ModeName(), r.candidates.size(),
                         Describe(r.low)));
    if (o_.compare_activations) r.activations = CompareActivations(ref_acts, low_acts);
    r.fixed = r.low;
    if (r.low.passes || r.candidates.empty()) {
      r.runs = runs_;
      r.plans_compiled = compiled_;
      if (!r.low.passes)
        return Internal("{}: the {} run fails ({}) but computes no node in FP16/BF16",
                        o_.compile.model, ModeName(), r.low.failure);
      return r;
    }
    r.needed_search = true;
    A8_ASSIGN_OR_RETURN(std::string low_key, PlanKey(low_plan));
    by_plan_[low_key] = r.low;
    std::map<std::set<int>, PrecisionRun> runs;
    runs[{}] = r.low;
    std::map<std::string, int> index;
    for (size_t i = 0; i < r.candidates.size(); ++i) index[r.candidates[i]] = static_cast<int>(i);
    auto outcome = [&](const PrecisionRun& run) {
      Fp32SetOutcome o;
      o.passes = run.passes;
      if (auto it = index.find(run.suspect); o_.guided && it != index.end()) o.suspect = it->second;
      return o;
    };
    Fp32SetTest test = [&](const std::set<int>& fp32) -> StatusOr<Fp32SetOutcome> {
      std::set<std::string> names;
      for (int i : fp32) names.insert(r.candidates[i]);
      A8_ASSIGN_OR_RETURN(std::string path, CompilePlan(names, ""));
      // Overrides that give the same computation (in amp, any node of an FP16 follow-chain makes
      // the whole chain FP32) share one training run.
      A8_ASSIGN_OR_RETURN(std::string key, PlanKey(path));
      PrecisionRun run;
      if (auto same = by_plan_.find(key); same != by_plan_.end()) {
        run = same->second;
        Progress(fmt::format(
            "  {} node{} in FP32 ({}): the same plan as an earlier run, whose "
            "result it reuses: {}",
            names.size(), names.size() == 1 ? "" : "s", Abbreviate(names), Describe(run)));
      } else {
        A8_ASSIGN_OR_RETURN(run, Train({path, false, &candidate_set, nullptr}));
        by_plan_[key] = run;
        Progress(fmt::format("  run {}: {} node{} in FP32 ({}): {}", runs_, names.size(),
                             names.size() == 1 ? "" : "s", Abbreviate(names), Describe(run)));
      }
      runs[fp32] = run;
      return outcome(run);
    };
    auto progress = [&](const Fp32SearchProgress& p) {
      Progress(fmt::format("{} round {}: {} node{} left, {} run{} done", p.phase, p.round, p.left,
                           p.left == 1 ? "" : "s", runs_, runs_ == 1 ? "" : "s"));
    };
    A8_ASSIGN_OR_RETURN(
        Fp32SearchResult found,
        FindMinimalFp32Set(static_cast<int>(r.candidates.size()), outcome(r.low), test, progress));
    std::vector<std::string> names;
    for (int i : found.fp32) {
      const PrecisionRun& without = runs.at(found.without.at(i));
      NodeEvidence e;
      e.node = r.candidates[i];
      e.op = ops_[e.node];
      e.deviation_without = without.deviation;
      e.failure_without = without.failure;
      r.fp32_nodes.push_back(e);
      names.push_back(e.node);
    }
    r.fixed = runs.at(found.with);
    r.fp32_regex = ExactNamesRegex(names);
    r.runs = runs_;
    r.plans_compiled = compiled_;
    return r;
  }

 private:
  std::string ModeName() const {
    return std::string(PrecisionModeName(o_.compile.config.precision->mode));
  }

  Status MakeWorkDir() {
    if (!o_.work_dir.empty()) {
      work_dir_ = o_.work_dir;
      return Status::Ok();
    }
    std::string tmpl = (fs::temp_directory_path() / "a800c-debug-precision-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr)
      return Internal("debug-precision: cannot create a scratch folder under {}",
                      fs::temp_directory_path().string());
    work_dir_ = tmpl;
    owned_dir_ = true;
    return Status::Ok();
  }

 public:
  ~Debugger() {
    std::error_code ec;
    if (owned_dir_) fs::remove_all(work_dir_, ec);
  }

 private:
  // Compiles the low-precision plan with `fp32` forced into FP32 (nullopt: the fp32 reference).
  // Each distinct set is compiled once.
  StatusOr<std::string> CompilePlan(const std::optional<std::set<std::string>>& fp32,
                                    const std::string& tag) {
    const std::string key = fp32 ? ExactNamesRegex({fp32->begin(), fp32->end()}) : "<fp32>";
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    CompileOptions c = o_.compile;
    c.output = (fs::path(work_dir_) / fmt::format("{}{}.plan", tag, plans_.size())).string();
    c.note = nullptr;
    if (!fp32) {
      c.config.precision.reset();
    } else if (!fp32->empty()) {
      c.config.precision->overrides.push_back(PrecisionOverride::Fp32Nodes(key));
    }
    std::ostringstream unused;
    auto warn = [&](const std::string& w) {
      if (compiled_ == 0) Progress("warning: " + w);
    };
    A8_RETURN_IF_ERROR(Compile(c, unused, warn));
    ++compiled_;
    plans_[key] = c.output;
    return c.output;
  }

  std::vector<std::string> Candidates(const plan::Plan& p) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    if (!p.training()) return out;
    for (int k : p.train().eval_kernels()) {
      const plan::Kernel& kern = p.kernels(k);
      if (kern.op() == "Cast") continue;
      bool low = false;
      for (int id : kern.outputs()) {
        const DType t = DTypeOf(p.buffers(id));
        low = low || t == DType::kF16 || t == DType::kBF16;
      }
      if (!low) continue;
      for (const std::string& n : kern.onnx_nodes()) {
        if (n.empty() || !seen.insert(n).second) continue;
        out.push_back(n);
        ops_[n] = kern.onnx_nodes_size() == 1 ? kern.op() : "fused " + kern.op();
      }
    }
    return out;
  }

  StatusOr<PrecisionRun> Train(const RunRequest& req) {
    A8_ASSIGN_OR_RETURN(PlanFile file, ReadPlanFile(req.plan_path));
    const plan::Plan plan = file.plan;
    const std::vector<bool> forward = ForwardKernels(plan);
    PrecisionRun run;
    std::string forward_blame, step_blame;
    int64_t step_blame_at = -1;
    ExecutorOptions eo;
    eo.seed = o_.seed;
    const plan::Plan* pp = nullptr;
    const Executor* exp = nullptr;
    eo.after_kernel = [&](int k, const StepInfo& info) -> Status {
      if (info.eval) return Status::Ok();
      const plan::Kernel& kern = pp->kernels(k);
      if (req.activations != nullptr && info.step == 0 && forward[k] && kern.op() != "Cast" &&
          kern.outputs_size() > 0) {
        const plan::Buffer& b = pp->buffers(kern.outputs(0));
        if (IsFloat(DTypeOf(b))) {
          std::vector<double> v(static_cast<size_t>(Elements(b)));
          A8_RETURN_IF_ERROR(
              cpu::Cast(DTypeOf(b), DType::kF64, Elements(b), exp->BufferData(b.id()), v.data()));
          std::string nodes;
          for (const std::string& n : kern.onnx_nodes()) nodes += (nodes.empty() ? "" : ", ") + n;
          (*req.activations)[b.name()] = {k, fmt::format("{} ({})", kern.op(), nodes),
                                          std::move(v)};
        }
      }
      if (req.candidates == nullptr) return Status::Ok();
      if (forward[k] ? !forward_blame.empty() : step_blame_at == info.step) return Status::Ok();
      for (int id : kern.outputs()) {
        const plan::Buffer& b = pp->buffers(id);
        auto bad = FindNonFinite(DTypeOf(b), exp->BufferData(id),
                                 static_cast<int64_t>(b.bytes() / DTypeSize(DTypeOf(b))));
        if (!bad) continue;
        // In a fused forward kernel, the member that made it (as --check-numerics names it).
        std::string blame;
        if (forward[k] && id == kern.outputs(0)) {
          auto read = [&](int buffer) -> StatusOr<std::vector<double>> {
            const plan::Buffer& in = pp->buffers(buffer);
            if (!IsFloat(DTypeOf(in))) return std::vector<double>{};
            std::vector<double> v(static_cast<size_t>(Elements(in)));
            A8_RETURN_IF_ERROR(cpu::Cast(DTypeOf(in), DType::kF64, Elements(in),
                                         exp->BufferData(buffer), v.data()));
            return v;
          };
          auto member = BlameOnnxNode(*pp, kern, bad->index, read);
          if (member.ok() && req.candidates->count(*member) > 0) blame = *member;
        }
        if (blame.empty()) blame = Blame(kern, *req.candidates);
        std::string what = fmt::format("step {}: {} ({}) output '{}' is {}", info.step + 1,
                                       blame.empty() ? kern.node() : blame, kern.op(), b.name(),
                                       NonFiniteName(bad->value));
        if (forward[k]) {
          forward_blame = blame;
          run.first_nonfinite = what;
        } else {
          step_blame = blame;
          step_blame_at = info.step;
          if (forward_blame.empty()) run.first_nonfinite = what;
        }
        break;
      }
      return Status::Ok();
    };
    A8_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex,
                        Executor::Create(std::move(file), o_.make_backend(), eo));
    pp = &ex->plan();
    exp = ex.get();
    A8_ASSIGN_OR_RETURN(
        Dataset data,
        Dataset::Load(ex->plan(), o_.inputs, {.flag = "--input", .allow_missing = o_.synthetic}));
    auto fill = [&](Executor& e, int64_t step) -> Status {
      A8_RETURN_IF_ERROR(data.FillTrainBatch(step, o_.shuffle, o_.seed, e));
      return FillSyntheticInputs(e, data, o_.seed, step);
    };
    struct Collect : TrainObserver {
      PrecisionRun* run;
      Status OnStep(const StepRecord& rec) override {
        run->losses.push_back(rec.loss);
        run->skipped += rec.skipped ? 1 : 0;
        return Status::Ok();
      }
    } collect;
    collect.run = &run;
    TrainOptions to;
    to.total_steps = o_.steps;
    to.seed = o_.seed;
    ++runs_;
    auto summary = a8::Train(*ex, fill, nullptr, to, collect);
    if (!summary.ok()) {
      // A low-precision run that the trainer stops (its loss scale collapsed) fails; anything
      // else, and any error of the reference, is an error.
      if (req.reference || summary.status().code() != StatusCode::kInternal)
        return summary.status().WithContext(req.plan_path);
      run.passes = false;
      run.failure = summary.status().message();
      run.deviation = std::numeric_limits<double>::infinity();
    } else {
      run.final_scale = summary->final_scale;
    }
    run.suspect = !forward_blame.empty() ? forward_blame : step_blame;
    if (req.reference || !run.failure.empty()) return run;
    Judge(&run);
    return run;
  }

  void Judge(PrecisionRun* run) const {
    double dev = 0;
    int64_t worst = 0;
    for (size_t i = 0; i < run->losses.size() && i < reference_.size(); ++i) {
      const double d =
          std::fabs(run->losses[i] - reference_[i]) / std::max(std::fabs(reference_[i]), 1e-3);
      if (!std::isfinite(run->losses[i]) || !(d <= dev)) {
        if (!std::isfinite(run->losses[i]) || std::isnan(d)) {
          dev = std::numeric_limits<double>::infinity();
          worst = static_cast<int64_t>(i);
          break;
        }
        dev = d;
        worst = static_cast<int64_t>(i);
      }
    }
    run->deviation = dev;
    if (dev > o_.tolerance) {
      run->passes = false;
      run->failure =
          std::isfinite(dev)
              ? fmt::format("loss deviates by {:.3g} at step {} (tolerance {})", dev, worst + 1,
                            o_.tolerance)
              : fmt::format("loss is {} at step {}", NonFiniteName(run->losses[worst]), worst + 1);
    } else if (2 * run->skipped > static_cast<int64_t>(run->losses.size())) {
      run->passes = false;
      run->failure =
          fmt::format("{} of {} updates skipped for overflow", run->skipped, run->losses.size());
    }
  }

  static std::string Describe(const PrecisionRun& run) {
    if (run.passes)
      return fmt::format("passes (deviation {:.3g}, {} skipped)", run.deviation, run.skipped);
    std::string s = "fails: " + run.failure;
    if (!run.first_nonfinite.empty()) s += "; first non-finite: " + run.first_nonfinite;
    return s;
  }

  static std::string Abbreviate(const std::set<std::string>& names) {
    std::string s;
    int shown = 0;
    for (const std::string& n : names) {
      if (shown == 4) return s + fmt::format(", ... {} more", names.size() - 4);
      s += (shown++ > 0 ? ", " : "") + n;
    }
    return s.empty() ? "none" : s;
  }

  std::vector<ActivationDiff> CompareActivations(const Activations& ref,
                                                 const Activations& low) const {
    std::vector<std::pair<int, ActivationDiff>> ordered;
    for (const auto& [name, act] : low) {
      auto it = ref.find(name);
      if (it == ref.end() || it->second.values.size() != act.values.size()) continue;
      ActivationDiff d;
      d.node = name;
      d.op = act.label;
      for (size_t i = 0; i < act.values.size(); ++i) {
        const double a = act.values[i], b = it->second.values[i];
        const double diff = std::isfinite(a) ? std::fabs(a - b) : HUGE_VAL;
        d.max_abs_diff = std::max(d.max_abs_diff, diff);
        d.max_abs_ref = std::max(d.max_abs_ref, std::fabs(b));
      }
      ordered.emplace_back(act.order, d);
    }
    std::sort(ordered.begin(), ordered.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ActivationDiff> out;
    for (auto& [order, d] : ordered) out.push_back(std::move(d));
    return out;
  }

  void Progress(const std::string& line) const {
    if (o_.progress) o_.progress(line);
  }

  const PrecisionDebugOptions& o_;
  std::string work_dir_;
  bool owned_dir_ = false;
  std::map<std::string, std::string> plans_;     // fp32 set regex -> plan path
  std::map<std::string, std::string> ops_;       // candidate -> its kernel's op
  std::map<std::string, PrecisionRun> by_plan_;  // PlanKey -> its run
  std::vector<double> reference_;
  int runs_ = 0, compiled_ = 0;
};

std::string JsonNumber(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }

}  // namespace

std::string ExactNamesRegex(const std::vector<std::string>& names) {
  std::string out = "^(?:";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += '|';
    for (char c : names[i]) {
      if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
      out += c;
    }
  }
  return out + ")$";
}

StatusOr<PrecisionDebugResult> DebugPrecision(const PrecisionDebugOptions& options) {
  if (!options.make_backend) return Internal("DebugPrecision: no backend factory");
  Debugger d(options);
  return d.Run();
}

Status WritePrecisionPolicy(const std::string& path, const PrecisionDebugOptions& options,
                            const PrecisionDebugResult& r) {
  nlohmann::ordered_json j;
  j["fp32_nodes"] = r.fp32_regex;
  nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
  for (const NodeEvidence& e : r.fp32_nodes) {
    nlohmann::ordered_json n;
    n["node"] = e.node;
    n["op"] = e.op;
    n["deviation_with"] = nlohmann::ordered_json::parse(JsonNumber(r.fixed.deviation));
    n["deviation_without"] = nlohmann::ordered_json::parse(JsonNumber(e.deviation_without));
    n["without"] = e.failure_without;
    evidence.push_back(n);
  }
  j["evidence"] = evidence;
  nlohmann::ordered_json about;
  about["model"] = options.compile.model;
  about["precision"] = std::string(PrecisionModeName(options.compile.config.precision->mode));
  about["steps"] = options.steps;
  about["tolerance"] = options.tolerance;
  about["training_runs"] = r.runs;
  about["low_precision_nodes"] = r.candidates.size();
  j["debug_precision"] = about;
  return WriteFileAtomically(path, j.dump(2) + "\n");
}

}  // namespace a8

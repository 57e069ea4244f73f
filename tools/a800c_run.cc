// a800c-run: runs a plan (CLI.md). An inference plan runs --steps steps on .npy inputs or seeded
// synthetic data, writes the last step's outputs and prints a timing summary. A training plan
// trains (runtime/core/trainer.h): batches from the datasets in a seeded order, evaluation on an
// eval set, --metrics JSONL, checkpoints and --resume, a progress bar on a terminal and plain
// lines otherwise, and a closing summary.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "compiler/plan/plan_file.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/comm/communicator.h"
#include "runtime/core/checkpoint.h"
#include "runtime/core/checkpoint_files.h"
#include "runtime/core/console_observer.h"
#include "runtime/core/dataset.h"
#include "runtime/core/executor.h"
#include "runtime/core/npy.h"
#include "runtime/core/numerics_stats.h"
#include "runtime/core/output_paths.h"
#include "runtime/core/progress.h"
#include "runtime/core/rank_sync.h"
#include "runtime/core/synthetic.h"
#include "runtime/core/trace.h"
#include "runtime/core/trainer.h"
#include "tools/cli_common.h"
#include "tools/run_backends.h"
#if defined(A800C_HAVE_CUDA)
#include "runtime/comm/comm_nccl.h"
#endif

namespace {

constexpr const char* kProgram = "a800c-run";

int Fail(const a8::Status& s) { return a8::cli::Fail(kProgram, s); }

// A device backend's peak memory (device allocations of this process: the plan's regions, the
// scratch and library workspaces), one line benchmarks read.
void PrintPeakMemory(const a8::Executor& ex) {
  if (const uint64_t peak = ex.backend().peak_device_bytes(); peak > 0)
    std::cout << fmt::format("{}: peak device memory {:.1f} MiB ({} bytes)\n", kProgram,
                             static_cast<double>(peak) / (1 << 20), peak);
}

a8::DType DTypeOf(const a8::plan::Buffer& b) { return static_cast<a8::DType>(b.type().dtype()); }
std::vector<int64_t> DimsOf(const a8::plan::Buffer& b) {
  return {b.type().dims().begin(), b.type().dims().end()};
}

// Splits NAME=FILE specs of `flag`.
a8::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseSpecs(
    const std::vector<std::string>& specs, const char* flag) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return a8::InvalidInput("{} {}: expected NAME=FILE.npy", flag, spec);
    out.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
  }
  return out;
}

std::string FileNameFor(std::string name) {
  for (char& c : name)
    if (c == '/' || c == '\\' || c == '\0') c = '_';
  if (name.empty() || name == "." || name == "..") name = "_" + name;
  return name + ".npy";
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

struct RunFlags {
  std::vector<std::string> inputs, eval_inputs;
  bool synthetic = false, shuffle = false;
  uint64_t seed = 0;
  bool seed_given = false;
  int64_t steps = 1, epochs = 0;
  bool steps_given = false;
  int64_t eval_every = 0, save_every = 0, log_every = 0, keep_checkpoints = 0;
  bool keep_best = false, allow_nonfinite = false;
  bool check_numerics = false;  // also names a non-finite input sample (Dataset)
  std::string numerics_stats;   // --numerics-stats FILE.jsonl, every `every` steps
  int64_t every = 10;
  a8::NumericsStats* stats = nullptr;
  std::string metrics, checkpoint, resume, output_dir, progress;
  std::string training_only;  // the first training-only flag given, if any
};

a8::Status WriteOutputs(const a8::Executor& ex, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return a8::InvalidInput("--output-dir {}: {}", dir, ec.message());
  for (const auto& bind : ex.plan().outputs()) {
    const a8::plan::Buffer& b = ex.plan().buffers(bind.buffer());
    std::string path = (std::filesystem::path(dir) / FileNameFor(bind.name())).string();
    std::vector<uint8_t> bytes(b.bytes());
    A8_RETURN_IF_ERROR(ex.ReadBuffer(b.id(), bytes.data()));
    A8_RETURN_IF_ERROR(a8::WriteNpyFile(path, DTypeOf(b), DimsOf(b), bytes.data()));
  }
  return a8::Status::Ok();
}

std::optional<std::ofstream> OpenMetrics(const std::string& path, bool append) {
  if (path.empty()) return std::nullopt;
  return std::ofstream(path, append ? std::ios::app : std::ios::trunc);
}

int RunInference(a8::Executor& ex, const RunFlags& f, const std::string& plan_path) {
  if (!f.training_only.empty())
    return Fail(a8::InvalidInput("{}: needs a training plan (this plan infers)", f.training_only));
  auto specs = ParseSpecs(f.inputs, "--input");
  if (!specs.ok()) return Fail(specs.status());
  auto data = a8::Dataset::Load(ex.plan(), *specs,
                                {.flag = "--input",
                                 .training = false,
                                 .allow_missing = f.synthetic,
                                 .check_numerics = f.check_numerics});
  if (!data.ok()) return Fail(data.status());
  auto metrics = OpenMetrics(f.metrics, false);
  if (metrics && !*metrics) return Fail(a8::InvalidInput("--metrics {}: cannot create", f.metrics));
  std::vector<double> times;
  for (int64_t step = 0; step < f.steps; ++step) {
    a8::Status s = data->FillWrapped(step, f.shuffle, f.seed, ex);
    if (s.ok()) s = a8::FillSyntheticInputs(ex, *data, f.seed, step);
    if (!s.ok()) return Fail(s);
    auto t0 = std::chrono::steady_clock::now();
    s = ex.Run();
    auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) return Fail(s.WithContext(plan_path));  // as a training run names it
    times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (metrics)
      *metrics << fmt::format("{{\"step\": {}, \"step_ms\": {:.4f}}}\n", step + 1, times.back());
  }
  if (!f.output_dir.empty()) {
    a8::Status s = WriteOutputs(ex, f.output_dir);
    if (!s.ok()) return Fail(s);
  }
  std::cout << fmt::format("{}: {} step{} on {}: median {:.3f} ms, p90 {:.3f} ms\n", kProgram,
                           f.steps, f.steps == 1 ? "" : "s", ex.backend().name(),
                           Percentile(times, 0.5), Percentile(times, 0.9));
  PrintPeakMemory(ex);
  return 0;
}

int RunTraining(a8::Executor& ex, const RunFlags& f, const std::string& plan_path,
                a8::Communicator* comm) {
  const a8::plan::Plan& plan = ex.plan();
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int ranks = comm != nullptr ? comm->size() : 1;
  if (ranks > 1 && !a8::HasGradientBuckets(plan)) {
    return Fail(a8::InvalidInput(
        "{}: this plan does not all-reduce its gradients (it trains with the model's own "
        "optimizer, from its TrainingInfoProto), so it cannot train on {} ranks",
        plan_path, ranks));
  }
  auto specs = ParseSpecs(f.inputs, "--input");
  if (!specs.ok()) return Fail(specs.status());
  auto data = a8::Dataset::Load(
      plan, *specs,
      {.flag = "--input", .allow_missing = f.synthetic, .check_numerics = f.check_numerics});
  if (!data.ok()) return Fail(data.status());
  data->SetShard(rank, ranks);
  if (ranks > 1 && data->samples() > 0 && data->batches_per_epoch() == 0) {
    return Fail(a8::InvalidInput(
        "--input: {} samples are fewer than one global batch ({} ranks x batch {})",
        data->samples(), ranks, data->batch()));
  }
  std::optional<a8::Dataset> eval;
  if (!f.eval_inputs.empty()) {
    auto eval_specs = ParseSpecs(f.eval_inputs, "--eval-input");
    if (!eval_specs.ok()) return Fail(eval_specs.status());
    auto e = a8::Dataset::Load(plan, *eval_specs,
                               {.flag = "--eval-input", .check_numerics = f.check_numerics});
    if (!e.ok()) return Fail(e.status());
    eval = std::move(e).value();
  } else if (f.eval_every > 0) {
    return Fail(a8::InvalidInput("--eval-every: needs --eval-input NAME=FILE.npy"));
  }
  if (f.epochs > 0 && data->batches_per_epoch() == 0)
    return Fail(a8::InvalidInput("--epochs: needs --input data (an epoch is a pass over it)"));
  if (f.save_every > 0 && f.checkpoint.empty())
    return Fail(a8::InvalidInput("--save-every: needs --checkpoint FILE.safetensors"));

  if (f.keep_checkpoints > 0 && f.checkpoint.empty())
    return Fail(a8::InvalidInput("--keep-checkpoints: needs --checkpoint FILE.safetensors"));
  if (f.keep_best && (f.keep_checkpoints == 0 || !eval))
    return Fail(a8::InvalidInput("--keep-best: needs --keep-checkpoints=K and --eval-input"));
  if (!f.checkpoint.empty() && rank == 0) {
    auto removed = a8::RemoveStaleTempFiles(f.checkpoint);
    if (!removed.ok()) return Fail(removed.status());
    for (const std::string& path : *removed)
      std::cerr << fmt::format("{}: removed {}, left by a checkpoint write that was killed\n",
                               kProgram, path);
  }

  uint64_t seed = f.seed;
  std::string resumed_from = f.resume;
  std::optional<a8::CheckpointInfo> info;
  const a8::RestoreOptions restore{.allow_nonfinite = f.allow_nonfinite};
  if (f.resume == "auto") {
    if (f.checkpoint.empty())
      return Fail(
          a8::InvalidInput("--resume=auto: needs --checkpoint FILE.safetensors (the "
                           "checkpoints it looks for)"));
    auto found = a8::ResumeNewest(ex, f.checkpoint, restore);
    if (!found.ok()) return Fail(found.status());
    for (const std::string& w : found->warnings)
      if (rank == 0) std::cerr << fmt::format("{}: warning: {}\n", kProgram, w);
    resumed_from = found->path;
    if (!found->path.empty()) info = found->info;
    if (found->path.empty() && rank == 0)
      std::cout << fmt::format("--resume=auto: no checkpoint of {} yet: starting at step 0\n",
                               f.checkpoint);
  } else if (!f.resume.empty()) {
    auto loaded = a8::LoadCheckpoint(ex, f.resume, restore);
    if (!loaded.ok()) return Fail(loaded.status().WithContext("--resume"));
    info = *loaded;
  }
  if (info) {
    if (f.seed_given && info->seed != f.seed)
      return Fail(a8::InvalidInput(
          "--resume {}: the checkpoint was trained with --seed={}, not {} (the data order and "
          "dropout depend on it)",
          resumed_from, info->seed, f.seed));
    seed = info->seed;
    ex.set_seed(seed);
    std::string shuffle = f.shuffle ? "1" : "0";
    if (info->extra.count("shuffle") && info->extra.at("shuffle") != shuffle)
      std::cerr << fmt::format(
          "{}: warning: --resume {}: the checkpoint was trained {} --shuffle; the data order "
          "differs from an uninterrupted run\n",
          kProgram, resumed_from, f.shuffle ? "without" : "with");
    if (rank == 0)
      std::cout << fmt::format("resumed from {} at step {}\n", resumed_from, ex.step());
  }
  if (comm != nullptr) {
    a8::Status s = a8::SyncRanks(*comm, ex, plan_path);
    if (!s.ok()) return Fail(s);
  }
  int64_t total = f.epochs > 0 ? f.epochs * data->batches_per_epoch()
                  : f.steps_given || data->batches_per_epoch() == 0 ? f.steps
                                                                    : data->batches_per_epoch();
  const int64_t first = ex.step();
  if (info && total <= first) {
    return Fail(a8::InvalidInput(
        "{}: the checkpoint {} is already at step {}: {} counts the whole training, the "
        "checkpoint's steps included, so give more than {} steps",
        f.epochs > 0 ? fmt::format("--epochs {} ({} steps)", f.epochs, total)
                     : fmt::format("--steps {}", total),
        resumed_from, first, f.epochs > 0 ? "--epochs" : "--steps", first));
  }
  int64_t log_every = f.log_every > 0 ? f.log_every : std::max<int64_t>(1, (total - first) / 10);

  auto metrics = OpenMetrics(rank == 0 ? f.metrics : "", info.has_value());
  if (metrics && !*metrics) return Fail(a8::InvalidInput("--metrics {}: cannot create", f.metrics));
  auto progress = a8::ChooseProgress(f.progress, isatty(STDOUT_FILENO) != 0, environ);
  if (!progress.ok()) return Fail(progress.status());
  a8::ConsoleObserver printer(first, total, log_every, *progress, metrics ? &*metrics : nullptr,
                              ranks > 1 ? rank : -1);
  a8::QuietObserver quiet;
  a8::TrainObserver& shown = rank == 0 ? static_cast<a8::TrainObserver&>(printer) : quiet;
  std::optional<a8::NumericsStatsObserver> with_stats;
  if (f.stats != nullptr) with_stats.emplace(shown, *f.stats);
  a8::TrainObserver& observer = with_stats ? *with_stats : shown;
  a8::TrainOptions opts;
  opts.total_steps = total;
  opts.eval_every = f.eval_every;
  opts.checkpoint = rank == 0 ? f.checkpoint : "";
  opts.save_every = f.save_every;
  opts.keep_checkpoints = f.keep_checkpoints;
  opts.keep_best = f.keep_best;
  opts.seed = seed;
  opts.checkpoint_extra["shuffle"] = f.shuffle ? "1" : "0";
  opts.allow_nonfinite = f.allow_nonfinite;
  a8::Dataset& train = *data;
  bool shuffle = f.shuffle;
  // Synthetic inputs differ between ranks (each rank's share of a larger synthetic batch).
  const uint64_t synthetic_seed = seed + static_cast<uint64_t>(rank) * 0x9E3779B97F4A7C15ull;
  // Test hooks (tests/dist): A8_TEST_KILL_RANK=r and A8_TEST_KILL_STEP=s make rank r die by
  // SIGKILL before step s, as a crashed or OOM-killed rank would; with A8_TEST_HANG=1 it stops
  // responding instead (a deadlocked rank), which only the collective timeout can catch.
  const char* kill_rank = std::getenv("A8_TEST_KILL_RANK");
  const char* kill_step = std::getenv("A8_TEST_KILL_STEP");
  const int64_t die_at =
      kill_rank != nullptr && kill_step != nullptr && std::atoi(kill_rank) == rank
          ? std::atoll(kill_step)
          : -1;
  auto fill = [&](a8::Executor& e, int64_t step) -> a8::Status {
    if (step == die_at) {
      if (std::getenv("A8_TEST_HANG") != nullptr) {
        while (true) pause();
      }
      std::raise(SIGKILL);
    }
    A8_RETURN_IF_ERROR(train.FillTrainBatch(step, shuffle, seed, e));
    return a8::FillSyntheticInputs(e, train, synthetic_seed, step);
  };
  auto start = std::chrono::steady_clock::now();
  auto summary = a8::Train(ex, fill, eval && rank == 0 ? &*eval : nullptr, opts, observer);
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printer.EndLine();
  if (!summary.ok()) return Fail(summary.status().WithContext(plan_path));
  if (comm != nullptr) {
    a8::Status agree = a8::CheckParametersAgree(*comm, ex);
    if (!agree.ok()) return Fail(agree);
    if (rank == 0) {
      std::cout << fmt::format("{}: parameters and step state identical on all {} ranks\n",
                               kProgram, ranks);
    }
  }
  if (rank != 0) return 0;
  if (!f.output_dir.empty()) {
    a8::Status s = WriteOutputs(ex, f.output_dir);
    if (!s.ok()) return Fail(s);
  }
  const a8::TrainSummary& s = *summary;
  std::cout << fmt::format(
      "{}: trained {} step{} (step {} -> {}) on {} in {:.2f} s: median {:.3f} ms/step, final "
      "loss {:.6f}",
      kProgram, s.last_step - s.first_step, s.last_step - s.first_step == 1 ? "" : "s",
      s.first_step, s.last_step, ex.backend().name(), wall_s, Percentile(s.step_ms, 0.5),
      s.final_loss);
  if (s.scaled) {
    std::cout << fmt::format(", final loss scale {:g}, {} update{} skipped for overflow",
                             s.final_scale, s.skipped, s.skipped == 1 ? "" : "s");
  }
  if (s.has_eval && s.eval.has_accuracy)
    std::cout << fmt::format(", eval accuracy {:.2f}%", 100 * s.eval.accuracy);
  else if (s.has_eval)
    std::cout << fmt::format(", eval loss {:.6f}", s.eval.loss);
  std::cout << "\n";
  PrintPeakMemory(ex);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "a800c-run: runs an a800c plan (written by a800c) on a backend.\n"
      "Inputs come from .npy files (--input NAME=FILE.npy, batched along the first axis) or are\n"
      "seeded random data (--synthetic). A training plan trains: every step is a full training\n"
      "step; --steps/--epochs say how far, --checkpoint/--resume save and continue.",
      kProgram);
  app.set_help_flag("-h,--help", "Print this help and exit");
  std::string plan_path, backend = "auto";
  RunFlags f;
  bool list_kernels = false, poison = false;
  bool& check_numerics = f.check_numerics;
  app.add_option("PLAN", plan_path, "The plan file")->type_name("PLAN");
  bool no_cuda_graphs = false, reference = false;
  app.add_option("--backend", backend,
                 "auto (CUDA when this build has it and a GPU is usable, else CPU), cpu, cuda, "
                 "or cuda-emu (the CUDA backend's kernels run on the CPU, for checking them "
                 "without a GPU; slow)")
      ->type_name("auto|cpu|cuda|cuda-emu")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "cuda-emu"}));
  app.add_flag("--reference", reference,
               "CPU backend: run the reference kernels (bit-identical to cuda-emu) instead of the "
               "fast ones (oneDNN GEMMs: AMX/AVX-512 where the CPU has them)");
  app.add_flag("--no-cuda-graphs", no_cuda_graphs,
               "CUDA: launch every kernel of every step instead of replaying the step captured "
               "as one CUDA graph (for comparing the two)");
  app.add_option("--input", f.inputs, "Binds a graph input to a .npy dataset (repeatable)")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false);
  app.add_flag("--synthetic", f.synthetic, "Seeded random data for inputs not given by --input");
  auto* seed_opt =
      app.add_option("--seed", f.seed, "Seed of synthetic data, shuffling and dropout (default 0)")
          ->type_name("N")
          ->check(a8::cli::IntegerAtLeast(0));
  app.add_flag("--shuffle", f.shuffle, "Visit the dataset in a seeded random order per epoch");
  auto* steps_opt =
      a8::cli::AddCountOption(app, "--steps", f.steps,
                              "Run until the step counter reaches N (training: the total, "
                              "counting the steps of a resumed checkpoint; default 1, or "
                              "one epoch of --input data)");
  std::vector<CLI::Option*> training_only;
  training_only.push_back(
      a8::cli::AddCountOption(app, "--epochs", f.epochs,
                              "Training: run until N passes over the --input data")
          ->excludes(steps_opt));
  training_only.push_back(
      app.add_option("--eval-input", f.eval_inputs,
                     "Training: binds an input to an evaluation dataset (repeatable)")
          ->type_name("NAME=FILE.npy")
          ->allow_extra_args(false));
  training_only.push_back(a8::cli::AddCountOption(
      app, "--eval-every", f.eval_every,
      "Training: evaluate every N steps (and at the end) and print the accuracy"));
  app.add_option("--metrics", f.metrics,
                 "Write one JSON object a step (step, loss, scale, skipped, lr, step_ms, "
                 "grad_norm)")
      ->type_name("FILE.jsonl");
  training_only.push_back(
      app.add_option("--checkpoint", f.checkpoint,
                     "Training: save parameters and state here (safetensors) at the end")
          ->type_name("FILE.safetensors"));
  training_only.push_back(a8::cli::AddCountOption(app, "--save-every", f.save_every,
                                                  "Training: also save every N steps"));
  training_only.push_back(
      app.add_option("--resume", f.resume,
                     "Training: continue from this checkpoint; auto: from the newest valid one "
                     "of --checkpoint (a torn or corrupt one is skipped with a warning; none "
                     "yet: start at step 0), so a failed run relaunched as it was continues")
          ->type_name("FILE.safetensors|auto"));
  training_only.push_back(
      app.add_flag("--allow-nonfinite", f.allow_nonfinite,
                   "Training: resume from, and save, a checkpoint whose parameters or "
                   "optimizer state hold NaN or Inf (both refused otherwise)"));
  training_only.push_back(
      app.add_option("--keep-checkpoints", f.keep_checkpoints,
                     "Training: every save also writes NAME.step-N.safetensors beside "
                     "--checkpoint; keep the newest K of them")
          ->type_name("K")
          ->check(CLI::PositiveNumber));
  training_only.push_back(
      app.add_option("--numerics-stats", f.numerics_stats,
                     "Training: per parameter and activation group, the shares of values that "
                     "are zero, subnormal or within 2x of overflow in FP16, and the gradient "
                     "headroom under the loss scale, as JSON lines (README)")
          ->type_name("FILE.jsonl"));
  training_only.push_back(
      a8::cli::AddCountOption(app, "--every", f.every,
                              "Training: --numerics-stats samples the first step and every N-th "
                              "(default 10)"));
  training_only.push_back(app.add_flag(
      "--keep-best", f.keep_best,
      "Training: with --keep-checkpoints and --eval-input, also keep the checkpoint of the "
      "lowest eval loss (a step whose evaluation beats every saved one is saved)"));
  app.add_option("--progress", f.progress,
                 "Training: bar (a progress bar), lines (a line every --log-every steps) or "
                 "none; default: a bar when stdout is a terminal and not under a launcher "
                 "(mpirun gives rank 0 a pseudo-terminal), lines otherwise")
      ->type_name("bar|lines|none")
      ->check(CLI::IsMember({"bar", "lines", "none"}));
  training_only.push_back(a8::cli::AddCountOption(
      app, "--log-every", f.log_every,
      "Training: a progress line every N steps when stdout is not a terminal"));
  app.add_option("--output-dir", f.output_dir,
                 "Write each graph output of the last step as NAME.npy")
      ->type_name("DIR");
  app.add_flag("--list-kernels", list_kernels,
               "List the kernels the backend implements, then exit");
  app.add_flag("--poison-freed", poison,
               "Debug: fill arena bytes with NaN patterns once their buffer is dead");
  app.add_flag("--check-numerics", check_numerics,
               "Debug: after every kernel, stop at the first Inf/NaN in a float output, naming "
               "the node, its ONNX nodes, the op, the buffer, its dtype, the step, the element "
               "and the loss scale (exit 1). With a dynamic loss scaler only the forward pass and "
               "the parameters and state after each step are checked: non-finite gradients are "
               "expected now and then and only skip that update");
  std::string trace_path, trace_steps;
  app.add_option("--trace", trace_path,
                 "Write a Chrome/Perfetto trace (ui.perfetto.dev) of the steps run: a slice per "
                 "kernel named by its ONNX nodes, with op, types and bytes; counters for the "
                 "arena, the loss scale and skipped updates; one process per data-parallel rank")
      ->type_name("FILE.json");
  app.add_option("--trace-steps", trace_steps,
                 "With --trace: trace only the steps A to B-1 of the step counter (A:B, A: or "
                 ":B; default: every step)")
      ->type_name("A:B");
  double collective_timeout = 300;
  app.add_option("--collective-timeout", collective_timeout,
                 "Data parallel (mpirun -np N a800c-run ...): a collective that does not complete "
                 "within this many seconds (a rank died or hangs) stops every rank with an error "
                 "(default: 300)")
      ->type_name("SECONDS");
  if (auto stop = a8::cli::ParseWithVersion(app, argc, argv, kProgram)) return *stop;
  f.seed_given = seed_opt->count() > 0;
  f.steps_given = steps_opt->count() > 0;
  for (const CLI::Option* o : training_only)
    if (o->count() > 0 && f.training_only.empty()) f.training_only = o->get_name();
  if (list_kernels) return a8::cli::ListKernels(backend);
  if (plan_path.empty()) return Fail(a8::InvalidInput("PLAN: no plan given (see --help)"));
  // Every output is checked before any work, so that no step is lost to a bad path at the end.
  if (auto s = a8::CheckOutputPaths({{"--checkpoint", f.checkpoint},
                                     {"--metrics", f.metrics},
                                     {"--trace", trace_path},
                                     {"--output-dir", f.output_dir, true}});
      !s.ok())
    return Fail(s);

  // The backend first: on a GPU, the NCCL communicator below needs to know it runs on one.
  auto be = a8::cli::MakeBackend(backend, !no_cuda_graphs, reference);
  if (!be.ok()) return Fail(be.status());
  // Data parallel: the launcher's ranks (mpirun); nullptr for one process.
  auto comm = a8::CreateCommunicator(collective_timeout);
  if (!comm.ok()) return Fail(comm.status());
#if defined(A800C_HAVE_CUDA)
  // On the GPU the gradients are reduced by NCCL, bootstrapped over the launcher's channel.
  if ((*be)->name() == "cuda" && *comm != nullptr && (*comm)->size() > 1) {
    auto nccl = a8::CreateNcclCommunicator(std::move(comm).value(), collective_timeout);
    if (!nccl.ok()) return Fail(nccl.status());
    comm = std::move(nccl);
  }
#endif
  // mpirun -np 1 is one process: nothing to say, nothing to synchronise.
  const bool parallel = *comm != nullptr && (*comm)->size() > 1;
  if (parallel && (*comm)->rank() == 0) {
    std::cout << fmt::format("{}: data parallel: {}\n", kProgram, (*comm)->description());
  }
  auto file = a8::ReadPlanFile(plan_path);
  if (!file.ok()) return Fail(file.status());
  auto tracer = a8::MakeTracer(trace_path, trace_steps, parallel ? (*comm)->rank() : 0,
                               parallel ? (*comm)->size() : 1);
  if (!tracer.ok()) return Fail(tracer.status());
  a8::ExecutorOptions opts;
  opts.tracer = tracer->get();
  opts.poison_freed = poison;
  opts.check_numerics = check_numerics;
  opts.seed = f.seed;
  opts.comm = comm->get();
  std::unique_ptr<a8::NumericsStats> stats;  // rank 0 only
  if (!f.numerics_stats.empty() && file->plan.training() && (!*comm || (*comm)->rank() == 0)) {
    auto created = a8::NumericsStats::Create(file->plan, f.numerics_stats, f.every);
    if (!created.ok()) return Fail(created.status());
    stats = std::move(created).value();
    opts.after_kernel = [s = stats.get()](int k, const a8::StepInfo& info) {
      return s->AfterKernel(k, info);
    };
  }
  auto ex = a8::Executor::Create(std::move(file).value(), std::move(be).value(), opts);
  if (!ex.ok()) return Fail(ex.status().WithContext(plan_path));
  if (stats) stats->Attach(**ex);
  f.stats = stats.get();
  if (comm->get() == nullptr || (*comm)->rank() == 0)
    std::cout << fmt::format("{}: backend {}: {}\n", kProgram, (*ex)->backend().name(),
                             (*ex)->backend().device());
  if (!(*ex)->plan().training()) {
    if (parallel) {
      return Fail(a8::InvalidInput(
          "{}: an inference plan under mpirun ({} ranks): data parallel runs training plans",
          plan_path, (*comm)->size()));
    }
  }
  const int rc = (*ex)->plan().training()
                     ? RunTraining(**ex, f, plan_path, parallel ? comm->get() : nullptr)
                     : RunInference(**ex, f, plan_path);
  if (*tracer == nullptr) return rc;
  if (auto s = a8::WriteTrace(**tracer, trace_path, parallel ? comm->get() : nullptr, rc != 0);
      !s.ok())
    return rc != 0 ? rc : Fail(s);
  return rc;
}

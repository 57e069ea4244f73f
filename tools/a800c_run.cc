// a800c-run: runs an inference plan on a backend (CLI.md). Loads and validates the plan, binds
// inputs from .npy files (batched along the first axis) or seeded synthetic data, runs --steps
// steps, writes the last step's outputs and prints a timing summary.
#include <CLI/CLI.hpp>

#include "tools/cli_common.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compiler/driver/driver.h"
#include "compiler/plan/plan_file.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/executor.h"
#include "runtime/core/npy.h"
#include "runtime/cpu/cpu_backend.h"

namespace {

constexpr const char* kProgram = "a800c-run";

int Fail(const a8::Status& s) { return a8::cli::Fail(kProgram, s); }

struct Dataset {
  std::string file;
  a8::NpyArray array;
  int64_t length = 1;       // samples along the first axis
  size_t sample_bytes = 0;  // bytes of one sample
};

a8::DType DTypeOf(const a8::plan::Buffer& b) { return static_cast<a8::DType>(b.type().dtype()); }
std::vector<int64_t> DimsOf(const a8::plan::Buffer& b) {
  return {b.type().dims().begin(), b.type().dims().end()};
}

std::string DimsText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

a8::StatusOr<Dataset> LoadDataset(const std::string& name, const std::string& file,
                                  const a8::plan::Buffer& b) {
  a8::DType want = DTypeOf(b);
  A8_ASSIGN_OR_RETURN(a8::NpyArray arr, a8::ReadNpyFile(file, want == a8::DType::kBF16));
  std::vector<int64_t> dims = DimsOf(b);
  std::string where = fmt::format("--input {}={}", name, file);
  if (arr.dtype != want)
    return a8::InvalidInput("{}: dtype: the file holds {}, the plan's input is {}", where,
                            a8::DTypeName(arr.dtype), a8::DTypeName(want));
  Dataset d;
  d.file = file;
  if (dims.empty()) {
    if (!arr.dims.empty())
      return a8::InvalidInput("{}: shape: the input is a scalar, the file holds {}", where,
                              DimsText(arr.dims));
    d.sample_bytes = arr.data.size();
  } else {
    bool ok = arr.dims.size() == dims.size() && !arr.dims.empty() && arr.dims[0] > 0 &&
              std::equal(dims.begin() + 1, dims.end(), arr.dims.begin() + 1);
    if (!ok)
      return a8::InvalidInput(
          "{}: shape: the file holds {}, the plan's input is {} (batched along the first axis: "
          "the other dims must match and the file must hold at least one sample)",
          where, DimsText(arr.dims), DimsText(dims));
    d.length = arr.dims[0];
    d.sample_bytes = arr.data.size() / static_cast<size_t>(d.length);
  }
  d.array = std::move(arr);
  return d;
}

// The exclusive upper bound of integer input `id` from its first consumer that indexes with it.
int64_t IndexBound(const a8::plan::Plan& plan, int id) {
  for (const a8::plan::Kernel& k : plan.kernels()) {
    auto attr_int = [&](const char* n, int64_t d) {
      for (const auto& a : k.attrs())
        if (a.name() == n && a.has_i()) return a.i();
      return d;
    };
    auto dim_of = [&](int buffer, int64_t axis) -> int64_t {
      if (buffer < 0) return 2;
      const auto& t = plan.buffers(buffer).type();
      int64_t r = t.dims_size();
      if (axis < 0) axis += r;
      return axis >= 0 && axis < r ? t.dims(static_cast<int>(axis)) : 2;
    };
    const std::string& op = k.op();
    if ((op == "Gather" || op == "GatherElements") && k.inputs_size() > 1 && k.inputs(1) == id)
      return dim_of(k.inputs(0), attr_int("axis", 0));
    if (op == "OneHot" && k.inputs_size() > 0 && k.inputs(0) == id && k.outputs_size() > 0)
      return dim_of(k.outputs(0), attr_int("axis", -1));
    if ((op == "SoftmaxCrossEntropyLoss" || op == "NegativeLogLikelihoodLoss") &&
        k.inputs_size() > 1 && k.inputs(1) == id)
      return dim_of(k.inputs(0), 1);
  }
  return 2;
}

a8::Status FillSynthetic(const a8::plan::Plan& plan, const a8::plan::Buffer& b, uint64_t seed,
                         int64_t step, uint8_t* dst) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(step), static_cast<uint32_t>(b.id())};
  std::mt19937_64 rng(seq);
  a8::DType t = DTypeOf(b);
  int64_t n = 1;
  for (int64_t d : b.type().dims()) n *= d;
  if (a8::IsFloat(t)) {
    std::normal_distribution<double> dist(0.0, 1.0);
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) x = dist(rng);
    return a8::cpu::Cast(a8::DType::kF64, t, n, v.data(), dst);
  }
  int64_t bound = t == a8::DType::kBool ? 2 : std::max<int64_t>(IndexBound(plan, b.id()), 1);
  if (t == a8::DType::kI8) bound = std::min<int64_t>(bound, 128);
  if (t == a8::DType::kU8) bound = std::min<int64_t>(bound, 256);
  std::uniform_int_distribution<int64_t> dist(0, bound - 1);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t& x : v) x = dist(rng);
  return a8::cpu::Cast(a8::DType::kI64, t, n, v.data(), dst);
}

// The dataset index of global sample g (the permutation of its epoch with --shuffle).
int64_t SampleIndex(int64_t g, int64_t length, bool shuffle, uint64_t seed,
                    std::map<int64_t, std::vector<int64_t>>* perms) {
  int64_t epoch = g / length, pos = g % length;
  if (!shuffle) return pos;
  auto it = perms->find(epoch);
  if (it == perms->end()) {
    if (perms->size() > 4) perms->clear();
    std::vector<int64_t> p(static_cast<size_t>(length));
    std::iota(p.begin(), p.end(), 0);
    std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                      static_cast<uint32_t>(epoch), 0x5eedu};
    std::mt19937_64 rng(seq);
    for (int64_t i = length - 1; i > 0; --i) {  // Fisher-Yates, independent of the std library
      int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
      std::swap(p[i], p[j]);
    }
    it = perms->emplace(epoch, std::move(p)).first;
  }
  return it->second[pos];
}

std::string FileNameFor(std::string name) {
  for (char& c : name)
    if (c == '/' || c == '\\' || c == '\0') c = '_';
  if (name.empty() || name == "." || name == "..") name = "_" + name;
  return name + ".npy";
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "a800c-run: runs an a800c plan (written by a800c) on a backend.\n"
      "Inputs come from .npy files (--input NAME=FILE.npy, batched along the first axis) or are\n"
      "seeded random data (--synthetic).",
      kProgram);
  app.set_help_flag("-h,--help", "Print this help and exit");
  std::string plan_path, backend = "auto", output_dir;
  std::vector<std::string> inputs;
  bool synthetic = false, shuffle = false, list_kernels = false, version = false, poison = false;
  uint64_t seed = 0;
  int64_t steps = 1;
  app.add_option("PLAN", plan_path, "The plan file")->type_name("PLAN");
  app.add_option("--backend", backend, "auto (CUDA when a GPU is present), cpu or cuda")
      ->type_name("auto|cpu|cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--input", inputs, "Binds a graph input to a .npy dataset (repeatable)")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false);
  app.add_flag("--synthetic", synthetic, "Seeded random data for inputs not given by --input");
  app.add_option("--seed", seed, "Seed of synthetic data, shuffling and dropout (default 0)")
      ->type_name("N");
  app.add_flag("--shuffle", shuffle, "Visit the dataset in a seeded random order per epoch");
  app.add_option("--steps", steps, "Steps to run (default 1)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  app.add_option("--output-dir", output_dir, "Write each graph output of the last step as NAME.npy")
      ->type_name("DIR");
  app.add_flag("--list-kernels", list_kernels,
               "List the kernels the backend implements, then exit");
  app.add_flag("--poison-freed", poison,
               "Debug: fill arena bytes with NaN patterns once their buffer is dead");
  app.add_flag("--version", version, "Print the version and the plan format version, then exit");
  if (auto stop = a8::cli::Parse(app, argc, argv, kProgram)) return *stop;
  if (version) {
    std::cout << a8::VersionString(kProgram) << "\n";
    return 0;
  }
  if (backend == "cuda")
    return Fail(a8::Internal("--backend=cuda: the CUDA backend is not available in this build"));
  if (list_kernels) {
    std::cout << "backend cpu: " << a8::CpuKernelRegistry().size() << " ops\n";
    for (const a8::CpuKernelEntry& e : a8::CpuKernelRegistry()) {
      std::cout << e.op << ": " << (e.type_input >= 0 ? "input " : "output ")
                << std::max(e.type_input, 0) << " in {" << a8::DTypeList(e.types) << "}";
      if (!e.note.empty()) std::cout << "; " << e.note;
      std::cout << "\n";
    }
    return 0;
  }
  if (plan_path.empty()) return Fail(a8::InvalidInput("PLAN: no plan given (see --help)"));

  auto file = a8::ReadPlanFile(plan_path);
  if (!file.ok()) return Fail(file.status());
  if (file->plan.training())
    return Fail(
        a8::Unsupported("{}: training plans are not supported by this a800c-run yet", plan_path));
  a8::ExecutorOptions opts;
  opts.poison_freed = poison;
  opts.seed = seed;
  auto ex_or = a8::Executor::Create(std::move(file).value(), a8::MakeCpuBackend(), opts);
  if (!ex_or.ok()) return Fail(ex_or.status().WithContext(plan_path));
  a8::Executor& ex = **ex_or;
  const a8::plan::Plan& plan = ex.plan();

  // Datasets.
  std::map<std::string, Dataset> data;
  for (const std::string& spec : inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return Fail(a8::InvalidInput("--input {}: expected NAME=FILE.npy", spec));
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    const a8::plan::Buffer* b = ex.FindInput(name);
    if (b == nullptr) {
      std::string names;
      for (const auto& bind : plan.inputs()) names += (names.empty() ? "" : ", ") + bind.name();
      return Fail(a8::InvalidInput("--input {}: the plan has no input '{}' (inputs: {})", spec,
                                   name, names));
    }
    if (data.count(name)) return Fail(a8::InvalidInput("--input {}: given twice", name));
    auto d = LoadDataset(name, path, *b);
    if (!d.ok()) return Fail(d.status());
    data.emplace(name, std::move(d).value());
  }
  for (const auto& bind : plan.inputs())
    if (!data.count(bind.name()) && !synthetic)
      return Fail(a8::InvalidInput("input '{}': no data (give --input {}=FILE.npy or --synthetic)",
                                   bind.name(), bind.name()));

  std::map<int64_t, std::vector<int64_t>> perms;
  std::vector<double> times;
  for (int64_t step = 0; step < steps; ++step) {
    for (const auto& bind : plan.inputs()) {
      const a8::plan::Buffer& b = plan.buffers(bind.buffer());
      uint8_t* dst = ex.BufferData(b.id());
      auto it = data.find(bind.name());
      if (it == data.end()) {
        a8::Status s = FillSynthetic(plan, b, seed, step, dst);
        if (!s.ok()) return Fail(s.WithContext("input '" + bind.name() + "'"));
        continue;
      }
      const Dataset& d = it->second;
      int64_t batch = b.type().dims_size() > 0 ? b.type().dims(0) : 1;
      for (int64_t j = 0; j < batch; ++j) {
        int64_t idx = SampleIndex(step * batch + j, d.length, shuffle, seed, &perms);
        std::memcpy(dst + j * d.sample_bytes, d.array.data.data() + idx * d.sample_bytes,
                    d.sample_bytes);
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    a8::Status s = ex.Run();
    auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) return Fail(s.WithContext(plan_path));
    times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }

  if (!output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output_dir, ec);
    if (ec) return Fail(a8::InvalidInput("--output-dir {}: {}", output_dir, ec.message()));
    for (const auto& bind : plan.outputs()) {
      const a8::plan::Buffer& b = plan.buffers(bind.buffer());
      std::string path = (std::filesystem::path(output_dir) / FileNameFor(bind.name())).string();
      a8::Status s = a8::WriteNpyFile(path, DTypeOf(b), DimsOf(b), ex.BufferData(b.id()));
      if (!s.ok()) return Fail(s);
    }
  }
  std::cout << fmt::format("{}: {} step{} on {}: median {:.3f} ms, p90 {:.3f} ms\n", kProgram,
                           steps, steps == 1 ? "" : "s", ex.backend().name(),
                           Percentile(times, 0.5), Percentile(times, 0.9));
  return 0;
}

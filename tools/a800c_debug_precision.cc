// `a800c debug-precision MODEL [training flags] --input NAME=FILE.npy ... --steps=N
// --tolerance=T [--compare=loss|activations] -o POLICY`: the command line of
// runtime/core/precision_debug.h (flags to options, the report, exit codes).
#include "tools/a800c_debug_precision.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "runtime/core/precision_debug.h"
#include "runtime/cpu/cpu_backend.h"
#include "tools/cli_common.h"
#include "tools/compile_config_flags.h"

namespace a8::cli {
namespace {

constexpr const char* kProgram = "a800c debug-precision";

int Fail(const Status& s) { return cli::Fail(kProgram, s); }

std::string Deviation(double d) { return std::isfinite(d) ? fmt::format("{:.3g}", d) : "inf"; }

}  // namespace

int DebugPrecisionMain(int argc, char** argv) {
  CLI::App app(
      "a800c debug-precision: trains MODEL in fp32 and in --precision (amp by default) on the "
      "same batches, compares the loss curves, and when the low-precision run diverges (beyond "
      "--tolerance), overflows on most steps or collapses its loss scale, searches a minimal set "
      "of ONNX nodes that must run in FP32. Writes it as a --policy file (-o).",
      kProgram);
  app.set_help_flag("-h,--help", "Print this help and exit");
  PrecisionDebugOptions o;
  std::string output, compare = "loss", batch, work_dir;
  std::vector<std::string> inputs, shapes;
  app.add_option("MODEL", o.compile.model, "The model: .onnx or .onnxtxt")
      ->type_name("FILE")
      ->required();
  app.add_option("-o,--output", output, "The --policy file to write (JSON)")
      ->type_name("POLICY")
      ->required();
  app.add_option("--input", inputs, "Training data of graph input NAME (repeatable)")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false);
  app.add_flag("--synthetic", o.synthetic, "Seeded random data for inputs without --input");
  app.add_option("--seed", o.seed, "The seed of the data order, synthetic data and dropout");
  app.add_flag("--shuffle", o.shuffle, "Shuffle the samples each epoch");
  app.add_option("--steps", o.steps, "Training steps of every run (default 20)")
      ->check(AtLeastOne());
  app.add_option("--tolerance", o.tolerance,
                 "Largest relative loss deviation from fp32 that passes: max over steps of "
                 "|loss - fp32| / max(|fp32|, 1e-3) (default 0.05)");
  app.add_option("--compare", compare,
                 "loss (default), or activations: also print the first step's per-node output "
                 "differences")
      ->type_name("loss|activations");
  std::string search = "guided";
  app.add_option("--search", search,
                 "guided (default): a failing run's first Inf/NaN names the node to try in FP32 "
                 "first, then bisection; bisect: bisection only")
      ->type_name("guided|bisect");
  app.add_option("--keep-plans", work_dir, "Keep the compiled plans in this folder")
      ->type_name("DIR");
  app.add_option("--shape", shapes, "Binds a graph input's dims (repeatable)")
      ->type_name("NAME:D0xD1x...")
      ->allow_extra_args(false);
  app.add_option("--batch", batch, "Binds the first dim of every input whose first dim is dynamic")
      ->type_name("N");
  CompileConfigFlags config_flags;
  AddCompileConfigFlags(app, config_flags);
  if (auto stop = Parse(app, argc, argv, kProgram)) return *stop;

  if (compare != "loss" && compare != "activations")
    return Fail(InvalidInput("--compare={}: expected loss or activations", compare));
  o.compare_activations = compare == "activations";
  if (search != "guided" && search != "bisect")
    return Fail(InvalidInput("--search={}: expected guided or bisect", search));
  o.guided = search == "guided";
  const std::string& mode = config_flags.precision.mode;
  if (mode == "fp32" || mode == "tf32")
    return Fail(
        InvalidInput("--precision={}: debug-precision compares amp, fp16 or bf16 with fp32", mode));
  if (Status s = ApplyCompileConfigFlags(app, config_flags, &o.compile.config); !s.ok())
    return Fail(s);
  for (const std::string& shape : shapes)
    if (Status s = ParseShapeFlag(shape, &o.compile.import.shapes); !s.ok()) return Fail(s);
  if (app.count("--batch") > 0) {
    auto n = ParseBatchFlag(batch);
    if (!n.ok()) return Fail(n.status());
    o.compile.import.batch = *n;
  }
  for (const std::string& spec : inputs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return Fail(InvalidInput("--input {}: expected NAME=FILE.npy", spec));
    o.inputs.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
  }
  if (Status s = CheckOutputPath(output); !s.ok()) return Fail(s);
  o.work_dir = work_dir;
  o.progress = [](const std::string& line) { std::cout << "debug-precision: " << line << "\n"; };

  o.make_backend = [] { return MakeCpuBackend(); };
  auto result = DebugPrecision(o);
  if (!result.ok()) return Fail(result.status());
  const PrecisionDebugResult& r = *result;
  if (o.compare_activations) {
    std::cout << "first-step activations (" << mode << " vs fp32), in plan order:\n";
    for (const ActivationDiff& d : r.activations) {
      const double rel = d.max_abs_ref > 0 ? d.max_abs_diff / d.max_abs_ref : d.max_abs_diff;
      std::cout << fmt::format("  {:<24} max |diff| {:<10.3g} relative {:<10.3g} {}\n", d.node,
                               d.max_abs_diff, rel, d.op);
    }
  }
  if (!r.needed_search) {
    std::cout << fmt::format(
        "debug-precision: {} follows fp32 within {} (deviation {}, {} of {} updates skipped): no "
        "node needs FP32; {} training runs\n",
        mode, o.tolerance, Deviation(r.low.deviation), r.low.skipped, r.low.losses.size(), r.runs);
  } else {
    std::cout << fmt::format("debug-precision: {} node{} of {} must run in FP32:\n",
                             r.fp32_nodes.size(), r.fp32_nodes.size() == 1 ? "" : "s",
                             r.candidates.size());
    for (const NodeEvidence& e : r.fp32_nodes)
      std::cout << fmt::format("  {} ({}): deviation {} with it in FP32, {} without ({})\n", e.node,
                               e.op, Deviation(r.fixed.deviation), Deviation(e.deviation_without),
                               e.failure_without);
    std::cout << fmt::format(
        "debug-precision: {} training runs (1 fp32 reference, {} {}), {} plans compiled\n", r.runs,
        r.runs - 1, mode, r.plans_compiled);
  }
  if (Status s = WritePrecisionPolicy(output, o, r); !s.ok()) return Fail(s);
  std::cout << fmt::format("debug-precision: wrote {} (use it with --policy={})\n", output, output);
  return 0;
}

}  // namespace a8::cli

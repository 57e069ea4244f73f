// a800c: the compiler's command line (CLI.md). Parses flags with CLI11 and hands the job to the
// driver library; this file only maps flags to CompileOptions and statuses to exit codes.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "passes/pipelines.h"
#include "runtime/core/npy.h"
#include "tools/a800c_debug_precision.h"
#include "tools/cli_common.h"
#include "tools/compile_config_flags.h"
#include "tools/dump_flags.h"

namespace {

constexpr const char* kProgram = "a800c";

int Fail(const a8::Status& s) { return a8::cli::Fail(kProgram, s); }

}  // namespace

int main(int argc, char** argv) {
  // Weights (1 MiB and up) get their own mappings, so that memory the compiler frees (a weight
  // once it is in the plan's blob) goes back to the system at once instead of staying in the
  // heap beside the blob: peak RSS stays near the weight bytes (tools/bench/compile_scaling.py).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  if (argc > 1 && std::string(argv[1]) == "debug-precision")
    return a8::cli::DebugPrecisionMain(argc - 1, argv + 1);
  CLI::App app(
      "a800c: ahead-of-time mixed-precision training compiler for ONNX.\n"
      "Reads MODEL (.onnx, .onnxtxt, or textual IR .a8ir), runs the pass pipeline and writes\n"
      "the result: by default the plan (schedule, memory plan, kernels, initial parameter\n"
      "values) that a800c-run executes.\n"
      "`a800c debug-precision MODEL ...` finds the nodes that must stay FP32 (see its --help).",
      kProgram);
  app.set_help_flag("-h,--help", "Print this help and exit");

  std::string model, output, emit = "plan", batch;
  std::vector<std::string> shapes, dims, binds;
  a8::PipelineFlags pipeline;
  std::string passes;
  bool list_passes = false, list_ops = false, list_params = false;

  app.add_option("MODEL", model, "The model: .onnx (binary), .onnxtxt (ONNX text) or .a8ir")
      ->type_name("FILE");
  app.add_option("-o,--output", output,
                 "Output file, written atomically; '-' is stdout (default with --emit=ir)")
      ->type_name("OUT");
  app.add_option("--emit", emit,
                 "What to write: plan (default; inference plan for a800c-run), onnx "
                 "(the rewritten graph) or ir (textual IR)")
      ->type_name("plan|onnx|ir");
  app.add_option("--shape", shapes, "Binds a graph input's dims (repeatable)")
      ->type_name("NAME:D0xD1x...")
      ->allow_extra_args(false);
  app.add_option("--batch", batch,
                 "Binds the first dim of every input whose first dim is dynamic (N >= 1)")
      ->type_name("N");
  app.add_option("--dim", dims,
                 "Binds the symbolic dim NAME (the model's dim_param) in every input (repeatable)")
      ->type_name("NAME=V")
      ->allow_extra_args(false);
  app.add_option("--bind", binds,
                 "Freezes graph input NAME to the array in FILE.npy: a constant before shape "
                 "inference, for shapes, axes or pads that arrive as inputs (repeatable)")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false);
  std::string target = "any";
  app.add_option("--target", target,
                 "The machine the plan is for: cpu, sm_80 (A100/A800) or sm_90 (H100/H200); "
                 "a800c-run refuses it on another backend (default: a plan every backend runs)")
      ->type_name("cpu|sm_80|sm_90");
  a8::cli::CompileConfigFlags config_flags;
  a8::cli::AddCompileConfigFlags(app, config_flags);
  a8::cli::AddDumpFlags(app, pipeline);
  std::string default_pipeline;
  for (const std::string& p : a8::DefaultCompilePipeline()) {
    default_pipeline += (default_pipeline.empty() ? "" : ",") + p;
  }
  app.add_option("--passes", passes,
                 "Run exactly these passes (default: the `plan` pipeline for --emit=plan, else " +
                     default_pipeline + "; empty: none)")
      ->type_name("P,...")
      ->expected(0, 1)
      ->allow_extra_args(false);
  bool no_fuse = false;
  app.add_flag("--no-fuse", no_fuse,
               "Leave out the `fuse`, `fold-batchnorm` and `fuse-optimizer` passes: one kernel "
               "per node, no GEMM epilogues, fused elementwise chains, BatchNorm folded into a "
               "Conv, nor unscale and working copies folded into the optimizer");
  app.add_flag("--verify-each", pipeline.verify_each, "Run the IR verifier after every pass");
  app.add_flag("--list-passes", list_passes, "List the passes and pipelines, then exit");
  app.add_flag("--list-ops", list_ops, "List the supported ops, then exit");
  app.add_flag("--list-params", list_params,
               "List MODEL's float initializers: trained or constant, and why (with --freeze, "
               "--trainable, --logits as given), then exit");

  if (auto stop = a8::cli::ParseWithVersion(app, argc, argv, kProgram)) return *stop;

  if (list_passes) {
    a8::PrintPassList(std::cout);
    return 0;
  }
  if (list_ops) {
    a8::PrintOpList(std::cout);
    return 0;
  }
  if (model.empty()) return Fail(a8::InvalidInput("MODEL: no model given (see --help)"));

  a8::CompileOptions opts;
  opts.model = model;
  opts.output = output;
  auto emit_kind = a8::ParseEmitKind(emit);
  if (!emit_kind.ok()) return Fail(emit_kind.status());
  opts.emit = *emit_kind;
  if (list_params) {
    // The selection flags need no --loss here: they say what --list-params should assume.
    opts.config.training = config_flags.training.config;
    if (auto s = a8::cli::ApplyPrecisionFlags(app, config_flags.precision, &opts.config.precision);
        !s.ok())
      return Fail(s);
  } else if (auto s = a8::cli::ApplyCompileConfigFlags(app, config_flags, &opts.config); !s.ok()) {
    return Fail(s);
  }
  for (const std::string& shape : shapes) {
    a8::Status s = a8::ParseShapeFlag(shape, &opts.import.shapes);
    if (!s.ok()) return Fail(s);
  }
  for (const std::string& dim : dims) {
    if (a8::Status s = a8::ParseDimFlag(dim, &opts.import.dims); !s.ok()) return Fail(s);
  }
  for (const std::string& bind : binds) {
    auto name_file = a8::SplitBindFlag(bind);
    if (!name_file.ok()) return Fail(name_file.status());
    auto data = a8::ReadNpyTensor(name_file->second);
    if (!data.ok()) return Fail(data.status().WithContext("--bind " + name_file->first));
    if (!opts.import.bound.emplace(name_file->first, *data).second)
      return Fail(a8::InvalidInput("--bind {}: the input is given twice", name_file->first));
  }
  if (app.count("--batch") > 0) {
    auto n = a8::ParseBatchFlag(batch);
    if (!n.ok()) return Fail(n.status());
    opts.import.batch = *n;
  }
  if (app.count("--passes") > 0) pipeline.passes = passes;
  std::vector<std::string> pass_list;
  // --emit=plan runs the `plan` pipeline (it ends with schedule and plan-memory).
  std::vector<std::string> default_passes = a8::DefaultCompilePipeline();
  if (opts.emit == a8::EmitKind::kPlan) {
    auto plan_passes = a8::PipelinePasses("plan");
    if (!plan_passes.ok()) return Fail(plan_passes.status());
    default_passes = *plan_passes;
  }
  // --emit=onnx writes ONNX that onnxruntime runs: no a8.Fused* kernels in it, and the model's
  // own weights (no BatchNorm folded into them: onnxruntime folds for itself).
  if (opts.emit == a8::EmitKind::kOnnx) {
    for (const std::string& p : a8::FusingPasses()) std::erase(default_passes, p);
  }
  a8::Status s = a8::ApplyPipelineFlags(pipeline, default_passes, &std::cerr, &opts.pm, &pass_list);
  if (!s.ok()) return Fail(s);
  opts.passes = pass_list;
  opts.fuse = !no_fuse;
  opts.target = target;
  opts.note = [](const std::string& note) { std::cerr << kProgram << ": " << note << "\n"; };
  auto warn = [](const std::string& warning) {
    std::cerr << kProgram << ": warning: " << warning << "\n";
  };
  if (list_params) {
    s = a8::ListParameters(opts, std::cout, warn);
    return s.ok() ? 0 : Fail(s);
  }
  s = a8::Compile(opts, std::cout, warn);
  if (!s.ok()) return Fail(s);
  return 0;
}

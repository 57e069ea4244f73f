// a800c-opt: runs passes over textual IR (or an ONNX model) and prints the IR (CLI.md). The
// test harness of the passes: every lit test of a pass runs through here. The verifier runs on
// the input and after every pass.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "compiler/ir/printer.h"
#include "driver/driver.h"
#include "tools/cli_common.h"
#include "tools/compile_config_flags.h"
#include "tools/dump_flags.h"

namespace {

constexpr const char* kProgram = "a800c-opt";

int Fail(const a8::Status& s) { return a8::cli::Fail(kProgram, s); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "a800c-opt: runs passes over textual IR (.a8ir) or an ONNX model (.onnxtxt, .onnx) and\n"
      "prints the resulting IR. The IR is verified on input and after every pass.",
      kProgram);
  app.set_help_flag("-h,--help", "Print this help and exit");

  std::string file, output = "-", passes, batch;
  std::vector<std::string> shapes;
  a8::PipelineFlags pipeline;

  app.add_option("FILE", file, "The input: .a8ir, .onnxtxt or .onnx")->type_name("FILE");
  app.add_option("-o,--output", output, "Output file, written atomically ('-': stdout, default)")
      ->type_name("OUT");
  app.add_option("--passes", passes, "The passes to run, in order (default: none)")
      ->type_name("P,...")
      ->expected(0, 1)
      ->allow_extra_args(false);
  app.add_option("--shape", shapes, "Binds an ONNX input's dims (repeatable)")
      ->type_name("NAME:D0xD1x...")
      ->allow_extra_args(false);
  app.add_option("--batch", batch, "Binds the first dynamic dim of every ONNX input")
      ->type_name("N");
  a8::cli::CompileConfigFlags config_flags;
  a8::cli::AddCompileConfigFlags(app, config_flags);
  a8::cli::AddDumpFlags(app, pipeline);

  if (auto stop = a8::cli::ParseWithVersion(app, argc, argv, kProgram)) return *stop;
  if (file.empty()) return Fail(a8::InvalidInput("FILE: no input given (see --help)"));

  a8::ImportOptions import_opts;
  for (const std::string& shape : shapes) {
    a8::Status s = a8::ParseShapeFlag(shape, &import_opts.shapes);
    if (!s.ok()) return Fail(s);
  }
  if (app.count("--batch") > 0) {
    auto n = a8::ParseBatchFlag(batch);
    if (!n.ok()) return Fail(n.status());
    import_opts.batch = *n;
  }
  pipeline.verify_each = true;
  if (app.count("--passes") > 0) pipeline.passes = passes;
  a8::PassManagerOptions pm;
  std::vector<std::string> pass_list;
  a8::Status s = a8::ApplyPipelineFlags(pipeline, {}, &std::cerr, &pm, &pass_list);
  if (!s.ok()) return Fail(s);
  s = a8::CheckOutputPath(output);
  if (!s.ok()) return Fail(s);
  // The compile configuration, checked once before the import; the passes receive it.
  a8::CompileConfig config;
  s = a8::cli::ApplyCompileConfigFlags(app, config_flags, &config);
  if (!s.ok()) return Fail(s);
  s = a8::ValidateCompileConfig(config);
  if (!s.ok()) return Fail(s);
  pm.config = &config;

  std::vector<std::string> warnings;
  import_opts.warnings = &warnings;
  auto loaded = a8::LoadGraph(file, import_opts);
  for (const std::string& w : warnings) std::cerr << kProgram << ": warning: " << w << "\n";
  if (!loaded.ok()) return Fail(loaded.status());
  pm.input_typed = loaded->typed;
  s = a8::RunPasses(*loaded->graph, pass_list, pm);
  if (!s.ok()) return Fail(s);
  // Still untyped (no shape-inference ran on a dump from before it): results print as `?` again.
  a8::PrintOptions print;
  print.types_known = loaded->typed || std::find(pass_list.begin(), pass_list.end(),
                                                 "shape-inference") != pass_list.end();
  if (pm.print_weights) print.max_inline_elements = -1;
  s = a8::WriteOutput(output, a8::PrintIrToString(*loaded->graph, print), std::cout);
  if (!s.ok()) return Fail(s);
  return 0;
}

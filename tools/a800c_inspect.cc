// a800c-inspect: prints a plan (CLI.md): kernels with their dtypes, ONNX nodes and precision
// reasons, buffers, parameters, the header fields and the memory plan, as text, JSON
// (schema_version 1) or a Graphviz graph. The plan is read with ReadPlanFile, so a missing,
// truncated or corrupt file is a clear error (exit 2) and nothing is printed on stdout.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "compiler/plan/plan_file.h"
#include "runtime/inspect/checkpoint_inspect.h"
#include "runtime/inspect/cost.h"
#include "runtime/inspect/inspect.h"
#include "tools/cli_common.h"

namespace {

constexpr const char* kProgram = "a800c-inspect";

int Fail(const a8::Status& s) { return a8::cli::Fail(kProgram, s); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "a800c-inspect: shows what a plan holds: every kernel with its op, kernel name, dtypes,\n"
      "ONNX nodes and precision reason; the buffers with their region, offset, size and live\n"
      "range; parameters; the header fields (versions, model, target, precision, loss scaler);\n"
      "and the memory plan (arena size, lower bound, the largest live set).",
      kProgram);
  app.set_help_flag("-h,--help", "Print this help and exit");
  std::string plan_path, format = "text";
  app.add_option("PLAN", plan_path,
                 "The plan file (a800c MODEL -o PLAN), or a checkpoint (FILE.safetensors)")
      ->type_name("FILE");
  app.add_option("--format", format,
                 "text (default), json (deterministic, with \"schema_version\": 1) or dot "
                 "(Graphviz: kernels and buffers)")
      ->type_name("text|json|dot");
  int dot_depth = 0;
  app.add_option("--dot-depth", dot_depth,
                 "With --format=dot: one box per ONNX name scope (layer) cut at N components "
                 "below the scope every kernel shares, with the data between them; 0 (default) "
                 "draws every kernel, nested in clusters by scope")
      ->type_name("N")
      ->check(CLI::Validator(
          [](std::string& t) -> std::string {
            return t.find_first_not_of("0123456789") == std::string::npos && !t.empty() &&
                           t.size() < 6
                       ? ""
                       : "expected an integer >= 0, got '" + t + "'";
          },
          "N>=0"));
  std::string cost;
  app.add_option("--cost", cost,
                 "Predict the plan's cost on a device: per kernel FLOPs, bytes, arithmetic "
                 "intensity, compute- or memory-bound and time at the device's peaks; the step "
                 "time, MFU and peak memory; the ten costliest kernels (text or --format=json). "
                 "cpu measures this machine first (about 0.2 s)")
      ->type_name("a800|a100|h100|h200|cpu");
  if (auto stop = a8::cli::ParseWithVersion(app, argc, argv, kProgram)) return *stop;
  auto fmt = a8::ParseInspectFormat(format);
  if (!fmt.ok()) return Fail(fmt.status());
  if (app.count("--dot-depth") > 0 && *fmt != a8::InspectFormat::kDot)
    return Fail(a8::InvalidInput("--dot-depth: needs --format=dot"));
  if (plan_path.empty()) return Fail(a8::InvalidInput("PLAN: no plan given (see --help)"));
  if (a8::IsCheckpointPath(plan_path)) {
    auto report = a8::InspectCheckpoint(plan_path, *fmt);
    if (!report.ok()) return Fail(report.status());
    std::cout << *report;
    return 0;
  }
  if (!cost.empty() && (*fmt == a8::InspectFormat::kDot || a8::IsCheckpointPath(plan_path)))
    return Fail(a8::InvalidInput("--cost: needs a plan and --format=text or json"));
  auto plan = a8::ReadPlanFile(plan_path);
  if (!plan.ok()) {
    a8::Status s = plan.status();
    // ReadPlanFile names the file; make sure the message does even if a reader path does not.
    if (s.message().rfind(plan_path, 0) != 0) s = s.WithContext(plan_path);
    return Fail(s);
  }
  if (!cost.empty()) {
    auto device = a8::CostDevice(cost);
    if (!device.ok()) return Fail(device.status());
    auto prediction = a8::PredictPlan(plan->plan, *device);
    if (!prediction.ok()) return Fail(prediction.status().WithContext(plan_path));
    std::cout << (*fmt == a8::InspectFormat::kJson ? a8::CostJson(*plan, *prediction)
                                                   : a8::CostText(*plan, *prediction));
    return 0;
  }
  std::cout << (*fmt == a8::InspectFormat::kDot ? a8::InspectDot(*plan, dot_depth)
                                                : a8::Inspect(*plan, *fmt));
  return 0;
}

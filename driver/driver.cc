// The compiler's library entry (see driver.h).
#include "driver/driver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/enum_names.h"
#include "base/parse_number.h"
#include "compiler/ir/op_table.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/onnx/exporter.h"
#include "compiler/plan/kernel_catalog.h"
#include "compiler/plan/plan_file.h"
#include "compiler/support/file_io.h"
#include "compiler/support/hash.h"
#include "passes/autodiff/build_training.h"
#include "passes/autodiff/grad_rule.h"
#include "passes/autodiff/param_choice.h"
#include "passes/cleanup/fold_value.h"
#include "passes/lowering/lower.h"
#include "passes/mixed_precision/policy.h"
#include "passes/pipelines.h"
#include "passes/registry.h"

#ifndef A800C_VERSION
#error "A800C_VERSION must be defined by the build (CMakeLists.txt)"
#endif

namespace a8 {
namespace fs = std::filesystem;

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Prefixes an error with `where` unless its message already starts with it or with a flag
// (`--stop-after=x: ...`: the flag is the WHERE of that error, not the model file).
Status WithSource(const Status& s, const std::string& where) {
  if (s.ok() || where.empty() || s.message().rfind(where, 0) == 0) return s;
  if (s.message().rfind("--", 0) == 0) return s;
  return s.WithContext(where);
}

StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput("{}: cannot open the file: {}", path, std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return InvalidInput("{}: cannot read the file", path);
  return text.str();
}

std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// A --shape / --dim value "NAME<sep>VALUE", split at the last `sep`.
struct NamedFlagValue {
  std::string name;
  std::string_view value;
};
template <typename Bad>
StatusOr<NamedFlagValue> SplitNamedFlag(const std::string& text, char sep, std::string_view kind,
                                        std::string_view value_kind, Bad bad) {
  const size_t at = text.rfind(sep);
  if (at == std::string::npos) {
    return bad(fmt::format("no '{}' between the {} name and {}", sep, kind, value_kind));
  }
  NamedFlagValue flag{text.substr(0, at), std::string_view(text).substr(at + 1)};
  if (flag.name.empty()) return bad(fmt::format("the {} name is empty", kind));
  return flag;
}

}  // namespace

constexpr EnumName<EmitKind> kEmitKindNames[] = {
    {EmitKind::kPlan, "plan"}, {EmitKind::kOnnx, "onnx"}, {EmitKind::kIr, "ir"}};

std::string_view EmitKindName(EmitKind e) { return NameIn(kEmitKindNames, e, "?"); }

StatusOr<EmitKind> ParseEmitKind(std::string_view text) {
  if (std::optional<EmitKind> e = ValueIn(kEmitKindNames, text)) return *e;
  return InvalidInput("--emit={}: expected plan, onnx or ir", text);
}

Status ParseShapeFlag(const std::string& text,
                      std::map<std::string, std::vector<int64_t>>* shapes) {
  auto bad = [&](std::string_view why) {
    return InvalidInput("--shape={}: {}; expected NAME:D0xD1x..., e.g. x:64x784", text, why);
  };
  A8_ASSIGN_OR_RETURN(NamedFlagValue flag, SplitNamedFlag(text, ':', "input", "the dims", bad));
  std::string_view dims_text = flag.value;
  if (dims_text.empty()) return bad("no dims");
  std::vector<int64_t> dims;
  while (true) {
    size_t x = dims_text.find('x');
    std::string_view item = dims_text.substr(0, x);
    int64_t d = 0;
    if (!ParseNumber(item, &d)) return bad(fmt::format("'{}' is not a dim", item));
    if (d < 1) return bad(fmt::format("dim {} must be >= 1", d));
    dims.push_back(d);
    if (x == std::string_view::npos) break;
    dims_text.remove_prefix(x + 1);
  }
  if (shapes->count(flag.name) > 0) {
    return bad(fmt::format("input '{}' is given twice", flag.name));
  }
  (*shapes)[flag.name] = std::move(dims);
  return Status::Ok();
}

StatusOr<int64_t> ParseBatchFlag(const std::string& text) {
  int64_t n = 0;
  if (!ParseNumber(text, &n) || n < 1) {
    return InvalidInput("--batch={}: expected an integer N >= 1", text);
  }
  return n;
}

Status ParseDimFlag(const std::string& text, std::map<std::string, int64_t>* dims) {
  auto bad = [&](std::string_view why) {
    return InvalidInput("--dim={}: {}; expected NAME=V, e.g. seq=128", text, why);
  };
  A8_ASSIGN_OR_RETURN(NamedFlagValue flag, SplitNamedFlag(text, '=', "dim", "its size", bad));
  int64_t v = 0;
  if (!ParseNumber(flag.value, &v)) return bad(fmt::format("'{}' is not a size", flag.value));
  if (v < 1) return bad(fmt::format("the size {} must be >= 1", v));
  if (dims->count(flag.name) > 0) return bad(fmt::format("dim '{}' is given twice", flag.name));
  (*dims)[flag.name] = v;
  return Status::Ok();
}

StatusOr<std::pair<std::string, std::string>> SplitBindFlag(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidInput("--bind={}: expected NAME=FILE.npy, e.g. shape=shape.npy", text);
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

StatusOr<std::vector<std::string>> ParseNameList(const std::string& flag, const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (item.empty()) return InvalidInput("{}={}: empty pass name in the list", flag, text);
    names.push_back(std::move(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

Status ApplyPipelineFlags(const PipelineFlags& flags,
                          const std::vector<std::string>& default_passes, std::ostream* dump_stream,
                          PassManagerOptions* pm, std::vector<std::string>* passes) {
  pm->verify_each = flags.verify_each;
  pm->print_weights = flags.print_weights;
  pm->print_after_all = flags.print_ir_after_all;
  for (const std::string& item : flags.print_ir_before) {
    A8_ASSIGN_OR_RETURN(auto names, ParseNameList("--print-ir-before", item));
    pm->print_before.insert(names.begin(), names.end());
  }
  for (const std::string& item : flags.print_ir_after) {
    A8_ASSIGN_OR_RETURN(auto names, ParseNameList("--print-ir-after", item));
    pm->print_after.insert(names.begin(), names.end());
  }
  pm->dump_dir = flags.dump_dir;
  pm->pass_timing = flags.pass_timing;
  pm->stop_after = flags.stop_after;
  pm->dump_stream = dump_stream;
  pm->timing_stream = dump_stream;
  if (flags.passes) {
    if (flags.passes->empty()) {
      passes->clear();
    } else {
      A8_ASSIGN_OR_RETURN(*passes, ParseNameList("--passes", *flags.passes));
    }
  } else {
    *passes = default_passes;
  }
  return Status::Ok();
}

StatusOr<LoadedGraph> LoadGraph(const std::string& path, const ImportOptions& import_opts) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return InvalidInput("{}: no such file", path);
  if (fs::is_directory(st)) return InvalidInput("{}: is a folder, not a model file", path);

  LoadedGraph loaded;
  if (EndsWith(path, ".a8ir")) {
    if (!import_opts.bound.empty()) {
      return InvalidInput(
          "{}: --bind needs an ONNX model (textual IR has no graph inputs to "
          "freeze; declare a constant in the IR instead)",
          path);
    }
    if (import_opts.warnings != nullptr &&
        (!import_opts.shapes.empty() || import_opts.batch || !import_opts.dims.empty())) {
      import_opts.warnings->push_back(fmt::format(
          "{}: --shape, --batch and --dim are ignored for textual IR (its types are static)",
          path));
    }
    A8_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
    loaded.model_hash = ContentHash(text);
    bool untyped = false;
    A8_ASSIGN_OR_RETURN(loaded.graph, ParseIr(text, path, &untyped));
    // A dump from before shape-inference: its `?` results get their types from that pass.
    loaded.typed = !untyped;
    if (loaded.graph->source.empty()) loaded.graph->source = path;
    // IR text is user input: a graph that breaks an invariant is bad input, not a bug.
    VerifyOptions vopts;
    vopts.check_types = loaded.typed;
    Status verified = Verify(*loaded.graph, vopts);
    if (!verified.ok()) {
      return WithSource(Status(StatusCode::kInvalidInput, verified.message()), path);
    }
    return loaded;
  }
  ImportOptions opts = import_opts;
  opts.model_hash = &loaded.model_hash;
  // Control flow that a value computed from constants decides is unrolled at import.
  if (!opts.fold_value) opts.fold_value = FoldValue;
  A8_ASSIGN_OR_RETURN(loaded.graph, ImportOnnxFile(path, opts));
  if (loaded.graph->source.empty()) loaded.graph->source = path;
  loaded.typed = false;
  // The importer guarantees a well-formed graph; types are checked once shape-inference ran.
  VerifyOptions vopts;
  vopts.check_types = false;
  Status verified = Verify(*loaded.graph, vopts);
  if (!verified.ok()) {
    return Internal("{}: the imported graph does not verify: {}", path, verified.message());
  }
  return loaded;
}

Status RunPasses(Graph& graph, const std::vector<std::string>& passes, PassManagerOptions pm) {
  if (pm.registry == nullptr) pm.registry = &RegisteredPasses();
  PassManager manager(std::move(pm));
  A8_RETURN_IF_ERROR(WithSource(manager.AddPasses(passes), "--passes"));
  return WithSource(manager.Run(graph), graph.source);
}

Status CheckOutputPath(const std::string& path) {
  if (path == "-") return Status::Ok();
  if (path.empty()) return InvalidInput("-o: the output path is empty");
  std::error_code ec;
  if (fs::is_directory(path, ec)) return InvalidInput("-o {}: is a folder", path);
  fs::path dir = fs::path(path).parent_path();
  if (!dir.empty() && !fs::is_directory(dir, ec)) {
    return InvalidInput("-o {}: no such folder '{}'", path, dir.string());
  }
  return Status::Ok();
}

Status WriteOutput(const std::string& path, std::span<const std::string_view> pieces,
                   std::ostream& stdout_stream) {
  if (path == "-") {
    for (std::string_view bytes : pieces) {
      stdout_stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    stdout_stream.flush();
    if (!stdout_stream) return Internal("-o -: cannot write to stdout");
    return Status::Ok();
  }
  A8_RETURN_IF_ERROR(CheckOutputPath(path));
  return WriteFileAtomically(path, pieces);
}

Status WriteOutput(const std::string& path, std::string_view bytes, std::ostream& stdout_stream) {
  const std::string_view pieces[] = {bytes};
  return WriteOutput(path, pieces, stdout_stream);
}

Status ValidateCompileConfig(const CompileConfig& config) {
  if (config.training) A8_RETURN_IF_ERROR(CheckTrainingConfig(*config.training));
  if (config.precision) A8_RETURN_IF_ERROR(PrecisionPolicy::Create(*config.precision).status());
  return Status::Ok();
}

Status Compile(const CompileOptions& opts, std::ostream& stdout_stream,
               const std::function<void(const std::string&)>& warn) {
  // Flags first, so that a typo costs no import.
  std::string output = opts.output;
  if (output.empty()) {
    if (opts.emit == EmitKind::kOnnx) {
      return InvalidInput("-o: --emit=onnx needs an output file (-o FILE, or -o - for stdout)");
    }
    output = "-";
  }
  A8_RETURN_IF_ERROR(CheckOutputPath(output));
  if (opts.target != "any" && opts.target != "cpu" && opts.target != "sm_80" &&
      opts.target != "sm_90") {
    return InvalidInput("--target={}: expected cpu, sm_80 or sm_90", opts.target);
  }
  A8_RETURN_IF_ERROR(ValidateCompileConfig(opts.config));

  std::vector<std::string> warnings;
  std::map<std::string, std::vector<std::string>> aliases;
  ImportOptions import_opts = opts.import;
  import_opts.warnings = &warnings;
  import_opts.identity_aliases = &aliases;
  auto loaded = LoadGraph(opts.model, import_opts);
  for (const std::string& w : warnings) warn(w);
  if (!loaded.ok()) return WithSource(loaded.status(), opts.model);
  Graph& graph = *loaded->graph;
  if (opts.emit == EmitKind::kPlan) {
    // IR text whose weights were elided would give a plan that starts from zeros.
    for (const Value* v : graph.graph_values()) {
      if (v->role() == ValueRole::kInput || v->data() != nullptr) continue;
      return InvalidInput(
          "{}: {} '%{}' has no values (`<elided>` in the IR text); a plan from it would start "
          "from zeros. Dump the IR with its weights: a800c MODEL --emit=ir --print-weights -o "
          "FILE.a8ir (--print-weights also applies to --print-ir-after-all and --dump-dir)",
          opts.model, ValueRoleName(v->role()), v->name());
    }
    A8_RETURN_IF_ERROR(CheckTrainingRecord(graph, opts.model));
  }
  if (opts.config.training && graph.train_step) {
    return InvalidInput(
        "--loss: {} carries its own training definition (TrainingInfoProto); "
        "drop the training flags",
        opts.model);
  }
  if (opts.config.training || graph.train_step) WarnAboutMergedParameters(graph, aliases, warn);

  PassManagerOptions pm = opts.pm;
  pm.input_typed = loaded->typed;
  pm.config = &opts.config;
  std::vector<std::string> passes;
  if (opts.passes) {
    passes = *opts.passes;
  } else if (opts.emit == EmitKind::kPlan) {
    A8_ASSIGN_OR_RETURN(passes, PipelinePasses("plan"));
  } else {
    passes = DefaultCompilePipeline();
  }
  if (!opts.fuse) {
    for (const std::string& p : FusingPasses()) std::erase(passes, p);
  }
  A8_RETURN_IF_ERROR(RunPasses(graph, passes, pm));
  if (opts.note && graph.train_step && !graph.train_step->parameter_summary.empty()) {
    opts.note(graph.train_step->parameter_summary);
  }

  switch (opts.emit) {
    case EmitKind::kIr: {
      PrintOptions print;
      if (opts.pm.print_weights) print.max_inline_elements = -1;
      return WriteOutput(output, PrintIrToString(graph, print), stdout_stream);
    }
    case EmitKind::kOnnx: {
      auto bytes = ExportOnnxBytes(graph);
      if (!bytes.ok()) return WithSource(bytes.status(), graph.source);
      return WriteOutput(output, *bytes, stdout_stream);
    }
    case EmitKind::kPlan:
      break;
  }
  if (!graph.memory_plan) {
    return InvalidInput(
        "--emit=plan: the graph has no memory plan; the passes must end with "
        "schedule,plan-memory (or stop after them)");
  }
  LowerOptions lower;
  lower.model_name = fs::path(opts.model).filename().string();
  lower.model_hash = loaded->model_hash;
  lower.target = opts.target;
  lower.release_weights = true;  // the graph is not used after lowering
  lower.blob_in_pieces = true;   // the weights go from the graph's tensors to the file
  lower.config = &opts.config;
  auto plan = LowerToPlan(graph, lower);
  if (!plan.ok()) return WithSource(plan.status(), graph.source);
  if (output != "-") return WritePlanFile(*plan, output);  // atomic; handles devices and links
  A8_ASSIGN_OR_RETURN(std::string head, SerializePlanHead(*plan));
  std::vector<std::string_view> pieces = PlanBlobViews(*plan);
  pieces.insert(pieces.begin(), head);
  return WriteOutput(output, pieces, stdout_stream);
}

Status ListParameters(const CompileOptions& opts, std::ostream& os,
                      const std::function<void(const std::string&)>& warn) {
  std::vector<std::string> warnings;
  ImportOptions import_opts = opts.import;
  import_opts.warnings = &warnings;
  auto loaded = LoadGraph(opts.model, import_opts);
  for (const std::string& w : warnings) warn(w);
  if (!loaded.ok()) return WithSource(loaded.status(), opts.model);
  Graph& graph = *loaded->graph;
  std::vector<std::string> passes;
  for (const std::string& p : DefaultCompilePipeline()) {
    if (p == "build-training") break;
    // The parameters a training compile sees: the inference-only passes (fold-batchnorm) change
    // nothing there.
    const PassInfo* info = FindPass(p);
    if (info != nullptr && info->mode == PassMode::kInference) continue;
    passes.push_back(p);
  }
  PassManagerOptions pm;
  pm.input_typed = loaded->typed;
  A8_RETURN_IF_ERROR(RunPasses(graph, passes, pm));
  std::vector<const Value*> roots;
  const std::optional<TrainingConfig>& flags = opts.config.training;
  const std::string logits = flags ? flags->logits : "";
  for (const Value* v : graph.outputs()) {
    if (logits.empty() || v->name() == logits) roots.push_back(v);
  }
  if (roots.empty()) {
    return InvalidInput("--logits: the model has no output '{}'", logits);
  }
  const std::string freeze = flags ? flags->freeze : "";
  const std::string trainable = flags ? flags->trainable_regex : "";
  A8_ASSIGN_OR_RETURN(std::vector<ParamDecision> decisions,
                      ChooseParameters(graph, roots, freeze, trainable));
  os << ParameterTable(decisions) << ParameterSummary(decisions) << "\n";
  return Status::Ok();
}

void PrintPassList(std::ostream& os) {
  size_t width = 4;
  for (const PassInfo& p : RegisteredPasses()) width = std::max(width, p.name.size());
  os << fmt::format("{:<{}}  {:<11}  {:<9}  {}\n", "pass", width, "repeat", "applies",
                    "description");
  for (const PassInfo& p : RegisteredPasses()) {
    os << fmt::format("{:<{}}  {:<11}  {:<9}  {}\n", p.name, width, PassRepeatName(p.repeat),
                      PassModeName(p.mode), p.description);
  }
  os << "\npipelines:\n";
  for (const PipelineInfo& p : Pipelines()) {
    os << fmt::format("  {:<10}  {}  ({})\n", p.name, Join(p.passes, ","), p.description);
  }
}

void PrintOpList(std::ostream& os) {
  struct Row {
    std::string op, versions, canonical, gradient;
    const std::string* doc;
    std::string cuda;
  };
  std::vector<Row> rows;
  size_t op_width = 2, versions_width = 8;
  for (const OpDef& def : AllOps()) {
    Row row;
    row.op = def.domain.empty() ? def.name : def.domain + "." + def.name;
    for (int v : def.implemented) {
      if (!row.versions.empty()) row.versions += ',';
      row.versions += std::to_string(v);
    }
    row.canonical = std::to_string(def.canonical);
    const GradRule rule = FindGradRule(row.op);
    // "none": not differentiable, by a kNoGradient rule or by the table (GradDecision::kNone).
    row.gradient = rule == kNoGradient || (rule == nullptr && def.gradient == GradDecision::kNone)
                       ? "none"
                   : rule == nullptr ? "no"
                                     : "yes";
    row.doc = &def.doc;
    row.cuda = IsCatalogOp(row.op) ? "yes" : "no";
    op_width = std::max(op_width, row.op.size());
    versions_width = std::max(versions_width, row.versions.size());
    rows.push_back(std::move(row));
  }
  os << fmt::format("{:<{}}  {:<{}}  {:<9}  {:<8}  {:<4}  {}\n", "op", op_width, "versions",
                    versions_width, "canonical", "gradient", "cuda", "doc");
  for (const Row& r : rows) {
    os << fmt::format("{:<{}}  {:<{}}  {:<9}  {:<8}  {:<4}  {}\n", r.op, op_width, r.versions,
                      versions_width, r.canonical, r.gradient, r.cuda, *r.doc);
  }
}

void WarnAboutMergedParameters(const Graph& graph,
                               const std::map<std::string, std::vector<std::string>>& aliases,
                               const std::function<void(const std::string&)>& warn) {
  for (const auto& [name, names] : aliases) {
    const Value* v = graph.FindValue(name);
    if (v == nullptr || v->role() != ValueRole::kParameter) continue;
    warn(fmt::format(
        "initializer '{}' is also read as '{}' through Identity nodes: they are one tensor and "
        "train as one parameter. Exporters merge initializers of equal values (torch.onnx.export "
        "of an untrained model ties every LayerNorm weight this way); if they should train "
        "apart, give them different values before exporting",
        name, fmt::join(names, "', '")));
  }
}

}  // namespace a8

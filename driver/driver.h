// The library entry of the compiler: options -> load -> pipeline -> emit. `a800c` and
// `a800c-opt` are thin command lines over these functions, so both read models, run passes,
// dump and write outputs the same way.
//
// Guarantees:
// - Input: `.a8ir` is textual IR (ParseIr), anything else an ONNX model (`.onnxtxt` text,
//   `.onnx` binary). A missing file is `FILE: no such file`. The loaded graph is verified before
//   any pass runs.
// - Errors are Status values whose message starts with WHERE (the file, then the node or flag);
//   the code gives the exit status (2: bad input or flags, 1: a failed run).
// - Output: written atomically (a temporary file in the same folder, fsync, rename), so a
//   failed run never leaves a half-written file nor clobbers an existing one. `-` is stdout.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/version.h"  // VersionString, which the programs print
#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/onnx/importer.h"
#include "compiler/pass/pass_manager.h"

namespace a8 {

enum class EmitKind { kPlan, kOnnx, kIr };
// "plan", "onnx", "ir".
std::string_view EmitKindName(EmitKind e);
StatusOr<EmitKind> ParseEmitKind(std::string_view text);

// Parses one `--shape=NAME:D0xD1x...` value into `shapes` (dims >= 1; NAME may contain ':', the
// last one separates the dims). Errors name the flag and show the expected syntax.
Status ParseShapeFlag(const std::string& text, std::map<std::string, std::vector<int64_t>>* shapes);

// Parses `--batch=N` (an integer N >= 1).
StatusOr<int64_t> ParseBatchFlag(const std::string& text);

// Parses one `--dim=NAME=V` value into `dims` (V >= 1; NAME is the model's dim_param and may
// contain '=', the last one separates the size).
Status ParseDimFlag(const std::string& text, std::map<std::string, int64_t>* dims);

// Splits one `--bind=NAME=FILE.npy` value into the input name and the file (the first '='
// separates them); the caller reads the array (the compiler does not read .npy files).
StatusOr<std::pair<std::string, std::string>> SplitBindFlag(const std::string& text);

// Parses a comma-separated list of names ("a,b,c"); empty items are an error naming `flag`.
StatusOr<std::vector<std::string>> ParseNameList(const std::string& flag, const std::string& text);

// The pipeline flags both programs share, as the command line spells them.
struct PipelineFlags {
  bool print_ir_after_all = false;
  std::vector<std::string> print_ir_before;  // each item "P" or "P,Q,..." (repeatable flag)
  std::vector<std::string> print_ir_after;
  std::string dump_dir;
  bool pass_timing = false;
  std::string stop_after;
  std::optional<std::string> passes;  // "P,Q,..."
  bool verify_each = false;
  bool print_weights = false;  // --print-weights: --emit=ir and the dumps elide no initializer
};

// Turns the flags into manager options (dumps and timing to `dump_stream`) and the pass list
// (`default_passes` without --passes). Errors name the flag.
Status ApplyPipelineFlags(const PipelineFlags& flags,
                          const std::vector<std::string>& default_passes, std::ostream* dump_stream,
                          PassManagerOptions* pm, std::vector<std::string>* passes);

struct LoadedGraph {
  std::unique_ptr<Graph> graph;
  // Whether every value already has its type (IR text) or shape-inference must run first (ONNX).
  bool typed = false;
  // ContentHash of the model file's bytes, from the one read of them (Plan.model_hash).
  std::string model_hash;
};

// Reads and verifies `path` (see the header comment for the formats).
StatusOr<LoadedGraph> LoadGraph(const std::string& path, const ImportOptions& import_opts);

// Runs `passes` over `graph` with the dump/timing options in `pm` (errors start with the
// graph's source file).
Status RunPasses(Graph& graph, const std::vector<std::string>& passes, PassManagerOptions pm);

// Writes `bytes` to `path` atomically; `-` writes to `stdout_stream`.
Status WriteOutput(const std::string& path, std::string_view bytes, std::ostream& stdout_stream);

// Checks, before any work, that `path` can be an output file: its folder exists and it is not a
// folder itself ("-" always can).
Status CheckOutputPath(const std::string& path);

struct CompileOptions {
  std::string model;   // MODEL
  std::string output;  // -o: a path, "-" for stdout, "" for stdout with --emit=ir
  EmitKind emit = EmitKind::kPlan;
  ImportOptions import;  // --shape, --batch, --dim, --bind (warnings go to `warn`)
  std::optional<std::vector<std::string>> passes;  // --passes; nullopt: the default pipeline
  PassManagerOptions pm;  // dumps, timing, --stop-after, --verify-each; streams set by caller
  // The typed compile configuration: the training flags (--loss, --optimizer, the scaler, ...;
  // config.training nullopt: an inference plan, unless the model carries a TrainingInfoProto)
  // and the precision flags (--precision, --fp32-ops, ...; nullopt: fp32). Compile validates it
  // once (ValidateCompileConfig) and hands it to every pass and to lowering.
  CompileConfig config;
  // false (--no-fuse): FusingPasses() (fold-batchnorm, fuse, fuse-optimizer) are left out of
  // whichever pass list runs.
  bool fuse = true;
  // --target: "any" (default: a plan every backend runs), "cpu", "sm_80" or "sm_90"; recorded in
  // the plan, which a800c-run then runs only on a matching backend.
  std::string target = "any";
  // Training: receives the one-line parameter summary (ParameterSummary) once build-training ran.
  std::function<void(const std::string&)> note;
};

// Checks the whole compile configuration once, before any import: the training flags
// (CheckTrainingConfig: loss, optimizer, ranges, the loss scaler, data parallel) and the
// precision overrides (regexes, policy file). Errors name the flag (CLI.md).
Status ValidateCompileConfig(const CompileConfig& config);

// The whole `a800c MODEL` job. Warnings (import) go to `warn` as they are known; the result goes
// to the output file or `stdout_stream`.
Status Compile(const CompileOptions& opts, std::ostream& stdout_stream,
               const std::function<void(const std::string&)>& warn);

// `a800c --list-params MODEL`: runs the passes that precede build-training, then prints each
// float initializer with its decision (trained or constant) and the reason, then the summary.
// The loss roots are the --logits output (or every output when there are no training flags).
Status ListParameters(const CompileOptions& opts, std::ostream& os,
                      const std::function<void(const std::string&)>& warn);

// The `a800c --list-passes` / `--list-ops` tables.
void PrintPassList(std::ostream& os);
// The cuda column comes from the registry, not from the runtime: "yes" when the op has
// kernel-catalog signatures (compiler/plan/kernel_catalog.h IsCatalogOp), which every backend
// implements (OpRegistryTest checks the CPU and CUDA registries against the catalog).
void PrintOpList(std::ostream& os);
// Training: a warning for each parameter that Identity nodes also name (ImportOptions::
// identity_aliases): an exporter merged initializers of equal values, and they train as one.
void WarnAboutMergedParameters(const Graph& graph,
                               const std::map<std::string, std::vector<std::string>>& aliases,
                               const std::function<void(const std::string&)>& warn);

}  // namespace a8

// Runs a pipeline of passes by name, with the dump and timing options of CLI.md.
//
// Passes are registered once, in passes/passes.def (name, class, description, when it applies;
// passes/registry.h `RegisteredPasses()`); the caller hands that registry to the manager
// (PassManagerOptions::registry: the manager sits below the passes and does not know them), which
// looks passes up by name, runs them in order, and:
// - verifies the IR after each pass when `verify_each` is set (tests do);
// - prints `// -----// IR Dump Before|After PASS //----- //` banners and the IR to `dump_stream`
//   for --print-ir-after-all / --print-ir-before / --print-ir-after;
// - writes one numbered file per pass into `dump_dir` (`03-canonicalize.a8ir`);
// - stops after `stop_after`;
// - reports per-pass wall time and the pass's counters for --pass-timing.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/status.h"
#include "compiler/pass/pass.h"

namespace a8 {

// passes.def columns: whether the manager re-runs a pass until it reports no change, and which
// kind of graph it applies to.
enum class PassRepeat { kOnce, kFixedPoint };
enum class PassMode { kBoth, kTraining, kInference };
std::string_view PassRepeatName(PassRepeat r);  // "once", "fixed-point"
std::string_view PassModeName(PassMode m);      // "both", "training", "inference"

struct PassInfo {
  std::string name;         // "shape-inference"
  std::string description;  // one line for --list-passes
  std::function<std::unique_ptr<Pass>()> create;
  PassRepeat repeat = PassRepeat::kOnce;
  PassMode mode = PassMode::kBoth;
};

// The entry named `name` of `registry`, or null.
const PassInfo* FindPassIn(const std::vector<PassInfo>& registry, const std::string& name);

struct PassManagerOptions {
  // The passes AddPasses and the dump/stop options may name (passes/registry.h
  // RegisteredPasses() in the driver); null: none, only the objects given to AddPass.
  const std::vector<PassInfo>* registry = nullptr;
  bool verify_each = false;
  bool print_after_all = false;
  std::set<std::string> print_before;
  std::set<std::string> print_after;
  std::string dump_dir;      // empty: no files
  bool pass_timing = false;  // report to timing_stream at the end of Run
  std::string stop_after;    // empty: run all
  std::ostream* dump_stream = nullptr;    // where banners and dumps go (stderr in the driver)
  std::ostream* timing_stream = nullptr;  // where --pass-timing goes (stderr in the driver)
  // False for a graph whose intermediate types are not known yet (a freshly imported ONNX
  // model): verify_each then checks types only once `shape-inference` has run.
  bool input_typed = true;
  // Dumps print every initializer's values (--print-weights) instead of `<elided>` beyond 16
  // elements, so that a dump compiles to the same plan.
  bool print_weights = false;
  // The compile configuration every pass receives (Pass::SetConfig) before it runs; null leaves
  // each pass's own (an inference compile in fp32 unless the caller set one on a pass it added).
  const CompileConfig* config = nullptr;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions opts) : opts_(std::move(opts)) {}
  // Unknown names are an error listing the known passes.
  Status AddPasses(const std::vector<std::string>& names);
  // Adds a pass object the caller configured (a pass that needs options, or a test pass).
  void AddPass(std::string name, std::unique_ptr<Pass> pass,
               PassRepeat repeat = PassRepeat::kOnce);
  Status Run(Graph& g);
  const std::vector<std::string>& pass_names() const { return names_; }

 private:
  // How dumps print: `?` results until the graph is typed, weights per print_weights.
  PrintOptions DumpOptions(bool typed) const {
    PrintOptions p;
    p.types_known = typed;
    if (opts_.print_weights) p.max_inline_elements = -1;
    return p;
  }
  struct Entry {
    std::unique_ptr<Pass> pass;
    PassRepeat repeat;
  };
  const std::vector<PassInfo>& Registry() const;
  PassManagerOptions opts_;
  std::vector<std::string> names_;
  std::vector<Entry> passes_;  // parallel to names_
};

}  // namespace a8

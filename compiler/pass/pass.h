// The pass interface. A pass transforms a Graph in place, returns whether it changed anything,
// and counts what it did in `stats()` (shown by --pass-timing). It never prints to stdout;
// errors come back as a Status naming the node. What the compile asks for (precision, training
// flags) a pass reads from config(), which the PassManager hands it (PassManagerOptions::config);
// a pass never finds it on the graph.
#pragma once

#include <map>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/pass/compile_config.h"

namespace a8 {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual StatusOr<bool> Run(Graph& graph) = 0;
  // Counters such as "nodes-folded" -> 3, reset by the manager before each run.
  std::map<std::string, int64_t>& stats() { return stats_; }
  // The compile configuration `Run` reads (not owned; it outlives the run). Unset: an inference
  // compile in fp32.
  Pass& SetConfig(const CompileConfig* config) {
    config_ = config;
    return *this;
  }
  const CompileConfig& config() const {
    static const CompileConfig kNone;
    return config_ != nullptr ? *config_ : kNone;
  }

 protected:
  std::map<std::string, int64_t> stats_;
  const CompileConfig* config_ = nullptr;
};

// Declares `class NAME : public Pass` whose only member is Run (defined in the pass's .cc): the
// shape of every pass that keeps no options or state of its own.
#define A8_DECLARE_PASS(NAME)                  \
  class NAME : public Pass {                   \
   public:                                     \
    StatusOr<bool> Run(Graph& graph) override; \
  }

}  // namespace a8

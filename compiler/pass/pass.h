// The pass interface. A pass transforms a Graph in place, returns whether it changed anything,
// and counts what it did in `stats()` (shown by --pass-timing). It never prints to stdout;
// errors come back as a Status naming the node.
#pragma once

#include <map>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual StatusOr<bool> Run(Graph& graph) = 0;
  // Counters such as "nodes-folded" -> 3, reset by the manager before each run.
  std::map<std::string, int64_t>& stats() { return stats_; }

 protected:
  std::map<std::string, int64_t> stats_;
};

// Declares `class NAME : public Pass` whose only member is Run (defined in the pass's .cc): the
// shape of every pass that keeps no options or state of its own.
#define A8_DECLARE_PASS(NAME)                  \
  class NAME : public Pass {                   \
   public:                                     \
    StatusOr<bool> Run(Graph& graph) override; \
  }

}  // namespace a8

// The registry of passes, built from passes/passes.def: the one list of pass names, descriptions
// and columns that the driver hands to the PassManager (PassManagerOptions::registry), and that
// the pipelines and `a800c --list-passes` read.
#pragma once

#include <string>
#include <vector>

#include "compiler/pass/pass_manager.h"

namespace a8 {

// Every registered pass, in passes.def order.
const std::vector<PassInfo>& RegisteredPasses();
// FindPassIn(RegisteredPasses(), name): the pass named `name`, or null.
const PassInfo* FindPass(const std::string& name);

}  // namespace a8

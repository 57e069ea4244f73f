// Builds RegisteredPasses() from passes/passes.def: the one list of pass names, descriptions
// and columns that the manager, the pipelines and `a800c --list-passes` read.
#include "passes/registry.h"

#include <memory>
#include <string>
#include <vector>

// One include per pass in passes.def (a macro cannot generate an #include).
#include "passes/analysis/shape_inference.h"
#include "passes/autodiff/build_training.h"
#include "passes/autodiff/expand_gradient.h"
#include "passes/cleanup/canonicalize.h"
#include "passes/cleanup/cse.h"
#include "passes/cleanup/dce.h"
#include "passes/distributed/bucket_gradients.h"
#include "passes/fusion/fold_batchnorm.h"
#include "passes/fusion/fuse.h"
#include "passes/fusion/fuse_gelu.h"
#include "passes/fusion/fuse_optimizer.h"
#include "passes/memory/plan_memory.h"
#include "passes/memory/schedule.h"
#include "passes/mixed_precision/assign_precision.h"
#include "passes/mixed_precision/fold_casts.h"
#include "passes/mixed_precision/insert_casts.h"
#include "passes/mixed_precision/loss_scaling.h"
#include "passes/mixed_precision/pin_fp32.h"

namespace a8 {

const std::vector<PassInfo>& RegisteredPasses() {
  static const std::vector<PassInfo> kPasses = {
#define A8_PASS(Class, name, description, repeat, mode)                                            \
  PassInfo{name, description, []() -> std::unique_ptr<Pass> { return std::make_unique<Class>(); }, \
           PassRepeat::repeat, PassMode::mode},
#include "passes/passes.def"
  };
  return kPasses;
}

const PassInfo* FindPass(const std::string& name) { return FindPassIn(RegisteredPasses(), name); }

}  // namespace a8

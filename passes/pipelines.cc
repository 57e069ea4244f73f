#include "passes/pipelines.h"

#include <fmt/format.h>

namespace a8 {

const std::vector<PipelineInfo>& Pipelines() {
  static const std::vector<PipelineInfo> kPipelines = {
      {"default",
       "what `a800c MODEL --emit=ir|onnx` runs",
       {"shape-inference", "expand-gradient", "canonicalize", "fold-batchnorm", "fuse-gelu",
        "build-training", "assign-precision", "pin-fp32", "insert-casts", "fold-casts",
        "loss-scaling", "fuse", "bucket-gradients", "fuse-optimizer"}},
      {"cleanup",
       "the cleanup passes one by one",
       {"shape-inference", "canonicalize", "cse", "dce"}},
      {"plan",
       "what `a800c MODEL --emit=plan` runs before lowering",
       {"shape-inference", "expand-gradient", "canonicalize", "fold-batchnorm", "fuse-gelu",
        "build-training", "assign-precision", "pin-fp32", "insert-casts", "fold-casts",
        "loss-scaling", "fuse", "bucket-gradients", "fuse-optimizer", "schedule", "plan-memory"}},
  };
  return kPipelines;
}

StatusOr<std::vector<std::string>> PipelinePasses(const std::string& name) {
  std::string known;
  for (const PipelineInfo& p : Pipelines()) {
    if (p.name == name) return p.passes;
    known += known.empty() ? p.name : ", " + p.name;
  }
  return InvalidInput("unknown pipeline '{}' (known: {})", name, known);
}

const std::vector<std::string>& DefaultCompilePipeline() { return Pipelines().front().passes; }

const std::vector<std::string>& FusingPasses() {
  static const std::vector<std::string> kPasses = {"fold-batchnorm", "fuse", "fuse-optimizer"};
  return kPasses;
}

}  // namespace a8

// Named pipelines: the pass lists the driver runs. A pipeline is data (a list of names from
// passes.def), so `--passes=` can spell any of them out and tests can run a prefix of one.
//
// "default" is what `a800c MODEL` runs. It grows as the issues land (build-training,
// assign-precision, insert-casts, ...); today it is `shape-inference,canonicalize`.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/status.h"

namespace a8 {

struct PipelineInfo {
  std::string name;
  std::string description;
  std::vector<std::string> passes;  // names registered in passes.def, in order
};

// Every named pipeline; the first is the default compile pipeline.
const std::vector<PipelineInfo>& Pipelines();
// The passes of the pipeline `name`; unknown names are an error listing the known pipelines.
StatusOr<std::vector<std::string>> PipelinePasses(const std::string& name);
// The passes `a800c MODEL` runs when --passes is not given.
const std::vector<std::string>& DefaultCompilePipeline();
// The passes that merge ONNX nodes into fewer kernels (`fold-batchnorm`, `fuse`,
// `fuse-optimizer`): --no-fuse
// leaves them out (one kernel per node), and so does --emit=onnx (the model's own ops).
const std::vector<std::string>& FusingPasses();

}  // namespace a8

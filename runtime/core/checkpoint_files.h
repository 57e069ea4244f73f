// The files of a run's checkpoints, beside --checkpoint=DIR/NAME.safetensors:
//   DIR/NAME.safetensors          the latest checkpoint;
//   DIR/NAME.step-N.safetensors   step-numbered ones (--keep-checkpoints=K keeps the last K, and
//                                 with --keep-best also the one of the lowest eval loss);
//   DIR/.NAME*.tmp.XXXXXX         what a writer killed mid-write left (WriteFileAtomically):
//                                 removed at the next start.
// --resume=auto restores the newest of them that is valid (ResumeNewest).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "runtime/core/checkpoint.h"

namespace a8 {

// DIR/NAME.step-N.safetensors for `path` DIR/NAME.safetensors (a path without the
// .safetensors extension gets ".step-N" appended).
std::string StepCheckpointPath(const std::string& path, int64_t step);

// Removes the temporary files a killed writer of `path` or of its step-numbered checkpoints
// left in their folder; returns the paths removed.
StatusOr<std::vector<std::string>> RemoveStaleTempFiles(const std::string& path);

// A checkpoint file of a run, as its header says (tensors unread).
struct CheckpointFileInfo {
  std::string path;
  bool step_numbered = false;
  bool readable = false;  // the header parsed and holds a step
  int64_t step = -1;
  bool has_eval_loss = false;  // metadata "eval_loss": the run evaluated at this step
  double eval_loss = 0;
};
// `path` (when it exists) and its step-numbered checkpoints, newest first (unreadable last).
std::vector<CheckpointFileInfo> ListCheckpoints(const std::string& path);

// Removes the step-numbered checkpoints of `path` but the newest `keep` and, when `keep_best`,
// the one with the lowest eval loss. Returns the paths removed.
StatusOr<std::vector<std::string>> PruneCheckpoints(const std::string& path, int64_t keep,
                                                    bool keep_best);

// The lowest eval loss among the step-numbered checkpoints of `path`; false when none has one.
bool BestEvalLoss(const std::string& path, double* loss);

// Writes the checkpoint bytes `bytes` of step `step`: with `step_numbered`, to
// StepCheckpointPath and then the same file linked (else copied) to `path`, both atomically;
// otherwise to `path` alone.
Status WriteCheckpointFiles(const std::string& path, int64_t step, bool step_numbered,
                            const std::string& bytes);

// --resume=auto: restores the newest valid checkpoint of `path` (the folder's checkpoints,
// ListCheckpoints) into `ex`. A candidate that does not restore (torn, corrupt, non-finite,
// another plan) is skipped, with a warning in `warnings`. Returns the path restored, or "" when
// there is no checkpoint yet (a first start). When files exist and none restores, the error
// lists why each was refused.
struct AutoResumeResult {
  std::string path;
  CheckpointInfo info;
  std::vector<std::string> warnings;
};
StatusOr<AutoResumeResult> ResumeNewest(Executor& ex, const std::string& path,
                                        const RestoreOptions& options);

}  // namespace a8

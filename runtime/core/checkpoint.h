// Training checkpoints in the safetensors format, so Python's `safetensors` and plain numpy can
// read them.
//
// File layout (safetensors): u64 little-endian header length N, N bytes of JSON padded with
// spaces to a multiple of 8, then the tensor bytes. The JSON maps each tensor name to
// {"dtype": "F32"|"F16"|"BF16"|"F64"|"I64"|"I32"|"I8"|"U8"|"BOOL", "shape": [...],
// "data_offsets": [begin, end]} (offsets relative to the end of the header) and holds a
// "__metadata__" map of strings.
//
// An a800c checkpoint holds every PARAMETER and STATE buffer of a training plan under its buffer
// name: FP32 master weights, optimizer moments, the step counter, the control buffer, the loss
// scaler state. The data order and the dropout masks are functions of (seed, step), so the
// metadata's seed and step complete what a bit-exact resume needs. The metadata also records the
// model and plan hashes: resuming with a checkpoint of another plan is an error that says so.
// Tensors are laid out in name order and the JSON keys are sorted, so the same state always
// gives the same bytes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/ir/types.h"
#include "compiler/plan/plan.pb.h"
#include "runtime/core/executor.h"
#include "runtime/core/safetensors.h"

namespace a8 {

inline constexpr char kCheckpointFormat[] = "a800c-checkpoint";
// 2: every tensor and the metadata carry a CRC-32C (safetensors.h). Version 1 files (no
// checksums) are still read.
inline constexpr int kCheckpointFormatVersion = 2;

// What a checkpoint records besides the tensors.
struct CheckpointInfo {
  int64_t step = 0;
  uint64_t seed = 0;
  // Run settings the data order depends on ("shuffle", ...): stored as metadata strings.
  std::map<std::string, std::string> extra = {};
};

// The identity of a plan a checkpoint is bound to: "fnv1a64:<hex>" of its serialised message.
std::string PlanHash(const plan::Plan& plan);

// Writes every PARAMETER and STATE buffer of `ex` and `info` (info.step is replaced by
// ex.step()) to `path` atomically: a temporary file, fsync, rename.
Status SaveCheckpoint(const Executor& ex, const CheckpointInfo& info, const std::string& path);
StatusOr<std::string> SerializeCheckpoint(const Executor& ex, const CheckpointInfo& info);

struct RestoreOptions {
  // Accept NaN and Inf in parameters and optimizer state (a diverged run's checkpoint).
  bool allow_nonfinite = false;
};

// Reads `path`, checks it (the checksums of every tensor and of the metadata, then against the
// executor's plan: format, plan hash, the set of tensors, each dtype and shape; no NaN or Inf in
// a float tensor unless allowed) and only then overwrites the parameters and state and sets the
// step counter. Returns the recorded info. On an error the executor is unchanged.
StatusOr<CheckpointInfo> LoadCheckpoint(Executor& ex, const std::string& path,
                                        const RestoreOptions& options = {});
StatusOr<CheckpointInfo> RestoreCheckpoint(Executor& ex, std::string bytes,
                                           const std::string& source,
                                           const RestoreOptions& options = {});

// The checks of a checkpoint file that need no plan: safetensors layout, format and version,
// the checksums (required from version 2 on). Returns the parsed file.
StatusOr<SafetensorsFile> ParseCheckpointFile(std::string bytes, const std::string& source);

// NaN and Inf among a float tensor's elements (F32, F16, BF16, F64; 0 for other dtypes), and
// the index of the first (-1 when none).
struct NonFiniteCount {
  int64_t count = 0;
  int64_t first = -1;
};
NonFiniteCount CountNonFinite(const SafetensorsTensor& t);

}  // namespace a8

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

namespace a8 {

inline constexpr char kCheckpointFormat[] = "a800c-checkpoint";
inline constexpr int kCheckpointFormatVersion = 1;

// One tensor of a safetensors file: a view of bytes owned elsewhere.
struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::string_view data;
};

struct SafetensorsFile {
  // The whole file; every tensor's data views into it (shared, so that copies stay valid).
  std::shared_ptr<const std::string> bytes;
  std::vector<SafetensorsTensor> tensors;  // in file order of their data
  std::map<std::string, std::string> metadata;
};

// "F32", "BF16", ... (the safetensors dtype names); ParseSafetensorsDType is its inverse.
const char* SafetensorsDTypeName(DType dtype);
StatusOr<DType> ParseSafetensorsDType(std::string_view name);

// Serialises tensors (laid out in name order; names must be unique) with `metadata`.
StatusOr<std::string> SerializeSafetensors(const std::vector<SafetensorsTensor>& tensors,
                                           const std::map<std::string, std::string>& metadata);
// Parses and validates a whole file: header length, JSON, every entry's dtype, shape and
// offsets (inside the data, sized by dtype and shape, not overlapping, covering all of it).
// Errors are InvalidInput naming `source` and the tensor.
StatusOr<SafetensorsFile> ParseSafetensors(std::string bytes, const std::string& source);

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

// Reads `path`, checks it against the executor's plan (format, plan hash, the set of tensors,
// each dtype and shape) and only then overwrites the parameters and state and sets the step
// counter. Returns the recorded info.
StatusOr<CheckpointInfo> LoadCheckpoint(Executor& ex, const std::string& path);
StatusOr<CheckpointInfo> RestoreCheckpoint(Executor& ex, std::string bytes,
                                           const std::string& source);

}  // namespace a8

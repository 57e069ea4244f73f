// a800c-inspect CHECKPOINT.safetensors: what a training checkpoint holds, with its checksums
// verified (every tensor's CRC-32C and the metadata's) and the NaN/Inf of each float tensor
// counted.
#pragma once

#include <string>

#include "compiler/ir/status.h"
#include "runtime/inspect/inspect.h"

namespace a8 {

// Whether a800c-inspect reads `path` as a checkpoint: its name ends with .safetensors.
bool IsCheckpointPath(const std::string& path);

// Reads and verifies the checkpoint at `path`; a checksum mismatch is an InvalidInput error
// naming the tensor. Text or JSON ("schema_version": 1, deterministic); dot is an error.
StatusOr<std::string> InspectCheckpoint(const std::string& path, InspectFormat format);

}  // namespace a8

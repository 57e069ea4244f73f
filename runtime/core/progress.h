// How a training run shows its progress (a800c-run --progress=bar|lines|none).
#pragma once

#include <string>

#include "compiler/ir/status.h"

namespace a8 {

enum class ProgressMode { kBar, kLines, kNone };

// Whether the environment `env` (a null-terminated array of "NAME=VALUE", like `environ`) is
// that of a rank started by an MPI launcher: Open MPI (OMPI_COMM_WORLD_*), MPICH and Hydra
// (PMI_RANK, PMI_SIZE) or PMIx (PMIX_RANK). mpirun gives rank 0 a pseudo-terminal even when its
// own output goes to a file, so isatty says nothing there.
bool UnderMpiLauncher(char* const* env);

// `flag`: "bar", "lines", "none", or "" (not given): a bar when stdout is a terminal and the run
// is not under a launcher, plain lines otherwise.
StatusOr<ProgressMode> ChooseProgress(const std::string& flag, bool stdout_is_terminal,
                                      char* const* env);

}  // namespace a8

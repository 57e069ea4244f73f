// The files and folders a run writes, checked before the first step: a run that trains for an
// hour must not find out at the end that its checkpoint folder does not exist.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/status.h"

namespace a8 {

struct OutputPath {
  std::string flag;  // "--checkpoint": the WHERE of the error
  std::string path;  // "" = not requested, skipped
  bool is_folder = false;
};

// A file: its folder exists and is writable, and the path is not a folder (an existing file must
// be writable). A folder: an existing one must be a writable folder; a missing one is created by
// the run, so its nearest existing ancestor must be a writable folder. Errors are InvalidInput
// "FLAG PATH: WHAT".
Status CheckOutputPaths(const std::vector<OutputPath>& paths);

}  // namespace a8

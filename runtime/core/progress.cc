#include "runtime/core/progress.h"

#include <string_view>

namespace a8 {

bool UnderMpiLauncher(char* const* env) {
  if (env == nullptr) return false;
  for (char* const* e = env; *e != nullptr; ++e) {
    std::string_view var(*e);
    std::string_view name = var.substr(0, var.find('='));
    if (name.starts_with("OMPI_COMM_WORLD_") || name == "PMI_RANK" || name == "PMI_SIZE" ||
        name == "PMIX_RANK")
      return true;
  }
  return false;
}

StatusOr<ProgressMode> ChooseProgress(const std::string& flag, bool stdout_is_terminal,
                                      char* const* env) {
  if (flag == "bar") return ProgressMode::kBar;
  if (flag == "lines") return ProgressMode::kLines;
  if (flag == "none") return ProgressMode::kNone;
  if (!flag.empty()) return InvalidInput("--progress: '{}' is not one of bar, lines, none", flag);
  return stdout_is_terminal && !UnderMpiLauncher(env) ? ProgressMode::kBar : ProgressMode::kLines;
}

}  // namespace a8

// The version line every program prints for --version. A800C_VERSION and
// A800C_PLAN_FORMAT_VERSION come from the build (CMake target a8base).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace a8 {

// "a800c 0.1.0 (plan format 3)" for `program`.
inline std::string VersionString(std::string_view program) {
  return fmt::format("{} {} (plan format {})", program, A800C_VERSION, A800C_PLAN_FORMAT_VERSION);
}

}  // namespace a8

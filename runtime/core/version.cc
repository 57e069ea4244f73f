// The runtime library's version string, shared by a800c-run and a800c-inspect.
#include <string>

namespace a8 {
std::string RuntimeVersionString() {
  return std::string("a800c ") + A800C_VERSION + " (plan format " +
         std::to_string(A800C_PLAN_FORMAT_VERSION) + ")";
}
}  // namespace a8

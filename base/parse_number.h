// ParseNumber: the whole of a string as one number (std::from_chars: no sign prefix '+', no
// whitespace, no trailing characters), for the number-valued metadata a800c writes itself.
#pragma once

#include <charconv>
#include <string_view>
#include <system_error>

namespace a8 {

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && p == end && !text.empty();
}

}  // namespace a8

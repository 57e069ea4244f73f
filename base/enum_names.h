// One table names the values of an enum: the name function and the parser both read it, so a
// value and its spelling are written once (instead of a `switch` to name it and a second list to
// parse it back).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace a8 {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name `table` gives `value`; `fallback` for a value the table lacks.
template <typename E, size_t N>
constexpr std::string_view NameIn(const EnumName<E> (&table)[N], E value,
                                  std::string_view fallback) {
  for (const EnumName<E>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return fallback;
}

// The value `table` spells `name`; nullopt when none does.
template <typename E, size_t N>
constexpr std::optional<E> ValueIn(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

}  // namespace a8

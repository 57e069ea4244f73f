#include "compiler/support/hash.h"

#include <fmt/format.h>

// The header-only build of xxHash: no library to link, and XXH3 is inlined here.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace a8 {

std::string ContentHash(std::string_view bytes) {
  return fmt::format("xxh3:{:016x}", XXH3_64bits(bytes.data(), bytes.size()));
}

}  // namespace a8

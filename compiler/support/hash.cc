#include "compiler/support/hash.h"

#include <fmt/format.h>

// The header-only build of xxHash: no library to link, and XXH3 is inlined here.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace a8 {

std::string ContentHash(std::string_view bytes) {
  return fmt::format("xxh3:{:016x}", XXH3_64bits(bytes.data(), bytes.size()));
}

struct ContentHasher::State {
  XXH3_state_t xxh;
};

ContentHasher::ContentHasher() : state_(std::make_unique<State>()) {
  XXH3_64bits_reset(&state_->xxh);
}
ContentHasher::~ContentHasher() = default;

void ContentHasher::Update(std::string_view bytes) {
  XXH3_64bits_update(&state_->xxh, bytes.data(), bytes.size());
}

std::string ContentHasher::Finish() const {
  return fmt::format("xxh3:{:016x}", XXH3_64bits_digest(&state_->xxh));
}

}  // namespace a8

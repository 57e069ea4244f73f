// Content hashes at memory speed.
#pragma once

#include <string>
#include <string_view>

namespace a8 {

// "xxh3:<16 hex digits>": XXH3-64 (xxHash, Debian's libxxhash-dev) of `bytes`, seed 0. The
// identity of a model file in a plan (Plan.model_hash); about 10 GB/s, so hashing a model costs
// little next to reading it.
std::string ContentHash(std::string_view bytes);

}  // namespace a8

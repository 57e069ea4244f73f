// Content hashes at memory speed.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace a8 {

// "xxh3:<16 hex digits>": XXH3-64 (xxHash, Debian's libxxhash-dev) of `bytes`, seed 0. The
// identity of a model file in a plan (Plan.model_hash); about 10 GB/s, so hashing a model costs
// little next to reading it.
std::string ContentHash(std::string_view bytes);

// ContentHash of bytes that arrive in pieces (a file parsed as it is read):
// Update(a); Update(b); Finish() == ContentHash(a + b).
class ContentHasher {
 public:
  ContentHasher();
  ~ContentHasher();
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;
  void Update(std::string_view bytes);
  std::string Finish() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace a8

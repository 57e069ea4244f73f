// The bytes of a constant tensor (TensorData::bytes): owned, or a read-only view of memory that
// something else keeps alive, such as the mapped model file a weight was imported from. A view
// is what lets a weight go from the model file to the plan file without a copy in between
// (docs/ARCHITECTURE.md, "Import"); the first write through any mutable accessor copies the
// viewed bytes into owned storage first (copy on write), so code that fills or edits a tensor
// works on either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace a8 {

class TensorBytes {
 public:
  TensorBytes() = default;
  TensorBytes(std::vector<uint8_t> v) : owned_(std::move(v)) {}  // NOLINT: implicit, as a vector
  TensorBytes& operator=(std::vector<uint8_t> v) {
    Release();
    owned_ = std::move(v);
    return *this;
  }

  // `n` bytes at `p`, valid while `keep` lives (a mapping's owner); nothing is copied.
  static TensorBytes View(const uint8_t* p, size_t n, std::shared_ptr<const void> keep) {
    TensorBytes b;
    b.view_ = p;
    b.view_size_ = n;
    b.keep_ = std::move(keep);
    return b;
  }
  bool is_view() const { return view_ != nullptr; }

  // ---- reading (never copies)
  const uint8_t* data() const { return view_ != nullptr ? view_ : owned_.data(); }
  size_t size() const { return view_ != nullptr ? view_size_ : owned_.size(); }
  bool empty() const { return size() == 0; }
  const uint8_t* begin() const { return data(); }
  const uint8_t* end() const { return data() + size(); }
  uint8_t operator[](size_t i) const { return data()[i]; }
  operator std::span<const uint8_t>() const { return {data(), size()}; }  // NOLINT: implicit
  bool operator==(const TensorBytes& o) const {
    return size() == o.size() && (size() == 0 || std::memcmp(data(), o.data(), size()) == 0);
  }

  // ---- writing (a view is copied into owned storage first)
  uint8_t* data() { return Own().data(); }
  uint8_t* begin() { return data(); }
  uint8_t* end() { return data() + size(); }
  uint8_t& operator[](size_t i) { return Own()[i]; }
  void assign(size_t n, uint8_t v) {
    Release();
    owned_.assign(n, v);
  }
  template <typename It>
  void assign(It first, It last) {
    Release();
    owned_.assign(first, last);
  }
  void clear() {
    Release();
    owned_.clear();
  }

 private:
  std::vector<uint8_t>& Own() {
    if (view_ != nullptr) {
      owned_.assign(view_, view_ + view_size_);
      Release();
    }
    return owned_;
  }
  void Release() {
    view_ = nullptr;
    view_size_ = 0;
    keep_.reset();
  }

  std::vector<uint8_t> owned_;
  const uint8_t* view_ = nullptr;
  size_t view_size_ = 0;
  std::shared_ptr<const void> keep_;
};

}  // namespace a8

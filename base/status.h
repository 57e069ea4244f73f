// Status and StatusOr: errors are values. A Status carries a kind (bad user input vs. an internal
// failure, which decides the exit code: 2 vs. 1) and one message that already names WHERE (file,
// node, field) and WHAT.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace a8 {

enum class StatusCode {
  kOk = 0,
  kInvalidInput,   // the user's model, flags or files are wrong: exit 2
  kUnsupported,    // valid input that a800c does not support (yet): exit 2
  kInternal,       // a failed run or a bug: exit 1
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with a location ("model.onnx: " or "node 'Relu_3': ").
  Status WithContext(const std::string& where) const {
    if (ok()) return *this;
    return Status(code_, where + ": " + message_);
  }
  // The exit status CLI.md prescribes for this error.
  int ExitCode() const {
    return ok() ? 0 : (code_ == StatusCode::kInternal ? 1 : 2);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status InvalidInput(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidInput, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Unsupported(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kUnsupported, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Internal(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
}

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }
  StatusOr(T value) : value_(std::move(value)) {}

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace a8

#define A8_CONCAT_INNER(a, b) a##b
#define A8_CONCAT(a, b) A8_CONCAT_INNER(a, b)

// Returns early from the enclosing function when `expr` (a Status) is an error.
#define A8_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::a8::Status a8_status_ = (expr);         \
    if (!a8_status_.ok()) return a8_status_;  \
  } while (0)

// `A8_ASSIGN_OR_RETURN(auto x, F())`: unwraps a StatusOr or returns its error.
#define A8_ASSIGN_OR_RETURN(lhs, expr) \
  A8_ASSIGN_OR_RETURN_IMPL(A8_CONCAT(a8_statusor_, __LINE__), lhs, expr)
#define A8_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

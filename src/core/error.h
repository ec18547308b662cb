// tenzro core: error values.
//
// Expected failures are returned as values (Result<T>, see result.h), never
// thrown across a module boundary. The code tells the caller what to do next:
//   kCorruption        the source is bad: drop it, fetch elsewhere
//   kUnavailable       transient: retry, possibly on another peer
//   kResourceExhausted a budget or limit was hit
//   kNotFound          the named thing does not exist
//   kInvalidArgument   the caller passed something malformed
//   kIo                the operating system refused (message carries errno text)
//   kPermissionDenied  authentication / authorisation refused
//   kDeadlineExceeded  a timeout elapsed
//   kUnsupported       valid input this build cannot handle
//   kInternal          a bug: an invariant did not hold
// Messages name the file, field and offset that was wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace tenzro {

enum class ErrorCode : uint8_t {
  kInvalidArgument = 1,
  kNotFound,
  kCorruption,
  kUnavailable,
  kResourceExhausted,
  kIo,
  kPermissionDenied,
  kDeadlineExceeded,
  kUnsupported,
  kAlreadyExists,
  kInternal,
};

// Stable lower-case name of a code ("corruption", "not_found", ...), used in
// JSON error bodies and CLI output.
std::string_view ErrorCodeName(ErrorCode code);

// Process exit code for a CLI command that failed with `code` (documented in
// docs/cli.md): 2 invalid argument, 3 not found, 4 corruption, 5 unavailable,
// 6 resource exhausted, 7 I/O, 8 permission, 9 deadline, 10 unsupported, 1 other.
int ExitCodeFor(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<code name>: <message>"
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>".
  Error WithContext(std::string_view context) const;

  template <typename... Args>
  static Error InvalidArgument(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kInvalidArgument, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error NotFound(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kNotFound, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error Corruption(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kCorruption, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error Unavailable(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kUnavailable, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error ResourceExhausted(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kResourceExhausted, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error Io(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kIo, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error PermissionDenied(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kPermissionDenied, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error DeadlineExceeded(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kDeadlineExceeded, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error Unsupported(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kUnsupported, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error AlreadyExists(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kAlreadyExists, fmt::format(f, std::forward<Args>(a)...)};
  }
  template <typename... Args>
  static Error Internal(fmt::format_string<Args...> f, Args&&... a) {
    return {ErrorCode::kInternal, fmt::format(f, std::forward<Args>(a)...)};
  }
  // kIo with strerror(errno_value) appended: "<what>: <strerror>".
  static Error FromErrno(int errno_value, std::string_view what);

 private:
  ErrorCode code_;
  std::string message_;
};

}  // namespace tenzro

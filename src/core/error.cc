#include "core/error.h"

#include <cstring>

namespace tenzro {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kCorruption: return "corruption";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kResourceExhausted: return "resource_exhausted";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kPermissionDenied: return "permission_denied";
    case ErrorCode::kDeadlineExceeded: return "deadline_exceeded";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kAlreadyExists: return "already_exists";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

int ExitCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 2;
    case ErrorCode::kNotFound: return 3;
    case ErrorCode::kCorruption: return 4;
    case ErrorCode::kUnavailable: return 5;
    case ErrorCode::kResourceExhausted: return 6;
    case ErrorCode::kIo: return 7;
    case ErrorCode::kPermissionDenied: return 8;
    case ErrorCode::kDeadlineExceeded: return 9;
    case ErrorCode::kUnsupported: return 10;
    default: return 1;
  }
}

std::string Error::ToString() const {
  return fmt::format("{}: {}", ErrorCodeName(code_), message_);
}

Error Error::WithContext(std::string_view context) const {
  return Error(code_, fmt::format("{}: {}", context, message_));
}

Error Error::FromErrno(int errno_value, std::string_view what) {
  return Error(ErrorCode::kIo, fmt::format("{}: {}", what, std::strerror(errno_value)));
}

}  // namespace tenzro

#include "net/json_http.h"

#include <array>

namespace tenzro::net {

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 400;
    case ErrorCode::kPermissionDenied: return 401;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kAlreadyExists: return 409;
    case ErrorCode::kCorruption: return 422;
    case ErrorCode::kResourceExhausted: return 429;
    case ErrorCode::kUnsupported: return 501;
    case ErrorCode::kUnavailable: return 503;
    case ErrorCode::kDeadlineExceeded: return 504;
    case ErrorCode::kIo:
    case ErrorCode::kInternal: return 500;
  }
  return 500;
}

std::optional<ErrorCode> ErrorCodeFromName(std::string_view name) {
  for (int c = static_cast<int>(ErrorCode::kInvalidArgument); c <= static_cast<int>(ErrorCode::kInternal); ++c)
    if (ErrorCodeName(static_cast<ErrorCode>(c)) == name) return static_cast<ErrorCode>(c);
  return std::nullopt;
}

Response JsonResponse(const nlohmann::json& j, int status) {
  Response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.body.push_back('\n');
  return r;
}

Response ErrorResponse(const Error& e, int status) {
  nlohmann::json j = {{"error", {{"code", std::string(ErrorCodeName(e.code()))}, {"message", e.message()}}}};
  return JsonResponse(j, status);
}

Response ErrorResponse(const Error& e) { return ErrorResponse(e, HttpStatusFor(e.code())); }

Result<nlohmann::json> ParseJsonBody(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return Error::InvalidArgument("request body is empty, expected a JSON object");
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions only to learn where it failed.
    try {
      nlohmann::json again = nlohmann::json::parse(body);
      (void)again;
    } catch (const nlohmann::json::parse_error& e) {
      return Error::InvalidArgument("request body is not valid JSON: syntax error at byte {}", e.byte);
    } catch (const std::exception& e) {
      return Error::InvalidArgument("request body is not valid JSON: {}", e.what());
    }
    return Error::InvalidArgument("request body is not valid JSON");
  }
  return j;
}

static ErrorCode CodeForStatus(int status) {
  switch (status) {
    case 400: return ErrorCode::kInvalidArgument;
    case 401: case 403: return ErrorCode::kPermissionDenied;
    case 404: return ErrorCode::kNotFound;
    case 409: return ErrorCode::kAlreadyExists;
    case 413: case 429: return ErrorCode::kResourceExhausted;
    case 422: return ErrorCode::kCorruption;
    case 501: return ErrorCode::kUnsupported;
    case 502: case 503: return ErrorCode::kUnavailable;
    case 504: return ErrorCode::kDeadlineExceeded;
    default: return ErrorCode::kInternal;
  }
}

Error ErrorFromHttp(int status, std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_object()) {
    const nlohmann::json& e = j["error"];
    std::string code = e.value("code", std::string());
    std::string message = e.value("message", std::string());
    if (auto c = ErrorCodeFromName(code)) return Error(*c, message);
    return Error(CodeForStatus(status), message.empty() ? code : message);
  }
  std::string snippet(body.substr(0, 200));
  while (!snippet.empty() && (snippet.back() == '\n' || snippet.back() == '\r')) snippet.pop_back();
  return Error(CodeForStatus(status), fmt::format("HTTP {}{}{}", status, snippet.empty() ? "" : ": ", snippet));
}

Result<nlohmann::json> JsonFromHttp(int status, std::string_view body) {
  if (status < 200 || status > 299) return ErrorFromHttp(status, body);
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return nlohmann::json();
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) return Error::Corruption("HTTP {} response body is not valid JSON", status);
  return j;
}

}  // namespace tenzro::net

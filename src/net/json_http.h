// tenzro net: JSON bodies and the JSON error convention (docs/formats/admin-api.md).
//
// Every error a tenzro HTTP API returns has the body
//   {"error": {"code": "<ErrorCodeName>", "message": "<text>"}}
// with the HTTP status from HttpStatusFor(code). Clients turn it back into an
// Error with the same code (ErrorFromHttp), so a failure crosses the wire
// without losing its meaning.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/result.h"
#include "net/http_types.h"

namespace tenzro::net {

// invalid_argument 400, permission_denied 401, not_found 404,
// already_exists 409, corruption 422, resource_exhausted 429 (the server's own
// request-size limits answer 413 with the same code), unsupported 501,
// unavailable 503, deadline_exceeded 504, io and internal 500.
int HttpStatusFor(ErrorCode code);
// The code whose ErrorCodeName is `name`, or nullopt.
std::optional<ErrorCode> ErrorCodeFromName(std::string_view name);

// 200 (or `status`) with `application/json` body `j.dump()`.
Response JsonResponse(const nlohmann::json& j, int status = 200);
// The error body for `e` with status HttpStatusFor(e.code()).
Response ErrorResponse(const Error& e);
// The error body for `e` with an explicit status (e.g. 413 for a body limit).
Response ErrorResponse(const Error& e, int status);

// Parses a request body. Empty body -> kInvalidArgument "request body is
// empty, expected a JSON object"; malformed -> kInvalidArgument naming the
// byte offset ("request body is not valid JSON: ... at byte 12").
Result<nlohmann::json> ParseJsonBody(std::string_view body);

// Turns a non-2xx response into an Error: the JSON error body's code and
// message when present, else a code derived from the status with the first
// 200 bytes of the body as the message.
Error ErrorFromHttp(int status, std::string_view body);

// 2xx with a JSON body -> the parsed body (an empty body parses as null);
// anything else -> ErrorFromHttp. kCorruption if a 2xx body is not JSON.
Result<nlohmann::json> JsonFromHttp(int status, std::string_view body);

}  // namespace tenzro::net

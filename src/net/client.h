// tenzro net: a synchronous HTTP/1.1 client (CLI commands, node-to-node calls).
//
// Each HttpClient talks to one server and keeps one connection alive between
// requests (reconnecting once when a reused connection turned out to be
// closed). Every step is bounded: connect timeout, an overall deadline for
// buffered requests, an idle timeout per read for streamed ones, a header
// limit and a response body limit. Internally it runs its own private
// io_context on the calling thread, so it never touches the node's loop.
//
// Errors: connection refused/reset -> kUnavailable; a timeout ->
// kDeadlineExceeded; a body over the limit -> kResourceExhausted; a
// malformed response -> kCorruption. An HTTP error status is NOT an error
// here: the caller gets the status and body (see json_http.h JsonFromHttp).
//
// Thread-safety: none; use one HttpClient per thread — except Abort().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/bytes.h"
#include "core/result.h"
#include "net/http_types.h"
#include "net/url.h"

namespace tenzro::net {

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{5000};
  // Buffered requests: the whole exchange. Streamed: each write / each read.
  std::chrono::milliseconds timeout{60000};
  uint64_t max_response_bytes = 64ull << 20;  // buffered bodies (and error bodies)
  uint32_t max_header_bytes = 64u << 10;
};

struct ClientResponse {
  int status = 0;
  std::string content_type;
  Headers headers;   // names lower-cased
  std::string body;  // empty for a streamed 2xx body

  std::optional<std::string_view> Header(std::string_view name) const;
  bool ok() const { return status >= 200 && status <= 299; }
};

// Receives a streamed body piece by piece, in order. Returning an error stops
// the transfer (the connection is closed) and SendStreaming returns it.
using BodySink = std::function<Result<void>(ByteSpan piece)>;

class HttpClient {
 public:
  explicit HttpClient(Endpoint server, ClientOptions options = {});
  ~HttpClient();
  HttpClient(HttpClient&&) noexcept;
  HttpClient& operator=(HttpClient&&) noexcept;

  // Adds "Authorization: Bearer <token>" to every request ("" = none).
  void SetBearerToken(std::string token);
  const Endpoint& server() const;

  // Sends a request and buffers the whole response body (at most
  // max_response_bytes). `content_type` is sent only with a non-empty body.
  Result<ClientResponse> Send(std::string_view method, std::string_view target,
                              std::string_view body = {}, std::string_view content_type = "application/json",
                              const Headers& extra = {});

  // Like Send, but a 2xx body is handed to `sink` as it arrives (never held
  // whole; at most `max_stream_bytes` are accepted, else kResourceExhausted);
  // a non-2xx body is buffered into the returned response as with Send.
  Result<ClientResponse> SendStreaming(std::string_view method, std::string_view target,
                                       std::string_view body, std::string_view content_type,
                                       const Headers& extra, const BodySink& sink,
                                       uint64_t max_stream_bytes = UINT64_MAX);

  // Closes the kept-alive connection, if any.
  void Close();

  // From any thread: ends the request in progress on the owning thread (it
  // fails kUnavailable, "operation canceled") or, when none is, the next
  // one. A client that was aborted is for throwing away, not for reuse.
  void Abort();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenzro::net

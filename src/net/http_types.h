// tenzro net: the request/response values handlers see.
//
// These types carry no Boost.Beast types, so a module that registers routes
// includes only this header and router.h (Beast is compiled once, in
// server.cc / client.cc).
//
// A handler answers with a Response: either a whole body in memory, or a
// streamed body produced piece by piece by a BodyProducer (sent with a known
// Content-Length when `content_length` is set, else with chunked
// transfer-encoding). Asynchronous handlers hold a Responder and call Send()
// exactly once, from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace tenzro::net {

// (name, value) pairs. Request header names are lower-cased by the server.
using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;       // upper case: "GET", "POST", ...
  std::string target;       // raw request target: "/v1/jobs/ab12?x=1"
  std::string path;         // target before '?', not percent-decoded
  std::string query;        // target after '?', without it ("" if none)
  Headers headers;          // names lower-cased
  std::string body;
  std::string remote;       // peer "addr:port"
  // For a prefix route ("/v1/jobs/"), the part of `path` after the prefix
  // ("ab12"); empty for exact routes. Set by the Router.
  std::string route_suffix;

  // Value of header `name` (case-insensitive), or nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
  // Percent-decoded value of query parameter `key`, or nullopt if absent or
  // undecodable.
  std::optional<std::string> QueryParam(std::string_view key) const;
};

// Fills `buf` with the next piece of a streamed body. Returns the number of
// bytes written (> 0), 0 at the end of the body, or an error (the server then
// aborts the connection so the client sees a truncated body, never a short
// body that looks complete). Called sequentially, never concurrently, on a
// worker-pool thread when the server has one (else on the loop thread).
using BodyProducer = std::function<Result<size_t>(std::span<uint8_t> buf)>;

struct Response {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;                       // ignored when `producer` is set
  Headers headers;                        // extra headers
  BodyProducer producer;                  // streamed body, optional
  std::optional<uint64_t> content_length; // with `producer`: exact total, else chunked

  static Response Text(int status, std::string body);
  static Response Stream(std::string content_type, BodyProducer producer,
                         std::optional<uint64_t> content_length = std::nullopt);
};

// Completes one request. Copyable; all copies share one state. Send() may be
// called from any thread; only the first call counts. If every copy is
// destroyed without Send(), a 500 "handler dropped the request" is sent, so a
// forgotten path can't hang the client.
class Responder {
 public:
  using Deliver = std::function<void(Response)>;
  // `deliver` is invoked at most once (by Send or by the drop path).
  explicit Responder(Deliver deliver);
  void Send(Response r) const;
  bool sent() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tenzro::net

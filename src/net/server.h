// tenzro net: an HTTP/1.1 server on a boost::asio::io_context.
//
// Threads: the io_context is run by exactly one thread, the loop thread. It
// owns the acceptor, every connection, their timers and buffers, and calls
// Router::Dispatch. Handlers that need CPU or blocking I/O hand work to a
// ThreadPool (Router::AddOnPool) and answer through a Responder, which posts
// the response back to the loop; streamed bodies are produced on
// `ServerOptions::producer_pool` when set. No other thread touches a
// connection.
//
// Per connection: keep-alive, a header size limit (431), a body size limit
// (413; the connection is then closed because the body is left unread), a
// read timeout covering each whole request, a write timeout per write, and
// `Expect: 100-continue` support. Stop() is graceful: the listener closes,
// idle connections close, busy ones finish their current response first.
//
// Admission (docs/security.md), all decided before any work is done for the
// peer:
//  * at accept: at most `max_connections` open connections, and at most
//    `max_connections_per_host` from one IP address; a connection past either
//    cap is answered a canned 503 with Retry-After and closed, its request
//    never read;
//  * after the request head, before the body: `admit` may refuse (e.g. a
//    rate limit: 429) or lower the body limit for this route; a declared
//    Content-Length over the limit answers 413 at once; the body's bytes
//    (declared, or the limit when chunked) are reserved from
//    `max_inflight_body_bytes`, shared by every connection of the listener,
//    until the response is written: past it, 503 with Retry-After. A refused
//    body is never read (`Expect: 100-continue` clients never send it) and
//    the connection closes after the answer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/thread_pool.h"
#include "net/http_types.h"
#include "net/router.h"
#include "net/url.h"

namespace boost::asio {
class io_context;
}

namespace tenzro::net {

// What `ServerOptions::admit` sees of a request before its body is read.
struct RequestHead {
  std::string_view method;
  std::string_view path;    // target before '?'
  std::string_view remote;  // peer "addr:port"
  std::optional<uint64_t> content_length;  // nullopt: chunked or no body
};

// `admit`'s answer: `refuse` is sent instead of reading the body; otherwise
// the body may be at most `max_body_bytes` (0: the listener's limit; a larger
// value is clamped to it).
struct Admission {
  std::optional<Response> refuse;
  uint64_t max_body_bytes = 0;
};

struct ServerOptions {
  std::string name = "http";                       // for log lines
  uint64_t max_body_bytes = 64ull << 20;           // larger request bodies answer 413
  uint32_t max_header_bytes = 16u << 10;           // larger header blocks answer 431
  std::chrono::milliseconds read_timeout{30000};   // idle keep-alive wait + reading one request
  std::chrono::milliseconds write_timeout{60000};  // each write of a response (or piece)
  size_t stream_chunk_bytes = 256u << 10;          // buffer handed to a BodyProducer
  ThreadPool* producer_pool = nullptr;             // runs BodyProducers; null = loop thread
  size_t max_connections = 1024;                   // open connections, all peers
  size_t max_connections_per_host = 64;            // open connections from one IP address
  uint64_t max_inflight_body_bytes = 256ull << 20; // request bodies being read or handled
  // Runs on the loop thread after the request head, before the body is read
  // (see the file comment). Must be cheap; null admits everything.
  std::function<Admission(const RequestHead&)> admit;
  // Runs on the loop thread before routing; a returned Response is sent
  // instead of dispatching (used for the admin API's bearer-token check).
  std::function<std::optional<Response>(const Request&)> filter;
};

class HttpServer {
 public:
  // REQUIRES: `router` (and producer_pool) outlive every connection; i.e.
  // stop the io_context and join the pools before destroying them.
  HttpServer(boost::asio::io_context& ioc, const Router* router, ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `ep` (port 0 = any free port) and starts accepting once the
  // io_context runs. kInvalidArgument for an unresolvable host, kIo when the
  // bind fails (the message names the address and errno text).
  // REQUIRES: called on the loop thread or before the loop runs; once.
  Result<void> Listen(const Endpoint& ep);
  // The bound address (with the real port). Valid after Listen().
  Endpoint endpoint() const;

  // Graceful stop (see file comment). Loop thread only; idempotent.
  void Stop();
  // Open connections. Any thread.
  size_t active_connections() const;
  // Request body bytes reserved now (admission). Any thread.
  uint64_t inflight_body_bytes() const;
  // Connections refused at accept / requests refused before their body, so far. Any thread.
  uint64_t refused_connections() const;
  uint64_t refused_requests() const;

  struct State;  // shared with connections; defined in server.cc

 private:
  std::shared_ptr<State> state_;
};

}  // namespace tenzro::net

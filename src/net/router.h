// tenzro net: method + path routing for the HTTP server.
//
// Patterns are exact ("/v1/jobs") or prefix ("/v1/jobs/", "/blobs/": any
// pattern ending in '/' matches every path that starts with it, and the rest
// of the path is handed to the handler as Request::route_suffix). An exact
// match wins over a prefix match; among prefixes the longest wins. A path that
// matches with another method answers 405, no match answers 404 (JSON errors).
//
// Three handler shapes:
//   Add        Response(const Request&)            runs on the loop thread:
//                                                   must be quick, never block
//   AddAsync   void(shared_ptr<const Request>, Responder)
//                                                   called on the loop thread;
//                                                   finishes later, from any thread
//   AddOnPool  Response(const Request&)            runs on a worker pool; the
//                                                   response is posted back
// Thread-safety: register routes before the server starts (Add* are not
// synchronised with Dispatch); Dispatch is then safe from one thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"
#include "net/http_types.h"

namespace tenzro::net {

using SyncHandler = std::function<Response(const Request&)>;
using AsyncHandler = std::function<void(std::shared_ptr<const Request>, Responder)>;

class Router {
 public:
  // Registers `handler` for `method` ("GET", "POST", ...) and `pattern`.
  // Registering the same method+pattern twice replaces the first.
  void Add(std::string method, std::string pattern, SyncHandler handler);
  void AddAsync(std::string method, std::string pattern, AsyncHandler handler);
  // REQUIRES: `pool` outlives the router's server.
  void AddOnPool(std::string method, std::string pattern, ThreadPool* pool, SyncHandler handler);

  // Finds the route for `req` (sets req->route_suffix) and runs it; answers
  // 404/405 itself. A handler that throws answers 500 (exceptions never reach
  // the loop).
  void Dispatch(std::shared_ptr<Request> req, Responder responder) const;

  // "METHOD pattern" of every route, for diagnostics.
  std::vector<std::string> Describe() const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    bool prefix;
    AsyncHandler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace tenzro::net

#include "net/router.h"

#include <exception>

#include <spdlog/spdlog.h>

#include "net/json_http.h"

namespace tenzro::net {

void Router::AddAsync(std::string method, std::string pattern, AsyncHandler handler) {
  bool prefix = !pattern.empty() && pattern.back() == '/';
  for (Route& r : routes_) {
    if (r.method == method && r.pattern == pattern) {
      r.handler = std::move(handler);
      return;
    }
  }
  routes_.push_back(Route{std::move(method), std::move(pattern), prefix, std::move(handler)});
}

void Router::Add(std::string method, std::string pattern, SyncHandler handler) {
  AddAsync(std::move(method), std::move(pattern),
           [h = std::move(handler)](std::shared_ptr<const Request> req, Responder resp) {
             resp.Send(h(*req));
           });
}

void Router::AddOnPool(std::string method, std::string pattern, ThreadPool* pool, SyncHandler handler) {
  AddAsync(std::move(method), std::move(pattern),
           [pool, h = std::move(handler)](std::shared_ptr<const Request> req, Responder resp) {
             bool queued = pool->Submit([h, req, resp] {
               try {
                 resp.Send(h(*req));
               } catch (const std::exception& e) {
                 spdlog::error("handler for {} {} threw: {}", req->method, req->path, e.what());
                 resp.Send(ErrorResponse(Error::Internal("handler threw: {}", e.what())));
               }
             });
             if (!queued) resp.Send(ErrorResponse(Error::Unavailable("server is shutting down")));
           });
}

void Router::Dispatch(std::shared_ptr<Request> req, Responder responder) const {
  const Route* best = nullptr;
  bool path_matched = false;
  for (const Route& r : routes_) {
    bool match = r.prefix ? req->path.starts_with(r.pattern) : req->path == r.pattern;
    if (!match) continue;
    path_matched = true;
    if (r.method != req->method) continue;
    if (!best || (best->prefix && !r.prefix) ||
        (best->prefix == r.prefix && r.pattern.size() > best->pattern.size()))
      best = &r;
  }
  if (!best) {
    if (path_matched)
      responder.Send(ErrorResponse(Error::InvalidArgument("method {} is not allowed on {}", req->method, req->path), 405));
    else
      responder.Send(ErrorResponse(Error::NotFound("no route for {} {}", req->method, req->path)));
    return;
  }
  req->route_suffix = best->prefix ? req->path.substr(best->pattern.size()) : std::string();
  try {
    best->handler(std::move(req), responder);
  } catch (const std::exception& e) {
    spdlog::error("handler for {} threw: {}", best->pattern, e.what());
    responder.Send(ErrorResponse(Error::Internal("handler threw: {}", e.what())));
  }
}

std::vector<std::string> Router::Describe() const {
  std::vector<std::string> out;
  for (const Route& r : routes_) out.push_back(r.method + " " + r.pattern);
  return out;
}

}  // namespace tenzro::net
